"""A job's CANN log entries as the events its agent would have sent.

``aclmon watch`` has no agent inside the job: what the runtime tells is in the
job's plog, parsed by :class:`aclmon.dump.plog.PlogParser` (the parser of the
agent's plog tail and of the Logs view). :class:`PlogEvents` turns its entries
into events:

* each entry of level WARNING or above is a :class:`~aclmon.events.LogLine`;
* an ERROR entry that says a call failed with an ACL code (``aclrtSynchronizeStream:
  … failed, …, result = 507015``, ``… execute failed, error code is 507018``,
  ``wait for compute device to finish failed, runtime result = 507035``) is a
  :class:`~aclmon.events.CallFailed` (the API named by its C name, as pyACL names
  it where it is an ``acl*`` call: ``aclrtSynchronizeStream`` ->
  ``rt.synchronize_stream``);
* the device error lines of one failed task
  (:mod:`aclmon.dump.device_errors`, the triage's parser) are one
  :class:`~aclmon.events.AclException` with the device, stream, task, operator
  and ACL code they name, and one :class:`~aclmon.events.Triage` (as ``aclmon
  triage`` makes it offline: no allocation table), once the task's lines have
  stopped coming for ``SETTLE_S`` (the runtime writes them over several
  entries, the exception dump after them).

Overflows are not log lines: they are the overflow dumps a dump directory
holds, and failed calls with an overflow code (207003), which the views count as
overflows. Nothing here raises on any text; everything kept is bounded.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aclmon import events as ev
from aclmon.dump.device_errors import DeviceError, DeviceErrorReader
from aclmon.dump.plog import PlogEntry, at_least
from aclmon.events import optypes

#: seconds without a new line about a failed task before it is published
SETTLE_S = 1.5
#: failed tasks remembered (published or not), op types learned from the log
MAX_ERRORS = 256
MAX_OP_TYPES = 4096
#: characters of a failed call's message kept
MAX_MESSAGE = 2000

#: "<thread id> <function>:" at the start of an entry's text (after ``[file:line]``)
_THREAD_FUNCTION = re.compile(r"\s*(\d{1,10})\s+([A-Za-z_][\w:~]*):\s*")
#: the ACL code of a failed call: "result = N", "runtime result = N", "error code is N",
#: "error code = N", "error code:N", "ret = N"
_FAILED_CODE = re.compile(
    r"\bfailed\b.*?\b(?:result|error code|errcode|ret)\s*(?:=|:|is)\s*\[?(\d{6})\b",
    re.IGNORECASE | re.DOTALL,
)
#: a C API name: aclrtX, aclmdlX, aclopX, aclprofX, acldvppX, aclnnX, aclX, rtX
_C_API = re.compile(r"\b((?:acl(?:rt|mdl|op|prof|dvpp|nn)?|rt)[A-Z]\w{1,80})")
_PYACL_MODULES = {"aclrt": "rt", "aclmdl": "mdl", "aclop": "op", "aclprof": "prof"}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def pyacl_name(c_name: str) -> str:
    """``aclrtSynchronizeStream`` -> ``rt.synchronize_stream`` (as pyACL names the
    call); a name of another family (``aclnnAdd``, ``rtStreamSynchronize``) as is."""
    for prefix, module in _PYACL_MODULES.items():
        rest = c_name[len(prefix) :]
        if c_name.startswith(prefix) and rest[:1].isupper():
            return f"{module}.{_CAMEL.sub('_', rest).lower()}"
    return c_name


def failed_call(entry: PlogEntry) -> tuple[str, int, str, int] | None:
    """``(api, code, message, thread id)`` when ``entry`` says a call failed with an
    ACL code (an ERROR entry only), else None."""
    if entry.level != "error":
        return None
    head = entry.text[:MAX_MESSAGE]
    found = _FAILED_CODE.search(head)
    if found is None:
        return None
    code = int(found.group(1))
    if not 100000 <= code < 600000:
        return None
    thread_id = 0
    function = ""
    prefix = _THREAD_FUNCTION.match(head)
    if prefix is not None:
        thread_id = int(prefix.group(1))
        function = prefix.group(2)
        head = head[prefix.end() :]
    named = _C_API.search(function) or _C_API.search(head)
    api = pyacl_name(named.group(1)) if named is not None else ""
    return api, code, head.strip(), thread_id


class _Told:
    """One failed task's lines so far: when they last grew, and whether it went out."""

    __slots__ = ("changed", "messages", "published")

    def __init__(self, now: float, messages: int) -> None:
        self.changed = now
        self.messages = messages
        self.published = False


