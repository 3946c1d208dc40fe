"""A compare against a golden run, beside what a viewer reads (``--golden``).

The Compare view reads a :class:`GoldenCompare`: its ``table`` (a
:class:`~aclmon.dump.compare.table.CompareTable`, safe to read from the UI
thread) and a one-line ``status``. Two kinds fill the table, both off the UI
thread and at the lowest CPU priority, so neither the screen nor a job
sharing the machine waits for them:

* :class:`DirectoryCompare` (``aclmon replay DIR --golden G``): the whole dump
  directory at once, as ``aclmon compare`` does it (execution order, the first
  divergent operator, ``.npy`` goldens linked through producers);
* :class:`LiveCompare` (``aclmon attach … --golden G``): each dump file the
  agent announces, as it lands (the viewer's poll hands over its events; a
  full queue drops files, counted).

The job's process does no more than it already did: the agent only names the
files; the viewer reads them.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aclmon.dump.compare.engine import CompareOptions, run_compare
from aclmon.dump.compare.live import LiveComparer, lower_thread_priority
from aclmon.dump.compare.matching import Golden
from aclmon.dump.compare.table import CompareTable
from aclmon.errors import AclmonError


@dataclass(frozen=True)
class CompareStatus:
    """How the compare stands: ``busy`` while files wait, ``text`` for the status
    line, ``error`` the last problem ("" while none)."""

    busy: bool
    text: str
    error: str = ""


def check_golden(path: str) -> str:
    """``--golden PATH`` as given: an existing directory (what it holds is read
    later, off the UI thread), else one clear error."""
    if not os.path.isdir(path):
        raise AclmonError(f"--golden {path}: not a directory")
    return path


class GoldenCompare(ABC):
    """What the Compare view reads; the app starts it, offers it each polled batch
    and closes it."""

    #: the golden directory as given
    golden: str
    #: what is compared against it (a directory, or "live dump files")
    mine: str
    table: CompareTable
    #: rows arrive as the job writes dumps (a view follows them) rather than all at once
    live: bool = False

    @abstractmethod
    def start(self) -> None:
        """Begin in the background; never blocks."""

    def offer(self, events: Sequence[object]) -> None:  # noqa: B027 (only a live compare takes files)
        """A batch of events the viewer polled (never blocks)."""

    @property
    @abstractmethod
    def status(self) -> CompareStatus: ...

    @property
    def notes(self) -> tuple[str, ...]:
        """What the compare has to say beside its rows (earlier dumps left out …)."""
        return ()

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Stop the background work (a daemon thread: never waited on for long)."""


class DirectoryCompare(GoldenCompare):
    """``my_root`` against ``golden``, once, in a daemon thread at nice 19."""

    def __init__(self, my_root: str, golden: str, options: CompareOptions | None = None) -> None:
        self.mine = my_root
        self.golden = golden
        self.options = options or CompareOptions()
        self.table = CompareTable(self.options.algorithms, self.options.thresholds)
        self._error = ""
        self._notes: tuple[str, ...] = ()
        self._operators = 0
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="aclmon-golden-compare", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        lower_thread_priority()
        try:
            result = run_compare(self.mine, Golden(self.golden), self.options)
            self._notes = tuple(result.notes)
            self._operators = result.op_count
            self.table.set_rows(result.rows)
        except AclmonError as exc:
            self._error = str(exc)
        except Exception as exc:  # a bug must not take the viewer down: said on the status line
            self._error = f"{type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the compare to finish (tests, one-shot answers)."""
        return self._done.wait(timeout)

    @property
    def status(self) -> CompareStatus:
        if not self._done.is_set():
            return CompareStatus(True, f"comparing {self.mine} with {self.golden}…")
        if self._error:
            return CompareStatus(False, f"compare failed: {self._error}", self._error)
        return CompareStatus(False, f"{self._operators} operator(s) compared")

    @property
    def notes(self) -> tuple[str, ...]:
        return self._notes


class LiveCompare(GoldenCompare):
    """Each announced dump file against ``golden`` as it lands (a
    :class:`~aclmon.dump.compare.live.LiveComparer`); ``resolve`` maps an announced
    path to where the file is now (the source's ``resolve_path``)."""

    live = True

    def __init__(
        self,
        golden: str,
        options: CompareOptions | None = None,
        *,
        resolve: Callable[[str], str] | None = None,
        queue_size: int = 1024,
    ) -> None:
        self.golden = golden
        self.mine = "the dump files the job writes"
        self.comparer = LiveComparer(golden, options, resolve=resolve, queue_size=queue_size)
        self.table = self.comparer.table

    def start(self) -> None:
        self.comparer.start()

    def offer(self, events: Sequence[object]) -> None:
        self.comparer.offer_many(events)

    @property
    def status(self) -> CompareStatus:
        counts, pending = self.comparer.counts, self.comparer.pending
        parts = [f"{counts.compared} file(s) compared"]
        if pending:
            parts.append(f"{pending} waiting")
        if counts.dropped:
            parts.append(f"{counts.dropped} dropped (queue full)")
        if counts.failed:
            parts.append(f"{counts.failed} not compared")
        error = self.comparer.error
        if error:
            parts.append(f"last problem: {error}")
        return CompareStatus(bool(pending), ", ".join(parts), error)

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self.comparer.wait_idle(timeout)

    def close(self) -> None:
        self.comparer.close(timeout=1.0)
