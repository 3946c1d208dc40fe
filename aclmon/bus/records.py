"""The records of the publisher's ring: what the job's threads append, and how the
publisher's thread turns them into numbered events.

A thread that emits pays for one tuple and one deque append; building the event
and giving it its sequence number happen later, on the publisher's thread, and
only when someone listens. :class:`aclmon.agent.context.MemorySink` numbers them
the same way without a socket.

A record names its builder by number (:func:`register_builder`) rather than by the
function itself: a tuple of numbers and strings is one the cyclic GC stops tracking
at the first collection it meets, so records waiting in the ring are never promoted
to the old generations, where each full collection of the job's whole heap would
walk them again (holding the function kept every record tracked, and with a reading
viewer the collections cost the job more than the hook itself).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from aclmon.events import KINDS, Event

log = logging.getLogger("aclmon.bus")

#: An entry of :attr:`aclmon.bus.publisher.Publisher.ring`: a plain tuple whose first
#: item is the number of the :data:`Builder` of its event (:func:`register_builder`),
#: or the builder itself (a record that holds a function stays tracked by the GC); or
#: a ready event itself (an instance of an event class, never a plain tuple), sent as
#: it is, its ``seq`` kept (:meth:`~aclmon.bus.publisher.Publisher.publish`).
Record = tuple[Any, ...]
#: ``builder(counter, record) -> Event | None`` makes the event of ``record``, taking
#: ``next(counter)`` as its sequence number only when it returns an event. It runs on
#: the publisher's thread, and only when someone listens.
Builder = Callable[[Iterator[int], Record], Any]

#: the registered builders, by number
_BUILDERS: list[Builder] = []

_tuple_new = tuple.__new__


class Observer(Protocol):
    """What the publisher's thread shows every event to (the agent's history), in
    order, before anyone gets it."""

    def observe(self, batch: list[Event]) -> list[Event]:
        """Take one batch of events; returns it, events possibly replaced."""
        ...

    def observe_records(
        self, records: list[Record], counter: Iterator[int]
    ) -> tuple[list[Any], int, int]:
        """Take the records of events viewers will receive, in place of
        :func:`build_records` and :meth:`observe` on their events: every event back, in
        order, as segments for :func:`aclmon.events.wire.encode_segments` (lists of the
        arrays the wire carries, ``(kind, seq, ts_ns, ...)``, and buffers of frames);
        how many events they hold; and how many records failed to build."""
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


def register_builder(builder: Builder) -> int:
    """The number records give to name ``builder``. Register a builder once (the
    numbers are never freed), not once per record or per call."""
    _BUILDERS.append(builder)
    return len(_BUILDERS) - 1


def builder_of(named: Any) -> Builder:
    """The builder a record's first item names (a number, or the builder itself)."""
    return _BUILDERS[named] if type(named) is int else named


def build_plain(counter: Iterator[int], record: Record) -> Event:
    """The record ``(PLAIN, kind, ts_ns, fields)``: the event ``KINDS[kind](seq, ts_ns,
    *fields)``."""
    event: Event = _tuple_new(KINDS[record[1]], (next(counter), record[2], *record[3]))
    return event


def build_numbered(counter: Iterator[int], record: Record) -> Event:
    """The record ``(NUMBERED, event)``: a ready event, given the next number."""
    ready: Event = record[1]
    event: Event = _tuple_new(type(ready), (next(counter), *ready[1:]))
    return event


#: the numbers of the bus's own builders
PLAIN = register_builder(build_plain)
NUMBERED = register_builder(build_numbered)


def build_records(records: Iterable[Record], counter: Iterator[int]) -> tuple[list[Event], int]:
    """The events of ``records`` in order, and how many records failed to build
    (skipped: a bad record must not stop the others, nor take a number)."""
    events: list[Any] = []
    append = events.append
    builders = _BUILDERS
    failed = 0
    for record in records:
        if type(record) is not tuple:  # a ready event
            append(record)
            continue
        try:
            build = record[0]
            if type(build) is int:
                build = builders[build]
            event = build(counter, record)
        except Exception as exc:
            failed += 1
            if failed == 1:
                log.warning("event record dropped: %s: %s", type(exc).__name__, exc)
            continue
        if event is not None:
            append(event)
    return events, failed
