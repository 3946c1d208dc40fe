"""What ``aclmon replay PATH`` opens: finding recordings, dump files, CANN log
files (plog) and msprof's exported files, and turning a dump directory and log
files into the events a live agent would have sent (msprof's files:
:mod:`aclmon.sources.msprof_files`).

A recording is recognised by its header (the magic bytes), never by its name;
dump files by their names and first bytes (:func:`aclmon.dump.classify`);
msprof's files by their names (``op_summary_*.csv``, ``msprof_*.json``,
``msprof_tx_*.csv``). A directory is searched recursively, so ``PATH`` may be a
recording, a dump directory, an msprof ``PROF_*`` directory, or one that holds
several of them.

Nothing here imports Textual: ``aclmon replay --json`` uses it without a screen.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aclmon import events as ev
from aclmon.errors import AclmonError, no_such_file
from aclmon.sources.demo import dumps_beside, is_demo_scratch

#: directories deeper than this below PATH are not searched (symlink loops, huge trees).
MAX_DEPTH = 16
#: files looked at, at most: a typo'd PATH of "/" must not scan the machine.
MAX_FILES = 500_000


class ReplayInputError(AclmonError):
    """PATH holds nothing replayable, or cannot be read."""


@dataclass
class ReplayInputs:
    """What was found under ``root``."""

    root: Path
    recordings: list[Path] = field(default_factory=list)
    dump_files: list[Path] = field(default_factory=list)
    #: plog-{pid}_*.log / device-{pid}_*.log files (a recording's timeline takes
    #: those of its process; without a recording they are the logs shown)
    log_files: list[Path] = field(default_factory=list)
    #: msprof's exported files (op_summary_*.csv, msprof_*.json, msprof_tx_*.csv)
    msprof_files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def recording(self) -> Path | None:
        """The recording to replay: the only one, or the newest of several."""
        if not self.recordings:
            return None
        return max(self.recordings, key=_created_ns)


def _created_ns(path: Path) -> tuple[int, str]:
    """A recording's creation time from its header (mtime if unreadable), then its name."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
        return int.from_bytes(head[12:20], "little"), str(path)
    except OSError:
        return 0, str(path)


def find_inputs(path: str | os.PathLike[str]) -> ReplayInputs:
    """Recordings and dump files at or below ``path``; one clear error if none."""
    from aclmon.bus.recording import is_recording
    from aclmon.dump import classify
    from aclmon.dump.plog import log_file_pid
    from aclmon.sources.msprof_files import msprof_file_kind

    root = Path(path)
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        raise ReplayInputError(no_such_file(root)) from None
    except OSError as exc:
        raise ReplayInputError(f"{root}: {exc.strerror or exc}") from None
    found = ReplayInputs(root)
    if stat.S_ISREG(mode):
        if is_recording(root):
            found.recordings.append(root)
            # a recorded demo's dump files, kept beside it (aclmon demo --record)
            beside = dumps_beside(root)
            if beside.is_dir():
                _walk(found, beside)
        elif msprof_file_kind(root.name) is not None:
            found.msprof_files.append(root)
        elif classify(root) is not None:
            found.dump_files.append(root)
        elif log_file_pid(root.name) is not None:
            found.log_files.append(root)
        else:
            raise ReplayInputError(
                f"{root}: neither an aclmon recording, a dump file, a CANN log file"
                " nor an msprof export file"
            )
        return found
    if not stat.S_ISDIR(mode):
        raise ReplayInputError(f"{root}: not a file or directory")
    _walk(found, root)
    return _checked(found)


