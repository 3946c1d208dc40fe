"""Dump files as events: the files already in a directory beside a live agent
(``attach --dump-dir``), and a dump directory replayed on its own.

Both announce files as the agent would have (``DumpFileSeen``, summarised), on
a background thread, so neither a big directory nor a slow disk holds the screen.
"""

from __future__ import annotations

import heapq
import os
import threading

from aclmon import events as ev
from aclmon.bus.states import CONNECTED, ENDED
from aclmon.errors import AclmonError
from aclmon.sources.base import Source, WrappedSource
from aclmon.sources.msprof_files import msprof_events
from aclmon.sources.replay_inputs import (
    Cancelled,
    ReplayInputs,
    dump_events,
    exception_events,
    log_events,
)


class DumpDirectoryScan:
    """Finds the dump files already in a directory, off the UI thread.

    The agent announces files as they appear; this covers the ones written
    before we attached (or by a job without the agent). One pass in a daemon
    thread: every file below ``directory`` is classified by name and first
    bytes, the newest ``limit`` are summarised (like the agent does) and
    delivered oldest first as ``DumpFileSeen`` events with ``seq = 0`` (state,
    outside any sequence) stamped with the file's modification time.
    """

    def __init__(self, directory: str, *, limit: int = 2_000, max_files: int = 200_000) -> None:
        if not os.path.isdir(directory):
            raise AclmonError(f"dump directory {directory!r} does not exist")
        self.directory = directory
        self.limit = limit
        self.max_files = max_files
        self.found = 0  # dump files seen (before the limit)
        self.error = ""
        self.done = threading.Event()
        self._ready: list[ev.Event] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="aclmon-dump-scan", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def poll(self, max_events: int) -> list[ev.Event]:
        with self._lock:
            batch, self._ready = self._ready[:max_events], self._ready[max_events:]
        return batch

    def _run(self) -> None:
        try:
            from aclmon.dump import classify, summarize

            newest: list[tuple[int, str, str, int]] = []  # min-heap of (mtime, path, kind, size)
            seen = 0
            for root, dirs, names in os.walk(self.directory):
                dirs.sort()
                for name in names:
                    seen += 1
                    if seen > self.max_files:
                        self.error = f"stopped after {self.max_files} files"
                        break
                    path = os.path.join(root, name)
                    kind = classify(path)
                    if kind is None:
                        continue
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    self.found += 1
                    item = (st.st_mtime_ns, path, kind, st.st_size)
                    if len(newest) < self.limit:
                        heapq.heappush(newest, item)
                    elif item > newest[0]:
                        heapq.heapreplace(newest, item)
                if seen > self.max_files:
                    break
            for mtime, path, kind, size in sorted(newest):
                event = ev.DumpFileSeen(0, mtime, path, kind, size, summarize(path))
                with self._lock:
                    self._ready.append(event)
        except Exception as exc:  # a scan problem must not take the viewer down
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done.set()


class WithDumpDirectory(WrappedSource):
    """Another source plus the dump files already in a directory."""

    def __init__(self, inner: Source, directory: str) -> None:
        super().__init__(inner)
        self.scan = DumpDirectoryScan(directory)

    def start(self) -> None:
        self.scan.start()
        self.inner.start()

    def poll(self, max_events: int) -> list[ev.Event]:
        found = self.scan.poll(max_events)
        return (
            found + self.inner.poll(max_events - len(found)) if len(found) < max_events else found
        )

    def why_gone(self, path: str) -> str:
        return self.inner.why_gone(path)

    def finish_reading(self, timeout: float) -> None:
        self.scan.done.wait(timeout)
        self.inner.finish_reading(timeout)


class DumpDirectorySource(Source):
    """Dump files found under PATH, summarised on a background thread and
    delivered like the agent's ``DumpFileSeen`` events; with them the CANN log
    lines and msprof's exported files found there (operator timings, msproftx)."""

    readonly = True

    def __init__(self, inputs: ReplayInputs) -> None:
        self.inputs = inputs
        self.description = f"dump directory {inputs.root}"
        if not inputs.dump_files:
            self.description = (
                f"msprof files {inputs.root}" if inputs.msprof_files else f"CANN logs {inputs.root}"
            )
        self._events: list[ev.Event] = []
        self._next = 0
        self._done = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self.error = ""

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._load, name="aclmon-replay-dumps", daemon=True
            )
            self._thread.start()

    def _load(self) -> None:
        try:
            dumps = dump_events(self.inputs.dump_files, self._closing.is_set)
            # what an exception dump holds is an exception: a row of its own
            events: list[ev.Event] = [*dumps, *exception_events(dumps, len(dumps) + 1)]
            logs, problems = log_events(self.inputs.log_files, first_seq=len(events) + 1)
            self.inputs.problems.extend(problems)
            timings, problems = msprof_events(self.inputs.msprof_files, len(events) + len(logs) + 1)
            self.inputs.problems.extend(problems)
            # What could not be read of msprof's files is said in the Logs view, at
            # the time of its last event (the timeline's span stays the files').
            said_at = timings[-1].ts_ns if timings else 0
            first = len(events) + len(logs) + len(timings) + 1
            said = [
                ev.LogLine(seq, said_at, "warning", problem, "aclmon")
                for seq, problem in enumerate(problems, start=first)
            ]
            self._events = [*events, *logs, *timings, *said]
        except Cancelled:
            pass
        except Exception as exc:  # shown in the header, never raised on a thread
            self.error = str(exc)
        finally:
            self._done.set()

    @property
    def state(self) -> str:
        if not self._done.is_set():
            return "reading files"
        if self.error:
            return f"failed: {self.error}"
        return ENDED if self._next >= len(self._events) else CONNECTED

    def poll(self, max_events: int) -> list[ev.Event]:
        if not self._done.is_set():
            return []
        start = self._next
        self._next = min(len(self._events), start + max_events)
        return self._events[start : self._next]

    def wait_loaded(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def close(self) -> None:
        # Quitting must not wait for a big directory: the reader stops at the next file.
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
