"""The host source: a back end refreshed on its own thread, read without waiting.

A screen calls :meth:`HostSource.latest` and :meth:`HostSource.status` on its
timer; neither ever blocks. The refresh thread opens the back end (loading a
library can itself hang) and refreshes it every ``interval``. When a refresh has
not returned after ``stall_after`` seconds the status says so (npu-smi runs are
killed at their own timeout; a DCMI call cannot be interrupted, so the thread
waits for it while the screen keeps the last good snapshot and the status line).

``collect_once`` is the same for ``--once``: one refresh with a deadline.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from aclmon.errors import AclmonError
from aclmon.events.host import HostSnapshot, SourceName
from aclmon.host.dcmi import DcmiBackend, DcmiUnavailable, find_dcmi_library
from aclmon.host.npusmi import DEFAULT_TIMEOUT, Details, NpuSmiBackend, find_npu_smi

Preference = Literal["auto", "dcmi", "npu-smi"]
#: how long a source without a back end waits before looking for one again
UNAVAILABLE_RETRY_S = 60.0


class Backend(Protocol):
    """What the host source refreshes: DCMI, npu-smi, or the simulator's DCMI."""

    @property
    def source(self) -> SourceName: ...

    def refresh(self) -> HostSnapshot: ...

    def close(self) -> None: ...


class HostUnavailable(AclmonError):
    """Neither DCMI nor npu-smi can be used on this host (the message says what was tried)."""


def open_backend(
    prefer: Preference = "auto",
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    details: Details = "rotate",
) -> Backend:
    """DCMI when its library loads and initialises, else npu-smi (``prefer`` forces one)."""
    tried: list[str] = []
    if prefer in ("auto", "dcmi"):
        path = find_dcmi_library(env)
        if path is None:
            tried.append("no libdcmi.so (set ACLMON_DCMI_LIBRARY)")
        else:
            try:
                return DcmiBackend.load(path)
            except DcmiUnavailable as exc:
                tried.append(str(exc))
    if prefer in ("auto", "npu-smi"):
        command = find_npu_smi(env)
        if command is None:
            tried.append("no npu-smi on PATH (set ACLMON_NPU_SMI)")
        else:
            return NpuSmiBackend(command, timeout=timeout, details=details)
    raise HostUnavailable("; ".join(tried))


def unavailable_snapshot(message: str) -> HostSnapshot:
    return HostSnapshot(
        source=None, state="unavailable", message=message, processes=None, taken_ns=time.time_ns()
    )


def _error_text(exc: Exception) -> str:
    return str(exc) if isinstance(exc, AclmonError) else f"{type(exc).__name__}: {exc}"


StatusState = Literal["starting", "ok", "partial", "timeout", "failed", "unavailable", "stalled"]


@dataclass(frozen=True)
class HostStatus:
    """One line for a status bar: the state, why, and how old the data shown is."""

    state: StatusState
    message: str | None
    #: seconds since the snapshot on screen was taken (None: nothing yet).
    age_s: float | None

    def line(self) -> str:
        text = self.state if self.message is None else f"{self.state}: {self.message}"
        if self.age_s is not None and self.state not in ("ok", "partial"):
            text += f" (showing data from {self.age_s:.0f} s ago)"
        return text