def _walk(found: ReplayInputs, root: Path) -> None:
    """Add the recordings, msprof exports, dump files and CANN log files under ``root`` to ``found``."""
    from aclmon.bus.recording import is_recording
    from aclmon.dump import classify
    from aclmon.dump.plog import log_file_pid
    from aclmon.sources.msprof_files import msprof_file_kind

    seen = 0
    base_depth = len(root.parts)

    def note(error: OSError) -> None:
        found.problems.append(f"{error.filename}: {error.strerror or error}")

    for current, dirs, names in os.walk(root, onerror=note):
        dirs.sort()
        if len(Path(current).parts) - base_depth >= MAX_DEPTH:
            dirs.clear()
        for name in sorted(names):
            seen += 1
            if seen > MAX_FILES:
                found.problems.append(f"stopped after {MAX_FILES} files")
                return
            file = Path(current, name)
            try:
                if not stat.S_ISREG(os.stat(file).st_mode):
                    continue  # never open FIFOs or devices
            except OSError:
                continue
            if is_recording(file):
                found.recordings.append(file)
            elif msprof_file_kind(name) is not None:
                found.msprof_files.append(file)
            elif classify(file) is not None:
                found.dump_files.append(file)
            elif log_file_pid(name) is not None:
                found.log_files.append(file)


def _checked(found: ReplayInputs) -> ReplayInputs:
    if not (found.recordings or found.dump_files or found.log_files or found.msprof_files):
        raise ReplayInputError(
            f"{found.root}: no aclmon recording, dump, CANN log or msprof export files found"
        )
    return found


# ---------------------------------------------------------------- dump directories
@dataclass(frozen=True)
class DumpGroup:
    """Where an operator dump sits in the documented tree
    ``{dump_path}/{time}/{device}/{model_name}/{model_id}/{step}/``."""

    device: int | None
    model: str
    model_id: int | None
    step: int | None
    #: an exception dump (``extra-info/data-dump/{device}/``), not an operator dump of a step
    exception: bool = False

    def label(self) -> str:
        if self.exception:
            return f"exception dumps · device {self.device}"
        if self.device is None and self.step is None:
            return "outside the time/device/model/step tree"
        model = self.model + (f" ({self.model_id})" if self.model_id is not None else "")
        return f"device {self.device} · model {model} · step {self.step}"

    def sort_key(self) -> tuple[int, int, str, int, int]:
        return (
            0 if self.exception else 1,  # exception dumps first: what a crash left
            -1 if self.device is None else self.device,
            self.model,
            -1 if self.model_id is None else self.model_id,
            -1 if self.step is None else self.step,
        )


UNGROUPED = DumpGroup(None, "", None, None)


def dump_group(path: Path) -> DumpGroup:
    """The group of one file, read from its last directory names."""
    parts = path.parent.parts
    if len(parts) >= 2 and parts[-2] == "data-dump" and parts[-1].isdigit():
        return DumpGroup(int(parts[-1]), "", None, None, exception=True)
    if len(parts) < 5:
        return UNGROUPED
    time_dir, device, model, model_id, step = parts[-5:]
    if not (time_dir.isdigit() and device.isdigit() and model_id.isdigit() and step.isdigit()):
        return UNGROUPED
    return DumpGroup(int(device), model, int(model_id), int(step))


def _file_time_ns(path: Path, summary: dict[str, Any]) -> int:
    """When the file was written: the name's microsecond stamp, else its mtime."""
    stamp = summary.get("timestamp")
    if isinstance(stamp, int) and 0 < stamp < (1 << 63) // 1000:
        return stamp * 1000
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


class Cancelled(AclmonError):
    """The caller asked :func:`dump_events` to stop (the viewer quit)."""


