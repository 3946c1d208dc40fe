"""The JetStream streams of the fleet: one per subject class, their limits, and
their creation by a relay (``aclmon relay`` makes those missing unless
``--no-setup-streams``; sizing in docs/fleet.md, "Streams and their sizing")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aclmon.fleet import subjects as sj
from aclmon.fleet.connect import NatsError

#: ephemeral consumers a stream the relay creates allows (viewers make one or two each)
DEFAULT_MAX_CONSUMERS = 256


@dataclass(frozen=True)
class StreamLimits:
    """JetStream limits of one class's stream."""

    max_age_s: float
    max_bytes: int
    max_msgs_per_subject: int = -1
    max_consumers: int = DEFAULT_MAX_CONSUMERS


#: defaults sized in docs/fleet.md ("Streams and their sizing").
DEFAULT_STREAM_LIMITS: dict[str, StreamLimits] = {
    sj.EVENTS: StreamLimits(600, 1 << 30),
    sj.SUMMARY: StreamLimits(6 * 3600, 1 << 30),
    sj.ALERTS: StreamLimits(7 * 86400, 256 << 20),
    sj.STATE: StreamLimits(86400, 64 << 20, 1),
}


async def ensure_streams(
    nc: Any, limits: dict[str, StreamLimits], note: Callable[[str], None]
) -> None:
    """Create the class streams that do not exist yet (file storage, limits)."""
    from nats.js.api import DiscardPolicy, StorageType, StreamConfig
    from nats.js.errors import NotFoundError

    js = nc.jetstream()
    for cls, name in sj.STREAMS.items():
        wanted = limits[cls]
        try:
            await js.stream_info(name)
            continue
        except NotFoundError:
            pass
        except Exception as exc:  # a timeout: no answer for a relay without JetStream API rights
            raise NatsError(
                f"cannot look up stream {name} ({type(exc).__name__}: {exc}); a relay whose"
                " credentials may not use the JetStream API runs with --no-setup-streams"
                " (an operator creates the streams)"
            ) from exc
        subject = sj.subject("*", "*", "*", cls)
        config = StreamConfig(
            name=name,
            subjects=[subject],
            storage=StorageType.FILE,
            max_age=wanted.max_age_s,
            max_bytes=wanted.max_bytes,
            max_msgs_per_subject=wanted.max_msgs_per_subject,
            max_consumers=wanted.max_consumers,
            discard=DiscardPolicy.OLD,
        )
        try:
            await js.add_stream(config)
        except Exception as exc:  # nats-py raises its API errors with the server's text
            raise NatsError(f"cannot create stream {name}: {exc}") from exc
        note(f"created stream {name} on {subject}")
