"""``aclmon watch PID``: a CANN job that runs no agent, read from outside.

torch_npu, MindSpore, a C++ ACL program or a pyACL script started without
``aclmon run`` have no agent to ask; what they leave behind is read instead:

* their **plog files** (``plog-PID_*.log``, ``device-PID_*.log``) under the log
  roots the job's own environment names (``$ASCEND_PROCESS_LOG_PATH``, else
  ``$ASCEND_WORK_PATH/log``, and ``$HOME/ascend/log`` with its ``debug/`` and
  ``run/`` trees: :func:`aclmon.dump.plog.log_root`), followed as they grow and
  parsed by the one plog parser; :class:`~aclmon.sources.plog_events.PlogEvents`
  makes the log lines, failed calls and exceptions of them;
* their **dump directories**: ``--dump DIR``, else the ``dump_path`` of the
  acl.json named on the job's command line (or ``acl.json`` in its working
  directory), and the exception dumps' ``extra-info/`` under
  ``$NPU_COLLECT_PATH``, ``$ASCEND_WORK_PATH`` or the working directory; the
  files there are announced as the agent's dump watcher announces them;
* its **msprof output directory** (``--profiling DIR``, else the profiler
  ``output`` of its acl.json): msprof's exported files (``op_summary_*.csv``,
  ``msprof_*.json``, ``msprof_tx_*.csv``) as they appear, read by
  :class:`~aclmon.sources.msprof_files.MsprofFollower` into operator timings and
  msproftx records for the Profiling and Timeline views;
* the process itself (``/proc`` through psutil): its CPU, memory and threads,
  and its end.

Everything is read on one daemon thread (:class:`WatchSource`): ``poll`` only
takes what it made. The host's view of the job's chips (npu-smi or DCMI) comes
from the viewer's host feed: :class:`DevicesFromHost` turns the readings of the
chips the process holds into device samples, so the Devices view shows them.
The source is read-only: there is no agent to send a command to.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aclmon import events as ev
from aclmon.bus.states import CONNECTED, ENDED
from aclmon.dump.device_errors import DeviceError
from aclmon.dump.plog import PlogParser, find_log_files, log_root, logs_go_to_stdout
from aclmon.dump.walk import walk_files
from aclmon.errors import AclmonError
from aclmon.events.host import HostSnapshot
from aclmon.growing_file import GrowingFile
from aclmon.sources.base import Source, WrappedSource
from aclmon.sources.msprof_files import MsprofFollower
from aclmon.sources.plog_events import PlogEvents

#: how often the thread reads; how often it looks for new files and samples the process
POLL_S = 0.25
DISCOVER_S = 2.0
SAMPLE_S = 1.0
#: after the process ended, how long its last flushed lines are still read
GRACE_S = 1.0
#: plog bytes read per file per pass; a backlog larger than this is read from its newest part
READ_PER_FILE = 512 * 1024
MAX_BACKLOG = 8 * 1024 * 1024
MAX_LOG_FILES = 32
#: dump files: the newest announced of those already there; entries walked per pass
DUMPS_AT_START = 2_000
DUMP_WALK_ENTRIES = 50_000
DUMP_DEPTH = 12
MAX_ANNOUNCED = 200_000
#: the acl.json a job started in its working directory may use without naming it
ACL_JSON_NAMES = ("acl.json",)


@dataclass
class WatchTarget:
    """One process to watch, and where its files are."""

    pid: int
    name: str
    argv: tuple[str, ...]
    cwd: str
    environ: dict[str, str]
    create_time: float
    log_roots: list[Path] = field(default_factory=list)
    dump_dirs: list[str] = field(default_factory=list)
    profiling_dir: str = ""
    #: what could not be found or read, said once in the Logs view
    notes: list[str] = field(default_factory=list)


def find_target(pid: int, *, dump: str | None = None, profiling: str | None = None) -> WatchTarget:
    """The process ``pid`` of this user, with its log roots and dump directories.
    Raises :class:`AclmonError` (one clear line) for a pid that does not exist,
    that is another user's, or whose details cannot be read."""
    import psutil

    if pid <= 0:
        raise AclmonError(f"{pid} is not a process id")
    try:
        process = psutil.Process(pid)
        uid = process.uids().real
        if uid != os.getuid():
            owner = _user_name(uid)
            raise AclmonError(
                f"process {pid} belongs to {owner}, not to you: aclmon watch reads only your"
                " own processes (their logs and dumps are theirs)"
            )
        with process.oneshot():
            name = process.name()
            argv = tuple(process.cmdline())
            cwd = process.cwd()
            environ = dict(process.environ())
            created = process.create_time()
    except psutil.NoSuchProcess:
        raise AclmonError(f"no process {pid} (it has ended, or never ran)") from None
    except psutil.AccessDenied:
        raise AclmonError(f"process {pid} cannot be read (permission denied)") from None
    if dump is not None and not os.path.isdir(dump):
        raise AclmonError(f"--dump {dump}: not a directory")
    if profiling is not None and not os.path.isdir(profiling):
        raise AclmonError(f"--profiling {profiling}: not a directory")
    target = WatchTarget(pid, name, argv, cwd, environ, created)
    target.log_roots = log_roots(environ)
    if logs_go_to_stdout(environ):
        target.notes.append(
            "the job prints its CANN log to stdout (ASCEND_SLOG_PRINT_TO_STDOUT=1):"
            " there are no plog files to read"
        )
    from aclmon.dump.acljson import read_acl_json

    config_dump, config_profiling = "", ""
    for path in acl_json_candidates(argv, cwd):
        config, warning = read_acl_json(path, cwd=cwd)
        if warning:
            target.notes.append(warning)
        config_dump = config_dump or config.dump_path
        if config.profiler_on:
            config_profiling = config_profiling or config.profiler_output
    target.dump_dirs = [os.path.abspath(dump)] if dump else []
    if not dump and config_dump:
        target.dump_dirs.append(config_dump)
    for base in (environ.get("NPU_COLLECT_PATH"), environ.get("ASCEND_WORK_PATH"), cwd):
        if base and base.strip():
            extra = os.path.join(os.path.join(cwd, base.strip()), "extra-info")
            if extra not in target.dump_dirs:
                target.dump_dirs.append(extra)
    target.profiling_dir = os.path.abspath(profiling) if profiling else config_profiling
    return target


