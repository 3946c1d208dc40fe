"""Compare dump files as they land, off the UI thread, without slowing the job.

The agent announces each new dump file as a ``DumpFileSeen`` event; a viewer
hands those to :meth:`LiveComparer.offer`, which never blocks: the event goes
into a bounded queue (a full queue drops it, counted in ``dropped``) and one
worker thread of the viewer's process compares it with the golden and puts the
operator's rows into a :class:`~aclmon.dump.compare.table.CompareTable`. The
job's process does nothing more than it already did (the agent only names
files); the worker runs at the lowest CPU priority (Linux: per thread) so the
job, which shares the machine, and the UI come first, and it reads each dump
once. The golden directory is indexed on the worker too, on the first file.

Operator dumps (``op-dump``, ``nano``) are compared as tensors, statistics CSVs
(``stats``) as statistics; other kinds are ignored. A newer dump of an
operator replaces its rows (the table shows each operator's latest step).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from aclmon.dump.compare.engine import CompareOptions, compare_op
from aclmon.dump.compare.matching import Golden, Producers, op_dump_of
from aclmon.dump.compare.rows import CompareRow
from aclmon.dump.compare.table import CompareTable
from aclmon.dump.naming import parse_dump_name
from aclmon.errors import AclmonError
from aclmon.events import DumpFileSeen

TENSOR_KINDS = ("op-dump", "nano")
STATS_KIND = "stats"
#: the lowest CPU priority (nice 19) for the worker thread
WORKER_NICENESS = 19


@dataclass
class LiveCounts:
    offered: int = 0
    ignored: int = 0  # kinds that are not compared (overflow, exception dumps ...)
    dropped: int = 0  # the queue was full
    compared: int = 0  # files compared
    failed: int = 0  # files that gave no rows (the golden could not be read ...)


class LiveComparer:
    """Compares each announced dump file with ``golden`` (a directory or a
    :class:`Golden`) into ``table``. ``resolve`` maps an announced path to where the
    file is now (a replay or a remote viewer's mapping); the default keeps it."""

    def __init__(
        self,
        golden: str | Golden,
        options: CompareOptions | None = None,
        *,
        table: CompareTable | None = None,
        queue_size: int = 1024,
        resolve: Callable[[str], str] | None = None,
    ) -> None:
        self.options = options or CompareOptions()
        self.table = table or CompareTable(self.options.algorithms, self.options.thresholds)
        self.counts = LiveCounts()
        #: the last problem that stopped a file from being compared ("" while none)
        self.error = ""
        self._golden_spec = golden
        self._golden: Golden | None = golden if isinstance(golden, Golden) else None
        self._stats_bench: object | None = None
        self._resolve = resolve or (lambda path: path)
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue(maxsize=queue_size)
        self._producers = Producers()
        self._positions: dict[str, int] = {}
        self._idle = threading.Event()
        self._idle.set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ the UI side
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="aclmon-live-compare", daemon=True
            )
            self._thread.start()

    def offer(self, event: DumpFileSeen) -> bool:
        """Queue one announced file; never blocks. ``False``: not queued (a kind that
        is not compared, or the queue is full and the file was dropped)."""
        with self._lock:
            self.counts.offered += 1
            if event.kind not in TENSOR_KINDS and event.kind != STATS_KIND:
                self.counts.ignored += 1
                return False
            try:
                self._queue.put_nowait((event.path, event.kind))
            except queue.Full:
                self.counts.dropped += 1
                return False
            self._idle.clear()
            return True

    def offer_many(self, events: Iterable[object]) -> int:
        """Offer the ``DumpFileSeen`` among ``events`` (others are skipped); how many were queued."""
        return sum(1 for e in events if isinstance(e, DumpFileSeen) and self.offer(e))

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every queued file was compared (tests, ``--once`` modes)."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        while True:
            try:
                self._queue.put(None, timeout=0.1)  # the worker's cue to stop
                break
            except queue.Full:
                # make room: the files still waiting will not be compared
                with contextlib.suppress(queue.Empty):
                    self._queue.get_nowait()
        thread.join(timeout)

    # ------------------------------------------------------------ the worker
    def _run(self) -> None:
        lower_thread_priority()
        while True:
            item = self._queue.get()
            if item is None:
                return
            path, kind = item
            try:
                rows = self._compare(self._resolve(path), kind)
            except AclmonError as exc:
                rows = []
                self.error = str(exc)
            except Exception as exc:  # a bug must not kill the worker of a live session
                rows = []
                self.error = f"{os.path.basename(path)}: {type(exc).__name__}: {exc}"
            with self._lock:
                if rows:
                    self.counts.compared += 1
                else:
                    self.counts.failed += 1
            if rows:
                self.table.update(rows)
            if self._queue.empty():
                self._idle.set()

    def _golden_side(self) -> Golden:
        if self._golden is None:
            assert isinstance(self._golden_spec, str)
            self._golden = Golden(self._golden_spec)
        return self._golden

    def _position(self, key: str) -> int:
        if key not in self._positions:
            self._positions[key] = len(self._positions)
        return self._positions[key]

    def _compare(self, path: str, kind: str) -> list[CompareRow]:
        name = parse_dump_name(os.path.basename(path.removesuffix(".csv")))
        if kind == STATS_KIND:
            return self._compare_stats(path)
        if name is None:
            raise AclmonError(f"{os.path.basename(path)}: not an operator dump name")
        golden = self._golden_side()
        op = op_dump_of(path, name)
        index = self._position(op.key)
        producers = self._producers if golden.npy is not None else None
        return compare_op(op, index, index + 1, golden, self.options, producers)

    def _compare_stats(self, path: str) -> list[CompareRow]:
        from aclmon.dump.compare.statsmode import StatsSide, compare_stats_file

        golden = self._golden_side()
        if self._stats_bench is None:
            from aclmon.dump.compare.statsmode import load_stats

            files = golden.dumps.stats_files if golden.dumps is not None else []
            if not files:
                raise AclmonError(f"{golden.root}: no statistics CSVs to compare with")
            self._stats_bench = load_stats(files, golden.root)
        assert isinstance(self._stats_bench, StatsSide)
        return compare_stats_file(
            path, self._stats_bench, self._position, self.options.thresholds.stats_line
        )


def lower_thread_priority() -> None:
    """This thread at nice 19 (Linux threads have their own nice value); elsewhere a no-op."""
    get_id = getattr(threading, "get_native_id", None)
    setpriority = getattr(os, "setpriority", None)
    if get_id is None or setpriority is None:
        return
    with contextlib.suppress(OSError):
        setpriority(os.PRIO_PROCESS, get_id(), WORKER_NICENESS)
