"""A running agent, through the bus :class:`~aclmon.bus.Subscriber`."""

from __future__ import annotations

from typing import Any

from aclmon import events as ev
from aclmon.bus.states import CONNECTING, DISCONNECTED
from aclmon.errors import CommandRefused
from aclmon.sources.base import Source

#: seconds the subscriber lets a slow stream gather between reads until told the
#: viewer's pace (:meth:`LiveSource.pace`: the app's refresh interval)
COALESCE_S = 0.1


class LiveSource(Source):
    """One agent's events and its command channel (``readonly``: none)."""

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        readonly: bool = False,
        description: str | None = None,
    ) -> None:
        from aclmon.bus import Subscriber  # the bus imports sockets and threads: only when used

        self._subscriber = Subscriber(address, token=token, readonly=readonly, coalesce=COALESCE_S)
        self.address = address
        self.readonly = readonly
        self.description = description or address

    def start(self) -> None:
        self._subscriber.start()

    @property
    def state(self) -> str:
        return self._subscriber.state

    @property
    def state_reason(self) -> str:
        return self._subscriber.state_reason

    def poll(self, max_events: int) -> list[ev.Event]:
        return list(self._subscriber.poll(max_events, 0))

    def send_command(self, cls: type, *fields: Any, timeout: float = 3.0) -> ev.Reply:
        if self.readonly:
            raise CommandRefused("read-only: commands are not sent")
        return self._subscriber.send_command(cls, *fields, timeout=timeout)

    def decoder_counts(self) -> tuple[int, int]:
        return (self._subscriber.malformed, self._subscriber.unknown)

    def pace(self, seconds: float) -> None:
        # A viewer polls once a refresh: reading more often only wakes the thread
        # to decode a few events at a time, each wake-up with cold caches (at the
        # demo's rate, 0.23 ms of CPU a read of ~16 events, 10 reads a second).
        self._subscriber.coalesce = seconds

    def close(self) -> None:
        self._subscriber.close()

    def stop_reconnecting(self) -> None:
        if self._subscriber.state in (DISCONNECTED, CONNECTING):
            self._subscriber.close()
