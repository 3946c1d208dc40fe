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
from typing import TYPE_CHECKING, Any

from aclmon import events as ev
from aclmon.bus.states import CONNECTED, ENDED
from aclmon.errors import CommandRefused

if TYPE_CHECKING:
    from aclmon.host.source import HostStatus


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

    def pace(self, seconds: float) -> None:  # noqa: B027 (optional hook: only live sources read ahead)
        """The viewer polls every ``seconds``: a source reading in the background
        may let a slow stream gather that long between reads."""

    def resolve_path(self, path: str) -> str:
        """Where a file the events name is found now (a replayed recording names
        files where the job wrote them; they may have moved since)."""
        return path

    def why_gone(self, path: str) -> str:
        """Why a file the events name is not there, in words."""
        return "it was deleted or moved since the job wrote it"

    def stop_reconnecting(self) -> None:  # noqa: B027 (optional hook: only live sources retry)
        """The job said goodbye: stop trying to reach it (called on the UI
        thread; must not block)."""

    def finish_reading(self, timeout: float) -> None:  # noqa: B027 (optional hook)
        """Wait up to ``timeout`` s for what the source reads on its own in the
        background (a dump directory's scan), so a one-shot answer holds all of it."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Stop background work and release sockets or files."""

    def host_status(self) -> HostStatus | None:
        """How the host source behind the Host view is doing now (a stalled or failing
        back end), or None when this source reads no host of its own (a replay
        shows the state its samples recorded)."""
        return None


class WrappedSource(Source):
    """Another source with something added: every method goes to ``inner``
    unless the subclass says otherwise."""

    def __init__(self, inner: Source) -> None:
        self.inner = inner
        self.description = inner.description
        self.title = inner.title
        self.readonly = inner.readonly
        self.recording = inner.recording

    def start(self) -> None:
        self.inner.start()

    @property
    def state(self) -> str:
        return self.inner.state

    @property
    def state_reason(self) -> str:
        return self.inner.state_reason

    def poll(self, max_events: int) -> list[ev.Event]:
        return self.inner.poll(max_events)

    def send_command(self, cls: type, *fields: Any, timeout: float = 3.0) -> ev.Reply:
        return self.inner.send_command(cls, *fields, timeout=timeout)

    def decoder_counts(self) -> tuple[int, int]:
        return self.inner.decoder_counts()

    def pace(self, seconds: float) -> None:
        self.inner.pace(seconds)

    def resolve_path(self, path: str) -> str:
        return self.inner.resolve_path(path)

    def stop_reconnecting(self) -> None:
        self.inner.stop_reconnecting()

    def finish_reading(self, timeout: float) -> None:
        self.inner.finish_reading(timeout)

    def close(self) -> None:
        self.inner.close()

    def host_status(self) -> HostStatus | None:
        return self.inner.host_status()


class KeptOpen(WrappedSource):
    """A source that outlives the screens that read it: started by the first,
    never closed by one (a job's screens left for another job's and shown again
    keep their connection and what arrived meanwhile); :meth:`release` closes it."""

    def __init__(self, inner: Source) -> None:
        super().__init__(inner)
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self.inner.start()

    def close(self) -> None:
        """Left open: the next screen reads on."""

    def release(self) -> None:
        self.inner.close()


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
