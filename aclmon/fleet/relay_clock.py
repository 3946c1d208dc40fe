"""A relay's host clock against the NATS server's.

The relay stores a few empty probe messages in ``ACLMON_EVENTS`` (on
``aclmon._clock.<host>.0.events``, a subject no job uses) and reads back the
time the server stamped on each; the probe with the shortest round trip gives
the offset, within half that round trip (docs/fleet.md, "The first anomaly
across ranks")."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from aclmon import events as ev
from aclmon.events.wire import encode_frame
from aclmon.fleet import subjects as sj
from aclmon.fleet.connect import NatsError

if TYPE_CHECKING:
    from aclmon.fleet.relay import Relay

DEFAULT_CLOCK_EVERY_S = 30.0
#: probes per clock measurement (the one with the shortest round trip counts)
CLOCK_PROBES = 5
#: the job token of the clock probes' subject (a leading "_": no job is named so)
CLOCK_JOB = "_clock"


async def measure_clock(nc: Any, host: str) -> tuple[int, int]:
    """(offset_ns, uncertainty_ns) of this host's clock against the server's: add
    the offset to a time of this host to get the server's. Raises NatsError."""
    js = nc.jetstream()
    subject = sj.subject(CLOCK_JOB, host, 0, sj.EVENTS)
    probes: list[tuple[int, int, int]] = []
    for _ in range(CLOCK_PROBES):
        try:
            sent = time.time_ns()
            ack = await js.publish(subject, b"")
            acked = time.time_ns()
            stored = await js.get_msg(ack.stream, ack.seq)
        except Exception as exc:  # no JetStream, no permission on the stream's API
            raise NatsError(f"cannot measure the clock against the server: {exc}") from exc
        if stored.time is not None:
            probes.append((sent, acked, _epoch_ns(stored.time)))
    measured = clock_offset(probes)
    if measured is None:
        raise NatsError("the server stamped no time on the clock probes")
    return measured


def clock_offset(probes: list[tuple[int, int, int]]) -> tuple[int, int] | None:
    """(offset_ns, uncertainty_ns) from clock probes ``(sent, acked, stored)``: the
    server stamped each (``stored``, its clock) between its send and its ack (this
    host's clock), so the probe least delayed, the one with the shortest round
    trip, is taken at its midpoint, off by at most half that round trip. None
    without a probe."""
    best = min(probes, key=lambda probe: probe[1] - probe[0], default=None)
    if best is None:
        return None
    sent, acked, stored = best
    return stored - (sent + acked) // 2, (acked - sent) // 2


def _epoch_ns(stamp: Any) -> int:
    """A server time stamp (an aware datetime) as ns since the epoch, exactly (no float)."""
    from datetime import datetime, timezone

    delta = stamp - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


async def keep_clock(relay: Relay, stop: asyncio.Event) -> None:
    """Measure the clock now and every ``clock_every_s``; tell every agent's viewers."""
    warned = False
    while not stop.is_set():
        try:
            offset, uncertainty = await relay.measure_clock()
        except NatsError as exc:
            if not warned:
                relay.note(f"{exc}; viewers will compare this host's times as they are")
                warned = True
        else:
            event = ev.ClockOffset(0, time.time_ns(), relay.host, offset, uncertainty)
            relay.clock_frame = encode_frame(ev.encode(event))
            for link in list(relay.links.values()):
                link.clock_pending = True
                relay.wait_for(link)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), relay.clock_every_s)