def _user_name(uid: int) -> str:
    try:
        import pwd

        return f"user {pwd.getpwuid(uid).pw_name}"
    except (KeyError, ImportError):
        return f"uid {uid}"


def log_roots(environ: dict[str, str]) -> list[Path]:
    """Where a process with this environment writes its CANN logs: the root it
    uses, and ``$HOME/ascend/log`` too when that is another place (the device's
    logs and older releases' files go there whatever the variables say)."""
    roots = [log_root(environ)]
    home = Path(environ.get("HOME") or os.path.expanduser("~")) / "ascend" / "log"
    if home not in roots:
        roots.append(home)
    return roots


def acl_json_candidates(argv: tuple[str, ...], cwd: str) -> list[str]:
    """acl.json files the job may have handed ``acl.init``: ``*.json`` arguments of
    its command line (``--acl-json=PATH`` too) that exist, then ``acl.json`` in its
    working directory."""
    found: list[str] = []
    for argument in argv[1:]:
        value = argument.partition("=")[2] if argument.startswith("-") else argument
        if not value.endswith(".json"):
            continue
        path = os.path.join(cwd, value)
        if os.path.isfile(path) and path not in found:
            found.append(path)
    for name in ACL_JSON_NAMES:
        path = os.path.join(cwd, name)
        if os.path.isfile(path) and path not in found:
            found.append(path)
    return found


class _Followed(GrowingFile):
    """One log file being followed: where we are in it, its parser, a cut line."""

    __slots__ = ("parser",)

    def __init__(self, path: Path) -> None:
        super().__init__(path, READ_PER_FILE)
        self.parser = PlogParser()