class PlogEvents:
    """Entries in, events out (see the module docstring). ``clock`` makes each event
    (seq and time); ``triage_of(error)`` returns the Triage summary of a failed task
    (where its exception dump is looked for), or None to publish no Triage."""

    def __init__(
        self,
        clock: ev.Clock,
        *,
        triage_of: Callable[[DeviceError], dict[str, Any] | None] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.triage_of = triage_of
        self.monotonic = monotonic
        self.reader = DeviceErrorReader(limit=MAX_ERRORS)
        self._told: dict[int, tuple[DeviceError, _Told]] = {}
        #: op name -> op type, from GE's [AIC_INFO] lines
        self.op_types: dict[str, str] = {}
        self.exceptions = 0
        self.call_failures = 0

    def entries(self, entries: Iterable[PlogEntry], path: str | Path) -> list[ev.Event]:
        """The events of ``entries`` read from ``path``; failed tasks wait for
        :meth:`settle`."""
        out: list[ev.Event] = []
        for entry in entries:
            if not at_least(entry.level, "warning"):
                continue
            named = optypes.from_log_text(entry.text)
            if named is not None and len(self.op_types) < MAX_OP_TYPES:
                self.op_types[named[0]] = named[1]
            line = self.clock.make(ev.LogLine, *entry.log_line_fields(path))
            if entry.logged_ns:  # read late (the log is flushed in bursts): when it was said
                line = line._replace(ts_ns=entry.logged_ns)
            out.append(line)
            if entry.level != "error":
                continue
            self.reader.feed(entry.text, entry.logged_ns)
            failure = failed_call(entry)
            if failure is not None:
                api, code, message, thread_id = failure
                self.call_failures += 1
                failed = self.clock.make(ev.CallFailed, api, code, message, thread_id, -1)
                out.append(failed._replace(ts_ns=line.ts_ns))
        self._note_changes()
        return out

    def _note_changes(self) -> None:
        now = self.monotonic()
        current = {id(error): error for error in self.reader.errors}
        for key in [key for key in self._told if key not in current]:
            del self._told[key]  # fell out of the reader's window
        for key, error in current.items():
            told = self._told.get(key)
            if told is None:
                self._told[key] = (error, _Told(now, len(error.messages)))
            elif told[1].messages != len(error.messages):
                told[1].messages = len(error.messages)
                told[1].changed = now

    def settle(self, final: bool = False) -> list[ev.Event]:
        """The failed tasks whose lines stopped coming ``SETTLE_S`` ago (every one
        when ``final``: the job ended, or a one-shot answer is due), as an
        AclException each and its Triage."""
        now = self.monotonic()
        out: list[ev.Event] = []
        for error, told in self._told.values():
            if told.published or (not final and now - told.changed < SETTLE_S):
                continue
            if not (error.cores or error.task_id is not None or error.aicpu_errcode is not None):
                continue  # host lines with no device error of their own (yet)
            told.published = True
            out.extend(self._exception(error))
        return out

    def _exception(self, error: DeviceError) -> list[ev.Event]:
        from aclmon.dump.triage_dir import exception_facts

        facts = exception_facts(error)
        op_name = error.node_name or error.kernel
        op_type = error.node_type or self.op_types.get(op_name, "")
        exception = self.clock.make(
            ev.AclException,
            facts.device_id,
            facts.stream_id,
            facts.task_id,
            0,
            facts.error_code,
            op_name,
            op_type,
            (),
            (),
        )
        if error.logged_ns:  # when the device told it, not when we read it
            exception = exception._replace(ts_ns=error.logged_ns)
        self.exceptions += 1
        out: list[ev.Event] = [exception]
        summary = self.triage_of(error) if self.triage_of is not None else None
        if summary is not None:
            out.append(
                self.clock.make(
                    ev.Triage,
                    facts.device_id,
                    facts.stream_id,
                    facts.task_id,
                    exception.ts_ns,
                    summary,
                )
            )
        return out