def dump_events(
    files: list[Path], should_stop: Callable[[], bool] | None = None
) -> list[ev.DumpFileSeen]:
    """One ``DumpFileSeen`` per file, as the agent would publish it, in the
    order the dumps view shows them: overflow records first (by time), then
    operator dumps by device, model, step and time.

    Each summary also says where the file sits (``group``) and, for an
    overflow, which operator dump it points at (``op_dump``, ``operator``),
    found with :class:`aclmon.dump.DumpIndex` (same task and stream id,
    preferring the overflow's own directory). Slow (it reads every file's
    header): call it off the UI thread; ``should_stop`` is asked between files
    and makes it raise :class:`Cancelled`.
    """
    from aclmon.dump import summarize
    from aclmon.dump.index import DumpIndex

    linked: dict[
        str, tuple[str, str]
    ] = {}  # overflow path -> (op dump path, name from the file name)
    directories = sorted({str(f.parent) for f in files if "opdebug" in f.name.lower()})
    for directory in directories:
        if should_stop is not None and should_stop():
            raise Cancelled("stopped reading dump files")
        index = DumpIndex(directory)
        for link in index.links:
            if link.op_dump is not None and link.overflow.path not in linked:
                name = link.op_dump.name
                operator = f"{name.op_type} {name.op_name}" if name is not None else ""
                linked[link.overflow.path] = (link.op_dump.path, operator)
    summaries: dict[str, dict[str, Any]] = {}
    for file in files:
        if should_stop is not None and should_stop():
            raise Cancelled("stopped reading dump files")
        summaries[str(file)] = summarize(file)
    rows: list[tuple[tuple[Any, ...], ev.DumpFileSeen]] = []
    for file in files:
        summary = summaries[str(file)]
        group = dump_group(file)
        summary["group"] = group.label()
        kind = summary.get("kind") or "unknown"
        linked_to = linked.get(str(file))
        if linked_to is not None:
            op_path, operator = linked_to
            # The header's op name (the file name has "/" and "." replaced by "_").
            op_summary = summaries.get(op_path) or {}
            if op_summary.get("op_name"):
                operator = f"{op_summary.get('op_type', '')} {op_summary['op_name']}".strip()
            summary["op_dump"], summary["operator"] = op_path, operator
        try:
            size = os.stat(file).st_size
        except OSError:
            size = 0
        ts_ns = _file_time_ns(file, summary)
        event = ev.DumpFileSeen(0, ts_ns, str(file), kind, size, summary)
        first = 0 if kind == ev.OVERFLOW_DUMP else 1
        key = (first, ts_ns) if first == 0 else (first, *group.sort_key(), ts_ns, file.name)
        rows.append((key, event))
    rows.sort(key=lambda row: row[0])
    # seq numbers in display order, as if one agent had announced them so.
    return [event._replace(seq=n) for n, (_, event) in enumerate(rows, start=1)]


def _acl_number(names: Any, short: str) -> int:
    """The pyACL enum value whose display name is ``short`` (a dump's ``DT_FLOAT16``
    is ``FLOAT16``; its ``FRACTAL_NZ`` the same); -1 when pyACL has none of that name."""
    wanted = short.removeprefix("DT_").removeprefix("FORMAT_").upper()
    return next((value for value in names if names.short(value).upper() == wanted), -1)


def _tensor_desc(tensor: Any) -> ev.TensorDesc | None:
    """A tensor of a dump's summary as the exception callback would describe it:
    dtype and format by pyACL's numbering (matched by name: the dump's own enums
    number them differently), the shape, no address (a summary keeps none)."""
    from aclmon.acl_constants import DATA_TYPE_NAMES, FORMAT_NAMES

    if not isinstance(tensor, dict):
        return None
    shape = tensor.get("original_shape") or tensor.get("shape") or ()
    size = tensor.get("size")
    return ev.TensorDesc(
        _acl_number(DATA_TYPE_NAMES, str(tensor.get("dtype", ""))),
        _acl_number(FORMAT_NAMES, str(tensor.get("format", ""))),
        tuple(int(d) for d in shape if isinstance(d, int)),
        0,
        size if isinstance(size, int) else 0,
        "",
    )


