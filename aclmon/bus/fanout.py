"""The publisher's pump: the ring's records to every viewer, in batches.

On the publisher's thread, each turn of its I/O loop takes what the ring holds
(within ``PUMP_TURN_S``, so that sockets are served between turns), builds the
records into events (or hands them to the observer, which gives them back ready
for the wire), packs each batch into one buffer of frames and hands that buffer
to every viewer. A viewer that cannot take a batch loses all of it (counted,
and told as a :class:`~aclmon.events.Drops` event by the publisher); when every
viewer would, the batch is never built, observed as events or packed: a stalled
viewer must not cost the job more than none.
"""

from __future__ import annotations

import collections
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from aclmon.bus.records import DropCount, Observer, Record, build_records
from aclmon.bus.viewers import Connection
from aclmon.events import KINDS
from aclmon.events.wire import HEADER, encode_frames, encode_segments

log = logging.getLogger("aclmon.bus")

#: most events packed into one batch (bounds one write and the pump's latency)
BATCH_EVENTS = 4096
#: longest one turn of the I/O loop spends taking records: a job that never stops
#: appending must not keep the loop from handshakes, reads and writes (it did: with
#: one viewer connected, every new one timed out)
PUMP_TURN_S = 0.02

#: the fewest bytes one event's frame takes: its length, then the array's header, the
#: kind, ``seq`` and ``ts_ns`` (at least one byte each)
_MIN_FRAME = HEADER.size + 4


def _name_of(event: Any) -> str:
    """What an event is, given as itself or as its array (kind first)."""
    if type(event) is tuple and event and type(event[0]) is int:
        cls = KINDS.get(event[0])
        return cls.__name__ if cls is not None else f"kind {event[0]}"
    return type(event).__name__


class Fanout:
    """Takes the records of ``ring`` (numbered from ``counter``) to the viewers, handing
    each its batches through ``send``; events lost before they were sent are counted in
    ``queue_drops``, those lost by a too slow viewer in ``subscriber_drops`` and its own
    count. ``observer``: see :class:`aclmon.bus.records.Observer`."""

    def __init__(
        self,
        ring: collections.deque[Record],
        counter: Iterator[int],
        observer: Observer | None,
        send: Callable[[Connection, bytes], None],
    ) -> None:
        self.ring = ring
        self.counter = counter
        self.observer = observer
        self.send = send
        self.queue_drops = DropCount()
        self.subscriber_drops = DropCount()
        #: the ring held records at the last turn (it is looked at often while they come)
        self.busy = False
        #: the last turn left records for the next one
        self.left = False

    def pump(self, connections: Iterable[Connection]) -> None:
        """Build the ring's records into events, pack them into buffers of frames and
        hand them to every viewer of ``connections`` past its handshake."""
        ring = self.ring
        counter = self.counter
        self.busy = bool(ring)
        # What is there now, within PUMP_TURN_S: records the job appends meanwhile
        # wait for the next turn, after the sockets had theirs.
        budget = len(ring)
        deadline = time.monotonic() + PUMP_TURN_S
        self.left = False
        while ring:
            if budget <= 0 or time.monotonic() > deadline:
                self.left = True
                break
            taken = min(len(ring), BATCH_EVENTS)
            records = list(itertools.starmap(ring.popleft, itertools.repeat((), taken)))
            budget -= taken
            receivers = [c for c in connections if c.ready]
            observer = self.observer
            if not receivers:
                # Nobody listening: nothing to pack. An observer takes the records as they
                # are; without one there is nothing even to number.
                if observer is not None:
                    self._fold(observer, records, counter)
                continue
            # A viewer loses this batch whatever it holds when its buffer cannot take
            # even the smallest frames of it, or has not moved since it lost the last
            # one (a viewer that stopped reading). When every viewer does, the batch is
            # counted and lost, never built, observed as events or packed.
            least = _MIN_FRAME * len(records)
            takers = [
                c
                for c in receivers
                if not c.out or (len(c.out) != c.lost_at and len(c.out) + least <= c.out_limit)
            ]
            if not takers and observer is not None:
                lost = len(records) - self._fold(observer, records, counter)
                self._lose(receivers, lost)
                continue
            if observer is None:
                batch, failed = build_records(records, counter)
                self.queue_drops.add(failed)
                count = len(batch)
                data = self._frames(encode_frames, batch) if takers and batch else b""
            else:
                # On this thread, in order, before anyone gets the batch (also when nobody
                # listens): what a snapshot says stays in step with what follows it.
                try:
                    segments, count, failed = observer.observe_records(records, counter)
                except Exception:
                    log.exception("event observer failed; a batch was lost")
                    self.queue_drops.add(len(records))
                    continue
                self.queue_drops.add(failed)
                data = self._frames(encode_segments, segments) if takers and count else b""
            if not count:
                continue
            for conn in receivers:
                # A subscriber with nothing waiting always gets the batch (the
                # kernel takes what it can, the rest waits), so its buffer holds
                # at most subscriber_buffer plus one batch.
                if conn not in takers or (conn.out and len(conn.out) + len(data) > conn.out_limit):
                    self._lose((conn,), count)
                    continue
                self.send(conn, data)

    def _fold(self, observer: Observer, records: list[Record], counter: Iterator[int]) -> int:
        """Hand ``records`` nobody will receive to the observer; how many failed to build
        (counted as lost)."""
        try:
            failed = observer.fold(records, counter)
        except Exception:
            log.exception("record fold failed; a batch was lost")
            failed = len(records)
        self.queue_drops.add(failed)
        return failed

    def _lose(self, receivers: Iterable[Connection], count: int) -> None:
        """``count`` events lost to each of ``receivers`` (too slow)."""
        for conn in receivers:
            conn.drops.add(count)
            self.subscriber_drops.add(count)
            conn.lost_at = len(conn.out)

    def _frames(self, encode: Callable[[Any], tuple[bytes, list[Any]]], batch: Any) -> bytes:
        """``batch`` (events, or segments: ``encode`` says) as frames in one buffer; an
        event msgpack cannot carry is dropped."""
        data, failed = encode(batch)
        for event, exc in failed:
            log.warning("unencodable %s dropped: %s", _name_of(event), exc)
        self.queue_drops.add(len(failed))
        return data
