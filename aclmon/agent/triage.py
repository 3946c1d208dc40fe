"""Live triage: each exception joined with what arrives after it, then one Triage event.

The exception callback tells the device, stream, task, error code and the
failing operator's tensors at once; the rest of the story comes later and from
elsewhere: the runtime's device error lines reach the plog (the agent's plog
tail feeds every entry here, whatever its level), the exception dump is written
after them. So each captured exception waits here, with the place of each of
its tensors in the job's memory taken at capture time (before the job frees
anything in its cleanup; a failed copy's two ends, which only its device lines
name, are judged against the table as it was at the exception), until

* its device error lines have been read and, if they name an exception dump
  (or one is expected: ``NPU_COLLECT_PATH`` or ``ASCEND_DUMP_SCENE`` is set),
  that dump has been found or ``DUMP_WAIT_S`` has passed; or
* ``DEADLINE_S`` has passed (no lines: a runtime that logs to stdout, a
  process with no plog), or the agent is closing;

and is then triaged (:func:`aclmon.dump.triage.triage`) and published as a
:class:`~aclmon.events.Triage` event. Where the dump was found, the
single-operator re-run is written beside it (``…/extra-info/aclmon-repro/``),
where CANN already writes its own debug data.

Everything runs on the agent's control thread except :meth:`exception_captured`
(the runtime's callback thread: a few bisects and one deque append).
"""

from __future__ import annotations

import collections
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aclmon.dump.allocations import AddressFinding, AllocationTable
from aclmon.dump.device_errors import DeviceError, DeviceErrorReader
from aclmon.dump.triage import ExceptionFacts, TensorFacts, address_findings, triage
from aclmon.errors import AclmonError
from aclmon.events import AclException, Triage

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext
    from aclmon.dump.plog import PlogEntry

#: how long an exception waits for its device lines, and then for its dump
DEADLINE_S = 5.0
DUMP_WAIT_S = 2.0
#: exceptions waiting at most (more are triaged at once with what there is)
MAX_PENDING = 256
#: device errors remembered from the plog
MAX_ERRORS = 256
#: entries of one exception dump directory looked at, at most
MAX_DUMP_ENTRIES = 10_000
REPRO_DIR = "aclmon-repro"


@dataclass
class _Pending:
    event: AclException
    facts: ExceptionFacts
    findings: list[AddressFinding]
    launch: dict[str, Any]  # the failing launch and those around it (launches.py)
    captured: float  # time.monotonic()


