"""The records of the publisher's ring: what the job's threads append, and how the
publisher's thread turns them into numbered events.

A thread that emits pays for one tuple and one deque append; building the event
and giving it its sequence number happen later, on the publisher's thread, and
only when someone listens. :class:`aclmon.agent.context.MemorySink` numbers them
the same way without a socket.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, Protocol

from aclmon.events import Event

log = logging.getLogger("aclmon.bus")

#: An entry of :attr:`aclmon.bus.publisher.Publisher.ring`: a tuple whose first item
#: builds the event, ``record[0](counter, record) -> Event | None``, taking
#: ``next(counter)`` as its sequence number only when it returns an event. It runs
#: on the publisher's thread, and only when someone listens.
Record = tuple[Any, ...]

_tuple_new = tuple.__new__


class Observer(Protocol):
    """What the publisher's thread shows every event to (the agent's history), in
    order, before anyone gets it."""

    def observe(self, batch: list[Event]) -> list[Event]:
        """Take one batch of events; returns it, events possibly replaced."""
        ...

    def fold(self, records: list[Record], counter: Iterator[int]) -> int:
        """Take records nobody will receive, in place of :func:`build_records` and
        :meth:`observe` on their events: leave the observer and ``counter`` as those
        would. Returns how many records failed to build."""
        ...


class DropCount:
    """Events lost before they were sent: counted from any thread, and told (as a
    Drops event) at most once per interval while the count moves."""

    def __init__(self) -> None:
        self.total = 0
        self._told = 0
        self._told_at = 0.0
        self._lock = threading.Lock()

    def add(self, count: int = 1) -> None:
        if count:
            with self._lock:
                self.total += count

    def due(self, now: float, interval: float) -> bool:
        """Whether the count moved since it was last told, at least ``interval`` s
        ago; if so it counts as told now."""
        if self.total == self._told or now - self._told_at < interval:
            return False
        self._told, self._told_at = self.total, now
        return True


def build_plain(counter: Iterator[int], record: Record) -> Event:
    """The record ``(build_plain, cls, ts_ns, fields)``: the event ``cls(seq, ts_ns, *fields)``."""
    event: Event = _tuple_new(record[1], (next(counter), record[2], *record[3]))
    return event


def build_numbered(counter: Iterator[int], record: Record) -> Event:
    """The record ``(build_numbered, event)``: a ready event, given the next number."""
    ready: Event = record[1]
    event: Event = _tuple_new(type(ready), (next(counter), *ready[1:]))
    return event


def build_ready(counter: Iterator[int], record: Record) -> Event:
    """The record ``(build_ready, event)``: the event as it was made, its ``seq``
    kept (:meth:`~aclmon.bus.publisher.Publisher.publish`); takes no number."""
    event: Event = record[1]
    return event


def build_records(records: Iterable[Record], counter: Iterator[int]) -> tuple[list[Event], int]:
    """The events of ``records`` in order, and how many records failed to build
    (skipped: a bad record must not stop the others, nor take a number)."""
    events: list[Event] = []
    append = events.append
    failed = 0
    for record in records:
        try:
            event = record[0](counter, record)
        except Exception as exc:
            failed += 1
            if failed == 1:
                log.warning("event record dropped: %s: %s", type(exc).__name__, exc)
            continue
        if event is not None:
            append(event)
    return events, failed


def skip_numbers(counter: Iterator[int], count: int) -> None:
    """Take ``count`` numbers from ``counter`` (``count`` > 0), for records counted
    without their events being built."""
    next(islice(counter, count - 1, None))
