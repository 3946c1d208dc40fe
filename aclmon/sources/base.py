"""Where the viewer's events come from.

The app talks only to :class:`Source`: it polls batches on its timer (never
blocking), and sends commands from a worker thread (``send_command`` may wait
for the agent's reply). A live agent, a fixed list (tests, snapshots) and a
recording being replayed all fit behind it, so the app never asks
what kind of source it has.
"""

from __future__ import annotations

import itertools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from aclmon import events as ev
from aclmon.errors import AclmonError

#: connection states a source reports (the bus uses the same words).
CONNECTING = "connecting"
CONNECTED = "connected"
DISCONNECTED = "disconnected"
ENDED = "ended"  # a finite source has delivered everything


class CommandRefused(AclmonError):
    """A command the source will not send (read-only, or a source without an agent)."""


class Source(ABC):
    """A stream of events plus, when there is an agent behind it, a command channel."""

    #: shown in the header: what we are watching.
    description: str = ""
    #: never sends commands (``--readonly``, or a source that has no agent).
    readonly: bool = True
    #: events are being written to a recording as they arrive.
    recording: bool = False

    def start(self) -> None:  # noqa: B027 (optional hook: most sources have nothing to start)
        """Begin connecting or reading in the background; must not block."""

    @property
    @abstractmethod
    def state(self) -> str:
        """``connecting``, ``connected``, ``disconnected``, ``ended``, ``auth-failed``…"""

    @abstractmethod
    def poll(self, max_events: int) -> list[ev.Event]:
        """Up to ``max_events`` events that arrived since the last poll; never blocks."""

    def send_command(self, cls: type, *fields: Any, timeout: float = 3.0) -> ev.Reply:
        """Send one command (``fields`` after ``request_id``, which the source
        assigns) and wait for its reply. Call it off the UI thread; raises an
        :class:`AclmonError` when the command cannot be sent or gets no reply."""
        raise CommandRefused("this source has no agent to send commands to")

    def decoder_counts(self) -> tuple[int, int]:
        """(malformed, unknown) input the source skipped so far."""
        return (0, 0)

    def resolve_path(self, path: str) -> str:
        """Where a file the events name is found now (a replayed recording names
        files where the job wrote them; they may have moved since)."""
        return path

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


class LiveSource(Source):
    """A running agent, through the bus :class:`~aclmon.bus.Subscriber`."""

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        readonly: bool = False,
        description: str | None = None,
    ) -> None:
        from aclmon.bus import Subscriber  # the bus imports sockets and threads: only when used

        self._subscriber = Subscriber(address, token=token, readonly=readonly)
        self._command_errors: tuple[type[Exception], ...] = (AclmonError,)
        self.address = address
        self.readonly = readonly
        self.description = description or address

    def start(self) -> None:
        self._subscriber.start()

    @property
    def state(self) -> str:
        return str(self._subscriber.state)

    @property
    def state_reason(self) -> str:
        return str(getattr(self._subscriber, "state_reason", ""))

    def poll(self, max_events: int) -> list[ev.Event]:
        return list(self._subscriber.poll(max_events, 0))

    def send_command(self, cls: type, *fields: Any, timeout: float = 3.0) -> ev.Reply:
        if self.readonly:
            raise CommandRefused("read-only: commands are not sent")
        return self._subscriber.send_command(cls, *fields, timeout=timeout)  # type: ignore[no-any-return]

    def decoder_counts(self) -> tuple[int, int]:
        sub = self._subscriber
        return (int(getattr(sub, "malformed", 0)), int(getattr(sub, "unknown", 0)))

    def close(self) -> None:
        self._subscriber.close()

    def stop_reconnecting(self) -> None:
        """The job said goodbye: stop trying to reach it."""
        if self._subscriber.state in (DISCONNECTED, CONNECTING):
            self._subscriber.close()


class DumpDirectoryScan:
    """Finds the dump files already in a directory, off the UI thread.

    The agent announces files as they appear; this covers the ones written
    before we attached (or by a job without the agent). One pass in a daemon
    thread: every file below ``directory`` is classified by name and first
    bytes, the newest ``limit`` are summarised (like the agent does) and
    delivered oldest first as ``DumpFileSeen`` events with ``seq = 0`` (state,
    outside any sequence) stamped with the file's modification time.
    """

    def __init__(self, directory: str, *, limit: int = 2_000, max_files: int = 200_000) -> None:
        import os

        if not os.path.isdir(directory):
            raise AclmonError(f"dump directory {directory!r} does not exist")
        self.directory = directory
        self.limit = limit
        self.max_files = max_files
        self.found = 0  # dump files seen (before the limit)
        self.error = ""
        self.done = threading.Event()
        self._ready: list[ev.Event] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="aclmon-dump-scan", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def poll(self, max_events: int) -> list[ev.Event]:
        with self._lock:
            batch, self._ready = self._ready[:max_events], self._ready[max_events:]
        return batch

    def _run(self) -> None:
        import heapq
        import os

        try:
            from aclmon.dump import classify, summarize

            newest: list[tuple[int, str, str, int]] = []  # min-heap of (mtime, path, kind, size)
            seen = 0
            for root, dirs, names in os.walk(self.directory):
                dirs.sort()
                for name in names:
                    seen += 1
                    if seen > self.max_files:
                        self.error = f"stopped after {self.max_files} files"
                        break
                    path = os.path.join(root, name)
                    kind = classify(path)
                    if kind is None:
                        continue
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    self.found += 1
                    item = (st.st_mtime_ns, path, kind, st.st_size)
                    if len(newest) < self.limit:
                        heapq.heappush(newest, item)
                    elif item > newest[0]:
                        heapq.heapreplace(newest, item)
                if seen > self.max_files:
                    break
            for mtime, path, kind, size in sorted(newest):
                event = ev.DumpFileSeen(0, mtime, path, kind, size, summarize(path))
                with self._lock:
                    self._ready.append(event)
        except Exception as exc:  # a scan problem must not take the viewer down
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.done.set()


class WithDumpDirectory(Source):
    """Another source plus the dump files already in a directory."""

    def __init__(self, inner: Source, directory: str) -> None:
        self.inner = inner
        self.scan = DumpDirectoryScan(directory)
        self.description = inner.description
        self.readonly = inner.readonly
        self.recording = inner.recording

    def start(self) -> None:
        self.scan.start()
        self.inner.start()

    @property
    def state(self) -> str:
        return self.inner.state

    @property
    def state_reason(self) -> str:
        return str(getattr(self.inner, "state_reason", ""))

    def poll(self, max_events: int) -> list[ev.Event]:
        found = self.scan.poll(max_events)
        return (
            found + self.inner.poll(max_events - len(found)) if len(found) < max_events else found
        )

    def send_command(self, cls: type, *fields: Any, timeout: float = 3.0) -> ev.Reply:
        return self.inner.send_command(cls, *fields, timeout=timeout)

    def decoder_counts(self) -> tuple[int, int]:
        return self.inner.decoder_counts()

    def resolve_path(self, path: str) -> str:
        return self.inner.resolve_path(path)

    def close(self) -> None:
        self.inner.close()

    def stop_reconnecting(self) -> None:
        stop = getattr(self.inner, "stop_reconnecting", None)
        if stop is not None:
            stop()