class TriageJoiner:
    """See the module docstring."""

    def __init__(
        self, ctx: AgentContext, table: AllocationTable, environ: dict[str, str] | None = None
    ) -> None:
        self.ctx = ctx
        self.table = table
        self.environ = dict(os.environ if environ is None else environ)
        self.reader = DeviceErrorReader(limit=MAX_ERRORS)
        self.pending: collections.deque[_Pending] = collections.deque()
        self.published = 0
        #: dump directories the job's acl.json names (the agent adds them as it reads it)
        self.dump_roots: list[str] = []

    # ------------------------------------------------------------ the callback thread
    def exception_captured(self, event: AclException, launch: dict[str, Any]) -> None:
        tensors = tuple(
            TensorFacts(role, index, desc.name, desc.address, desc.size)
            for role, descs in (("input", event.inputs), ("output", event.outputs))
            for index, desc in enumerate(descs)
        )
        facts = ExceptionFacts(
            event.device_id, event.stream_id, event.task_id, event.error_code,
            event.op_name, event.op_type, tensors, event.ts_ns,
        )  # fmt: skip
        findings = address_findings(facts, None, self.table)
        if len(self.pending) >= MAX_PENDING:
            return  # the control thread is far behind: this one goes untriaged (counted)
        self.pending.append(_Pending(event, facts, findings, launch, time.monotonic()))

    # ------------------------------------------------------------ the control thread
    def plog_entry(self, entry: PlogEntry) -> None:
        self.reader.feed(entry.text, entry.logged_ns)

    def poll(self, final: bool = False) -> int:
        """Triage the exceptions whose evidence is in (all of them when ``final``);
        returns how many were published."""
        now = time.monotonic()
        waiting: list[_Pending] = []
        done = 0
        while self.pending:
            item = self.pending.popleft()
            facts = item.facts
            error = self.reader.find(facts.device_id, facts.stream_id, facts.task_id, facts.op_name)
            dump = self._dump_of(facts, error)
            waited = now - item.captured
            ready = (
                final
                or waited >= DEADLINE_S
                or (
                    error is not None
                    and (
                        dump is not None or not self._dump_expected(error) or waited >= DUMP_WAIT_S
                    )
                )
            )
            if not ready:
                waiting.append(item)
                continue
            self._publish(item, error, dump)
            done += 1
        self.pending.extendleft(reversed(waiting))
        return done

    def _dump_expected(self, error: DeviceError) -> bool:
        if error.copy is not None and not error.dump_file:
            return False  # a copy has no operator: no exception dump is written for it
        return bool(
            error.dump_file
            or self.environ.get("NPU_COLLECT_PATH")
            or self.environ.get("ASCEND_DUMP_SCENE")
        )

    def _dump_of(self, facts: ExceptionFacts, error: DeviceError | None) -> Path | None:
        """The exception dump of this failure, once it is on disk: the file the
        device lines name, else one named after the operator and task in the
        directories CANN writes them to."""
        if error is not None and error.dump_file:
            path = Path(error.dump_file)
            return path if path.is_file() else None
        if not facts.op_name or facts.device_id < 0:
            return None
        from aclmon.dump.naming import parse_dump_name
        from aclmon.dump.summary import EXCEPTION_PREFIX

        wanted = facts.op_name.replace("/", "_")
        for base in self._dump_bases():
            directory = base / "extra-info" / "data-dump" / str(facts.device_id)
            try:
                with os.scandir(directory) as entries:
                    for count, entry in enumerate(entries):
                        if count >= MAX_DUMP_ENTRIES:
                            break
                        if not entry.name.startswith(EXCEPTION_PREFIX):
                            continue
                        name = parse_dump_name(entry.name)
                        if (
                            name is not None
                            and name.task_id == facts.task_id
                            and name.op_name in (wanted, facts.op_name)
                        ):
                            return Path(entry.path)
            except OSError:
                continue
        return None

    def _dump_bases(self) -> list[Path]:
        """Where CANN writes exception dumps: NPU_COLLECT_PATH, ASCEND_WORK_PATH, the
        acl.json dump_path the agent watches, the job's working directory."""
        bases = [self.environ.get("NPU_COLLECT_PATH", ""), self.environ.get("ASCEND_WORK_PATH", "")]
        bases.extend([*self.dump_roots, os.getcwd()])
        return [Path(b) for b in dict.fromkeys(b for b in bases if b)]

    def _publish(self, item: _Pending, error: DeviceError | None, dump_path: Path | None) -> None:
        from aclmon.dump.reader import read_dump
        from aclmon.dump.repro import write_repro

        notes: list[str] = []
        dump: Any = None
        if dump_path is not None:
            try:
                dump = read_dump(dump_path)
            except AclmonError as exc:
                notes.append(f"the exception dump cannot be read: {exc}")
        facts = item.facts
        findings = item.findings
        if not findings and error is not None and error.copy is not None:
            # A failed copy's addresses come with its device lines, not with the
            # exception: judged now, against the table as it was at the exception.
            findings = address_findings(facts, None, self.table, error)
        result = triage(
            facts, error, dump, None, dump_path=str(dump_path or ""), notes=notes,
            findings=findings,
        )  # fmt: skip
        if dump is not None and dump_path is not None and result.op_type:
            try:
                script = write_repro(
                    dump_path.parent.parent.parent / REPRO_DIR, dump, op_type=result.op_type,
                    op_name=result.op_name, task_id=facts.task_id, device_id=facts.device_id,
                    verdict=result.verdict,
                )  # fmt: skip
                result.repro = str(script)
            except AclmonError as exc:
                result.notes.append(f"no single-operator re-run: {exc}")
        event = item.event
        summary = result.to_dict()
        summary["launch"] = item.launch
        self.ctx.emit(Triage, event.device_id, event.stream_id, event.task_id, event.ts_ns, summary)
        self.published += 1
