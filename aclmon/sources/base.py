"""Where the viewer's events come from.

The app talks only to :class:`Source`: it polls batches on its timer (never
blocking), and sends commands from a worker thread (``send_command`` may wait
for the agent's reply). A live agent, a fixed list (tests, snapshots), a
recording being replayed, a dump directory and one rank of a fleet all fit
behind it, so the app never asks what kind of source it has: every method it
calls is declared here, with the default that suits a source without an agent.
"""

from __future__ import annotations

import itertools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from aclmon import events as ev
from aclmon.bus.states import CONNECTED, ENDED
from aclmon.errors import CommandRefused


class Source(ABC):
    """A stream of events plus, when there is an agent behind it, a command channel."""

    #: shown in the header: what we are watching.
    description: str = ""
    #: shown first in the header when the source is one of many (a fleet's "rank 3").
    title: str = ""
    #: never sends commands (``--readonly``, or a source that has no agent).
    readonly: bool = True
    #: events are being written to a recording as they arrive.
    recording: bool = False

    def start(self) -> None:  # noqa: B027 (optional hook: most sources have nothing to start)
        """Begin connecting or reading in the background; must not block."""

    @property
    @abstractmethod
    def state(self) -> str:
        """One of :mod:`aclmon.bus.states` (a replay adds ``playing``/``paused``)."""

    @property
    def state_reason(self) -> str:
        """Why the state is not ``connected`` (the last connection error), or ``""``."""
        return ""

    @abstractmethod
    def poll(self, max_events: int) -> list[ev.Event]:
        """Up to ``max_events`` events that arrived since the last poll; never blocks."""

    def send_command(self, cls: type, *fields: Any, timeout: float = 3.0) -> ev.Reply:
        """Send one command (``fields`` after ``request_id``, which the source
        assigns) and wait for its reply. Call it off the UI thread; raises an
        :class:`~aclmon.errors.AclmonError` when the command cannot be sent or gets
        no reply (:class:`~aclmon.errors.CommandRefused` when it is not sent)."""
        raise CommandRefused("this source has no agent to send commands to")

    def decoder_counts(self) -> tuple[int, int]:
        """(malformed, unknown) input the source skipped so far."""
        return (0, 0)

    def resolve_path(self, path: str) -> str:
        """Where a file the events name is found now (a replayed recording names
        files where the job wrote them; they may have moved since)."""
        return path

    def stop_reconnecting(self) -> None:  # noqa: B027 (optional hook: only live sources retry)
        """The job said goodbye: stop trying to reach it (called on the UI
        thread; must not block)."""

    def finish_reading(self, timeout: float) -> None:  # noqa: B027 (optional hook)
        """Wait up to ``timeout`` s for what the source reads on its own in the
        background (a dump directory's scan), so a one-shot answer holds all of it."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Stop background work and release sockets or files."""


class ListSource(Source):
    """A fixed list of events, delivered in order across polls.

    ``agent`` stands in for an agent: it receives each command as an event and
    returns the reply, so tests can check what the app sends. Without it, the
    source refuses commands.
    """

    def __init__(
        self,
        events: Sequence[ev.Event],
        *,
        description: str = "fixed events",
        agent: Callable[[Any], ev.Reply] | None = None,
        readonly: bool = False,
    ) -> None:
        self._events = list(events)
        self._next = 0
        self._lock = threading.Lock()
        self._agent = agent
        self._request_clock = ev.Clock()
        self._request_ids = itertools.count(1)
        self.description = description
        self.readonly = readonly or agent is None
        self.sent: list[Any] = []

    @property
    def state(self) -> str:
        return ENDED if self._next >= len(self._events) else CONNECTED

    def extend(self, events: Sequence[ev.Event]) -> None:
        with self._lock:
            self._events.extend(events)

    def poll(self, max_events: int) -> list[ev.Event]:
        with self._lock:
            start = self._next
            self._next = min(len(self._events), start + max_events)
            return self._events[start : self._next]

    def send_command(self, cls: type, *fields: Any, timeout: float = 3.0) -> ev.Reply:
        if self.readonly or self._agent is None:
            raise CommandRefused("read-only: commands are not sent")
        command = self._request_clock.make(cls, next(self._request_ids), *fields)
        self.sent.append(command)
        return self._agent(command)
