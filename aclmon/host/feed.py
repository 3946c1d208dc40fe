"""The host source as events: each snapshot becomes a ``HostNpuSample`` for a store.

A viewer that shows the Host view (``aclmon top``, the Host view of attach and
demo) and ``aclmon record --host`` run one :class:`HostFeed`. Its snapshots are
turned into events on the refresh thread (never the UI's) and kept in a short
ring; each consumer reads them through its own :class:`FeedReader`, so a screen
opened later (a job's screens entered from ``aclmon top``) starts with the
last minutes of history, and one that comes back catches up on what it missed.

The events carry ``seq = 0``: they are state of the viewer's own making, outside
the sequence of the agent whose events share the store. Which processes run
aclmon's agent comes from ``agent_pids`` (the caller passes the registry: the
host package does not import the bus).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable

from aclmon import events as ev
from aclmon.events.host import HostSnapshot
from aclmon.host.npusmi import DEFAULT_TIMEOUT
from aclmon.host.source import Backend, HostSource, HostStatus

#: samples a new reader starts with (two minutes at the default interval)
KEPT_SAMPLES = 120


class HostFeed:
    """A :class:`HostSource` whose snapshots become events for any number of readers."""

    def __init__(
        self,
        open_backend: Callable[[], Backend],
        *,
        interval: float = 1.0,
        stall_after: float = DEFAULT_TIMEOUT,
        agent_pids: Callable[[], Iterable[int]] = tuple,
        hostname: str | None = None,
        kept: int = KEPT_SAMPLES,
    ) -> None:
        self.hostname = hostname or socket.gethostname()
        self._agent_pids = agent_pids
        self._lock = threading.Lock()
        self._events: deque[ev.HostNpuSample] = deque(maxlen=kept)
        #: the number of the oldest event kept (events are numbered from 0 as they come)
        self._first = 0
        self.source = HostSource(
            open_backend, interval=interval, stall_after=stall_after, on_snapshot=self._add
        )

    def start(self) -> None:
        self.source.start()

    def close(self) -> None:
        self.source.close()

    def status(self) -> HostStatus:
        """How the back end is doing now (never blocks)."""
        return self.source.status()

    def refresh_soon(self) -> None:
        self.source.refresh_soon()

    def reader(self) -> FeedReader:
        """A cursor that starts at the oldest event still kept."""
        with self._lock:
            return FeedReader(self, self._first)

    def _since(self, number: int) -> tuple[list[ev.HostNpuSample], int]:
        with self._lock:
            start = max(number, self._first)
            events = list(self._events)[start - self._first :]
            return events, start + len(events)

    def _add(self, snapshot: HostSnapshot) -> None:
        """On the refresh thread: the snapshot as an event, agents joined by pid."""
        agents: Iterable[int] = ()
        with contextlib.suppress(Exception):  # a broken registry must not stop the readings
            agents = self._agent_pids()
        present = {p.pid for p in snapshot.processes or ()}
        event = ev.HostNpuSample(
            0,
            snapshot.taken_ns,
            self.hostname,
            snapshot.to_plain(),
            tuple(sorted({pid for pid in agents if pid in present})),
        )
        with self._lock:
            if len(self._events) == self._events.maxlen:
                self._first += 1
            self._events.append(event)


class FeedReader:
    """One consumer's position in a :class:`HostFeed`."""

    def __init__(self, feed: HostFeed, start: int) -> None:
        self.feed = feed
        self._next = start

    def take(self) -> list[ev.HostNpuSample]:
        """The events since the last call (never blocks for long: a lock, a copy)."""
        events, self._next = self.feed._since(self._next)
        return events

    def status(self) -> HostStatus:
        return self.feed.status()