def exception_events(dumps: list[ev.DumpFileSeen], first_seq: int = 1) -> list[ev.AclException]:
    """An exception per exception dump (what the runtime saved of an operator that
    raised an AI Core exception), as far as the dump tells: its time, device (its
    directory), operator, task and tensors. The dump records no stream, error code,
    thread or model: stream -1, code 0 ("not recorded"), thread 0, no model. In
    time order, numbered from ``first_seq``."""
    out = []
    for dump in dumps:
        if dump.kind != ev.EXCEPTION_DUMP:
            continue
        summary = dump.summary if isinstance(dump.summary, dict) else {}
        tensors = summary.get("tensors") if isinstance(summary.get("tensors"), list) else []
        by_role: dict[str, list[ev.TensorDesc]] = {"input": [], "output": []}
        for tensor in tensors or ():
            desc = _tensor_desc(tensor)
            role = tensor.get("role") if isinstance(tensor, dict) else None
            if desc is not None and role in by_role:
                by_role[role].append(desc)
        place = dump_group(Path(dump.path))
        task = summary.get("task_id")
        out.append(
            ev.AclException(
                0,
                dump.ts_ns,
                -1 if place.device is None else place.device,
                -1,
                task if isinstance(task, int) else 0,
                0,
                0,
                str(summary.get("op_name") or ""),
                "",
                tuple(by_role["input"]),
                tuple(by_role["output"]),
            )
        )
    out.sort(key=lambda e: e.ts_ns)
    return [e._replace(seq=n) for n, e in enumerate(out, start=first_seq)]


def log_events(
    files: list[Path], first_seq: int = 1, threshold: str = "warning"
) -> tuple[list[ev.LogLine], list[str]]:
    """The entries of ``threshold`` and above in CANN log files, as the agent's plog
    tail would have published them (``ts_ns`` = the time the entry states), in time
    order and numbered from ``first_seq``; and one problem line per file that could
    not be read or held garbage lines (counted, never raised)."""
    from aclmon.dump.plog import at_least, parse_file

    rows: list[tuple[int, str, int, ev.LogLine]] = []
    problems: list[str] = []
    for file in files:
        try:
            entries, parser = parse_file(file)
        except OSError as exc:
            problems.append(f"{file}: {exc.strerror or exc}")
            continue
        if parser.garbage:
            problems.append(f"{file}: {parser.garbage} line(s) that are not log entries skipped")
        for entry in entries:
            if not at_least(entry.level, threshold):
                continue
            line = ev.LogLine(0, entry.logged_ns, *entry.log_line_fields(file))
            rows.append((entry.logged_ns, str(file), entry.line, line))
    rows.sort(key=lambda row: row[:3])
    events = [row[3]._replace(seq=n) for n, row in enumerate(rows, start=first_seq)]
    return events, problems


def log_lines_beside(inputs: ReplayInputs, pid: Any) -> tuple[list[ev.LogLine], int]:
    """The CANN log lines to fold into a recording's timeline: those of the
    recorded process's files (every file when the recording names no pid), with
    seq 0 (outside the recording's sequence), and how many files of other
    processes were left out. Problems reading them go to ``inputs.problems``."""
    from aclmon.dump.plog import log_file_pid

    files = inputs.log_files
    if isinstance(pid, int) and pid > 0:
        files = [f for f in files if log_file_pid(f.name) == pid]
    lines, problems = log_events(files)
    inputs.problems.extend(problems)
    return [line._replace(seq=0) for line in lines], len(inputs.log_files) - len(files)


def msprof_beside(inputs: ReplayInputs) -> list[ev.Event]:
    """The events of the msprof files found beside a recording, with seq 0
    (outside the recording's sequence); problems go to ``inputs.problems``."""
    from aclmon.sources.msprof_files import msprof_events

    events, problems = msprof_events(inputs.msprof_files)
    inputs.problems.extend(problems)
    return [event._replace(seq=0) for event in events]


def why_gone(path: str) -> str:
    """Why a dump file a recording names is not where it was, in words."""
    if is_demo_scratch(path):
        return (
            "it was written by an aclmon demo that was not recorded with its dumps: a demo's"
            " files in the runtime directory are removed when the next demo starts"
            " (aclmon demo --record FILE keeps them beside FILE, in FILE.dumps)"
        )
    return (
        "it was moved or deleted since it was recorded; replaying a directory that holds"
        " the recording and the dump files finds them there by name"
    )


def resolve_dump_path(path: str, inputs: ReplayInputs) -> str:
    """A dump path from a recording, moved along with its directory: if it no
    longer exists, the file of the same name found under PATH."""
    if os.path.exists(path):
        return path
    name = os.path.basename(path)
    for file in inputs.dump_files:
        if file.name == name:
            return str(file)
    return path
