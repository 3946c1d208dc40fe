"""Warnings a peer can trigger at will, aggregated so it cannot flood the job's stderr.

The first few of each kind in a minute are logged as they happen; the rest are
counted and summarised once the minute is over: ``N similar in the last
minute (latest: ...)``. ``flush()`` is called regularly by the owner (the
publisher's housekeeping) to write those summaries.
"""

from __future__ import annotations

import logging
import time

#: how long one aggregation window lasts
WINDOW_S = 60.0
#: warnings of one kind logged in full per window before they are only counted
BURST = 3


class _Window:
    __slots__ = ("latest", "logged", "started", "suppressed")

    def __init__(self, started: float) -> None:
        self.started = started
        self.logged = 0
        self.suppressed = 0
        self.latest = ""


class RateLimitedLog:
    """``warning(kind, msg, *args)`` on ``logger``, at most ``burst`` per kind per window."""

    def __init__(
        self, logger: logging.Logger, *, window: float = WINDOW_S, burst: int = BURST
    ) -> None:
        self._log = logger
        self._window = window
        self._burst = burst
        self._windows: dict[str, _Window] = {}

    def warning(self, kind: str, msg: str, *args: object) -> None:
        now = time.monotonic()
        window = self._windows.get(kind)
        if window is not None and now - window.started >= self._window:
            self._summarise(window)
            window = None
        if window is None:
            window = self._windows[kind] = _Window(now)
        if window.logged < self._burst:
            window.logged += 1
            self._log.warning(msg, *args)
        else:
            window.suppressed += 1
            window.latest = msg % args if args else msg

    def flush(self, *, force: bool = False) -> None:
        """Summarise every window that is over (all of them with ``force``)."""
        now = time.monotonic()
        for kind, window in list(self._windows.items()):
            if force or now - window.started >= self._window:
                self._summarise(window)
                del self._windows[kind]

    def _summarise(self, window: _Window) -> None:
        if window.suppressed:
            minutes = "minute" if self._window == WINDOW_S else f"{self._window:g} s"
            self._log.warning(
                "%d similar in the last %s (latest: %s)", window.suppressed, minutes, window.latest
            )
            window.suppressed = 0