class PlogFiles:
    """The plog files of one process under some roots, read as they grow (the
    whole story: lines written before the watch started are the job's too)."""

    def __init__(self, roots: list[Path], pid: int) -> None:
        self.roots = roots
        self.pid = pid
        self.files: dict[Path, _Followed] = {}
        self.skipped_bytes = 0
        self.not_regular: set[Path] = set()

    def discover(self) -> None:
        for root in self.roots:
            for path in find_log_files(root, self.pid):
                if path not in self.files and len(self.files) < MAX_LOG_FILES:
                    self.files[path] = _Followed(path)

    def read(self, final: bool = False) -> list[tuple[Path, list[Any]]]:
        """``(path, entries)`` complete since the last read; ``final``: the open
        entry of each file too (its writer has gone)."""
        out = []
        for followed in self.files.values():
            entries = self._read(followed)
            if final:
                last = followed.parser.flush()
                if last is not None:
                    entries.append(last)
            if entries:
                out.append((followed.path, entries))
        return out

    def _read(self, followed: _Followed) -> list[Any]:
        try:
            # never blocks: a FIFO put in the file's place opens at once and is seen for what it is
            fd = os.open(followed.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return []
        with os.fdopen(fd, "rb") as handle:
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    self.not_regular.add(followed.path)
                    return []
                followed.restart_if_replaced(info)
                if info.st_size - followed.offset > MAX_BACKLOG:
                    self.skipped_bytes += followed.resume_at(info.st_size - MAX_BACKLOG)
                    followed.parser = PlogParser()
                handle.seek(followed.offset)
                data = handle.read(READ_PER_FILE)
            except OSError:
                return []
        if not data:
            last = followed.parser.flush()  # the writer is quiet: its entry is complete
            return [last] if last is not None else []
        lines = followed.whole_lines(data)
        return followed.parser.feed(lines.decode("utf-8", "replace").splitlines())


class DumpFiles:
    """The dump files of some directories: those already there (the newest
    ``DUMPS_AT_START``) at the first pass, then each new one once its size is the
    same at two passes (the runtime may still be writing it)."""

    def __init__(self, directories: list[str]) -> None:
        self.directories = directories
        self._announced: set[str] = set()
        self._growing: dict[str, int] = {}
        self._first = True
        self.found = 0

    def scan(self, final: bool = False) -> list[ev.DumpFileSeen]:
        found: dict[str, tuple[int, str, int]] = {}  # directories may hold one another
        for directory in self.directories:
            for entry in walk_files(directory, DUMP_DEPTH, DUMP_WALK_ENTRIES):
                if entry.path in self._announced or entry.name.endswith(".json"):
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    found[entry.path] = (info.st_mtime_ns, entry.path, info.st_size)
        seen = list(found.values())
        first, self._first = self._first, False
        if first and len(seen) > DUMPS_AT_START:
            seen = heapq.nlargest(DUMPS_AT_START, seen)
        ready = []
        for mtime, path, size in sorted(seen):
            if not first and not final and (size == 0 or self._growing.get(path) != size):
                self._growing[path] = size
                continue
            self._growing.pop(path, None)
            if len(self._announced) < MAX_ANNOUNCED:
                self._announced.add(path)
            announced = _dump_event(path, mtime, size)
            if announced is not None:
                ready.append(announced)
        self.found += len(ready)
        return ready


def _dump_event(path: str, mtime_ns: int, size: int) -> ev.DumpFileSeen | None:
    from aclmon.dump import classify, summarize

    kind = classify(path)
    if kind is None:
        return None
    kind = ev.OP_DUMP if kind == ev.NANO_DUMP else kind
    return ev.DumpFileSeen(0, mtime_ns, path, kind, size, summarize(path))


class WatchSource(Source):
    """The events of a job without an agent (see the module docstring)."""

    readonly = True

    def __init__(self, target: WatchTarget) -> None:
        self.target = target
        self.description = f"pid {target.pid} {target.name} · no agent"
        self.clock = ev.Clock()
        self.plog = PlogFiles(target.log_roots, target.pid)
        self.dumps = DumpFiles(target.dump_dirs)
        self.profiling = MsprofFollower(target.profiling_dir) if target.profiling_dir else None
        self.derive = PlogEvents(self.clock, triage_of=self._triage)
        self._ready: list[ev.Event] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._final_wanted = threading.Event()
        self._final_done = threading.Event()
        self._ended = False
        self._thread = threading.Thread(target=self._run, name="aclmon-watch", daemon=True)
        self.error = ""

    # ------------------------------------------------------------ Source
    def start(self) -> None:
        if not self._thread.is_alive() and not self._stop.is_set():
            self._put(self._hello())
            for note in self.target.notes:
                self._put(self.clock.make(ev.LogLine, "warning", f"aclmon watch: {note}"))
            self._thread.start()

    @property
    def state(self) -> str:
        return ENDED if self._ended else CONNECTED

    @property
    def state_reason(self) -> str:
        return self.error

    def poll(self, max_events: int) -> list[ev.Event]:
        with self._lock:
            batch, self._ready = self._ready[:max_events], self._ready[max_events:]
        return batch

    def finish_reading(self, timeout: float) -> None:
        """Read what is there now to its end, the failed tasks whose lines are
        all in published at once (a one-shot answer)."""
        if self._thread.is_alive():
            self._final_wanted.set()
            self._final_done.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    # ------------------------------------------------------------ the thread
    def _put(self, *events: ev.Event) -> None:
        with self._lock:
            self._ready.extend(events)

    def _hello(self) -> ev.Hello:
        t = self.target
        fields = ev.hello_fields("no agent", "", 0, pid=t.pid, argv=t.argv, environ=t.environ)
        hello: ev.Hello = self.clock.make(ev.Hello, *fields)
        return hello

    def _run(self) -> None:
        import psutil

        try:
            process: Any = psutil.Process(self.target.pid)
        except psutil.Error:
            process = None
        discovered = sampled = 0.0
        gone_at: float | None = None
        while not self._stop.is_set():
            final = self._final_wanted.is_set()
            now = time.monotonic()
            try:
                if now - sampled >= SAMPLE_S:
                    sampled = now
                    if gone_at is None and not self._sample(process):
                        gone_at = now
                if final or now - discovered >= DISCOVER_S:
                    discovered = now
                    self.plog.discover()
                    self._put(*self.dumps.scan(final))
                    if self.profiling is not None:
                        self._profiling(self.profiling, final)
                ending = gone_at is not None and now - gone_at >= GRACE_S
                for path, entries in self.plog.read(final or ending):
                    self._put(*self.derive.entries(entries, path))
                self._put(*self.derive.settle(final or ending))
            except Exception as exc:  # a bug must not end the watch silently
                self.error = f"{type(exc).__name__}: {exc}"
            if final:
                self._final_wanted.clear()
                self._final_done.set()
            if gone_at is not None and now - gone_at >= GRACE_S and not self._ended:
                self._put(self.clock.make(ev.Goodbye, -1, False, "process ended"))
                self._ended = True
            self._stop.wait(POLL_S)

    def _profiling(self, follower: MsprofFollower, final: bool) -> None:
        events, problems = follower.scan(final)
        self._put(*events)
        for problem in problems:
            self._put(self.clock.make(ev.LogLine, "warning", f"aclmon watch: {problem}"))

    def _sample(self, process: Any) -> bool:
        """One HostSample of the process; False once it has gone (or its pid is another's)."""
        import psutil

        if process is None:
            return False
        try:
            with process.oneshot():
                if process.create_time() != self.target.create_time:
                    return False  # the pid was reused
                if process.status() == psutil.STATUS_ZOMBIE:
                    return False
                cpu = process.cpu_percent(None)
                rss = process.memory_info().rss
                threads = process.num_threads()
        except psutil.Error:
            return False
        self._put(self.clock.make(ev.HostSample, cpu, rss, threads))
        return True

    def _triage(self, error: DeviceError) -> dict[str, Any] | None:
        """The Triage summary of a failed task, as ``aclmon triage`` makes it: its
        exception dump found under the dump directories, no allocation table."""
        from aclmon.dump.triage_dir import exception_dumps, match_dump, triage_from_lines

        dumps = [p for d in self.target.dump_dirs for p in exception_dumps(Path(d))]
        note = "watched without an agent: no allocation table, so no address findings"
        result = triage_from_lines(error, match_dump(error, dumps), note)
        return result.to_dict()


class DevicesFromHost(WrappedSource):
    """The host's readings of the chips one process holds, as the device samples an
    agent would send: the Devices view of a job without an agent. ``inner``
    delivers the host's ``HostNpuSample`` events (a :class:`WithHost`)."""

    def __init__(self, inner: Source, pid: int) -> None:
        super().__init__(inner)
        self.pid = pid

    def poll(self, max_events: int) -> list[ev.Event]:
        events = self.inner.poll(max_events)
        out: list[ev.Event] = []
        for event in events:
            out.append(event)
            if type(event) is ev.HostNpuSample:
                out.extend(device_samples(event, self.pid))
        return out


def device_samples(sample: ev.HostNpuSample, pid: int) -> list[ev.DeviceSample]:
    """The chips ``pid`` holds in one host reading, as DeviceSamples (``seq`` 0:
    state outside any sequence), by their ACL device id where the back end knows it."""
    try:
        snapshot = HostSnapshot.from_plain(sample.snapshot)
    except ValueError:
        return []  # the store counts and says why the sample was refused
    out = []
    for process in snapshot.processes_of(pid):
        chip = snapshot.device(process.npu_id, process.chip_id)
        if chip is None:
            continue
        device_id = chip.logic_id if chip.logic_id is not None else chip.npu_id
        no_hbm = chip.hbm_total_mb is None
        used = chip.memory_used_mb if no_hbm else chip.hbm_used_mb
        total = chip.memory_total_mb if no_hbm else chip.hbm_total_mb
        out.append(
            ev.DeviceSample(
                0,
                sample.ts_ns,
                device_id,
                _percent(chip.aicore_pct),
                _percent(chip.vector_pct),
                _percent(chip.aicpu_pct),
                (used or 0) << 20,
                (total or 0) << 20,
                chip.health or "UNKNOWN",
                None if chip.temp_c is None else float(chip.temp_c),
                chip.power_w,
            )
        )
    return out


def _percent(value: int | None) -> int:
    return -1 if value is None else value