class HostSource:
    """Refreshes a back end every ``interval`` seconds on a daemon thread."""

    def __init__(
        self,
        open_backend: Callable[[], Backend],
        *,
        interval: float = 1.0,
        stall_after: float = DEFAULT_TIMEOUT,
        on_snapshot: Callable[[HostSnapshot], None] | None = None,
    ) -> None:
        self._open = open_backend
        self.interval = interval
        self.stall_after = stall_after
        self._on_snapshot = on_snapshot
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: HostSnapshot | None = None
        self._last_good: HostSnapshot | None = None
        self._busy_since: float | None = None
        self._version = 0

    def start(self) -> None:
        if self._thread is None:
            self._busy_since = time.monotonic()
            self._thread = threading.Thread(target=self._run, name="aclmon-host", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stops refreshing; a call still running finishes on its own (daemon thread)."""
        self._closed.set()
        self._wake.set()

    def refresh_soon(self) -> None:
        """Refresh now instead of at the end of the interval (a key press)."""
        self._wake.set()

    @property
    def version(self) -> int:
        """Bumped at every new snapshot (a screen redraws when it moved)."""
        return self._version

    @property
    def refreshing(self) -> bool:
        """A refresh (or the opening of the back end) is running now."""
        return self._busy_since is not None

    def latest(self) -> HostSnapshot | None:
        """The newest snapshot with data (a failed refresh keeps the previous one)."""
        with self._lock:
            return self._last_good if self._last_good is not None else self._last

    def status(self) -> HostStatus:
        with self._lock:
            last, good, busy = self._last, self._last_good, self._busy_since
        now = time.monotonic()
        age = None if good is None else max(0.0, (time.time_ns() - good.taken_ns) / 1e9)
        if busy is not None and now - busy > self.stall_after:
            what = "starting" if last is None else "refresh"
            return HostStatus("stalled", f"the {what} has not returned for {now - busy:.0f} s", age)
        if last is None:
            return HostStatus("starting", None, None)
        return HostStatus(last.state, last.message, age)

    def _run(self) -> None:
        backend: Backend | None = None
        try:
            while not self._closed.is_set():
                self._mark_busy()
                if backend is None:
                    try:
                        backend = self._open()
                    except Exception as exc:  # no back end: say why, try again later
                        self._publish(unavailable_snapshot(_error_text(exc)))
                        # rarely: looking costs (the linker cache, a compiler run) and a
                        # host without NPUs seldom grows some; refresh_soon() asks now
                        self._wait(max(self.interval, UNAVAILABLE_RETRY_S))
                        continue
                try:
                    snapshot = backend.refresh()
                except Exception as exc:  # a back end bug must not end the thread
                    snapshot = HostSnapshot(
                        source=backend.source,
                        state="failed",
                        message=f"refresh failed: {_error_text(exc)}",
                        processes=None,
                        taken_ns=time.time_ns(),
                    )
                self._publish(snapshot)
                self._wait(self.interval)
        finally:
            if backend is not None:
                backend.close()

    def _mark_busy(self) -> None:
        with self._lock:
            self._busy_since = time.monotonic()

    def _wait(self, seconds: float) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def _publish(self, snapshot: HostSnapshot) -> None:
        with self._lock:
            self._busy_since = None
            self._last = snapshot
            if snapshot.devices or self._last_good is None:
                self._last_good = snapshot
            self._version += 1
        if self._on_snapshot is not None:
            # A consumer's bug must not stop the refreshes everyone else reads.
            with contextlib.suppress(Exception):
                self._on_snapshot(snapshot)


def collect_once(open_backend: Callable[[], Backend], timeout: float) -> HostSnapshot:
    """One refresh, waiting at most ``timeout`` s (a hung library cannot hold ``--once``)."""
    result: list[HostSnapshot] = []
    opened: list[SourceName] = []
    done = threading.Event()

    def work() -> None:
        backend: Backend | None = None
        try:
            backend = open_backend()
            opened.append(backend.source)
            result.append(backend.refresh())
        except Exception as exc:
            result.append(
                unavailable_snapshot(_error_text(exc))
                if backend is None
                else HostSnapshot(
                    source=backend.source,
                    state="failed",
                    message=f"refresh failed: {_error_text(exc)}",
                    processes=None,
                    taken_ns=time.time_ns(),
                )
            )
        finally:
            if backend is not None:
                backend.close()
            done.set()

    threading.Thread(target=work, name="aclmon-host-once", daemon=True).start()
    if not done.wait(timeout) or not result:
        what = opened[0] if opened else "the host's NPU tools"
        return HostSnapshot(
            source=opened[0] if opened else None,
            state="timeout",
            message=f"no answer from {what} in {timeout:g} s",
            processes=None,
            taken_ns=time.time_ns(),
        )
    return result[0]
