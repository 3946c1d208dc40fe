"""One agent a relay follows (:class:`AgentLink`): its connection (made by
:func:`open_link`, the bus handshake as a client allowed commands, then
:class:`AgentProtocol`), the bytes read and not yet routed, the batches of
frames waiting to be published on each subject class, its latest snapshot and
what it lost; and the job its Hello names (:func:`job_of`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgpack

from aclmon import events as ev
from aclmon.bus import handshake
from aclmon.bus.transport import Address
from aclmon.events.wire import encode_frame
from aclmon.fleet import subjects as sj


class Batch:
    """Frames of one (agent, class) waiting to be published as one message."""

    __slots__ = ("frames", "parts", "size", "started")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.frames = 0
        self.started = 0.0

    def add(self, frame: bytes, now: float, frames: int = 1) -> None:
        """Append one frame, or ``frames`` whole frames in one piece."""
        if not self.parts:
            self.started = now
        self.parts.append(frame)
        self.size += len(frame)
        self.frames += frames

    def take(self) -> tuple[bytes, int]:
        data = b"".join(self.parts)
        frames = self.frames
        self.parts = []
        self.size = 0
        self.frames = 0
        return data, frames


@dataclass
class AgentLink:
    """One agent the relay follows."""

    pid: int
    host: str  # subject token
    address: Address
    job: str | None = None
    commands: bool = False
    #: the connection's transport: commands are written to it
    writer: asyncio.Transport | None = None
    #: bytes read from the agent, not routed yet
    inbox: bytearray = field(default_factory=bytearray)
    #: reading is paused until the inbox is routed (it had grown past the limit)
    paused: bool = False
    #: the connection ended: what is left of the inbox is routed by the link's task
    ended: bool = False
    batches: dict[str, Batch] = field(default_factory=lambda: {c: Batch() for c in sj.CLASSES})
    state_frames: list[bytes] = field(default_factory=list)
    state_dirty: bool = False
    replies: dict[int, asyncio.Future[bytes]] = field(default_factory=dict)
    frames_in: int = 0
    published: int = 0
    #: events frames that never reached NATS (any reason)
    dropped: int = 0
    drops_reported: int = 0
    #: summary/alerts/state messages lost (their frames are in events too)
    copies_dropped: int = 0
    copies_reported: int = 0
    #: frames over the bus limit, skipped with the connection kept
    oversized: int = 0
    #: bytes of an oversized frame still to skip
    skip: int = 0
    state_size: int = 0
    state_published: float = 0.0
    #: its Hello's host was compared with the relay's
    host_checked: bool = False
    #: the relay's clock offset frame is still to be sent on this agent's subjects
    clock_pending: bool = True
    task: asyncio.Task[None] | None = None
    #: held while its inbox is routed (by the router, or by its task once it ended)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def subject(self, cls: str) -> str:
        return sj.subject(self.job or "_", self.host, self.pid, cls)

    def reports(self, clock_known: bool) -> bool:
        """A snapshot, a drop count or the clock offset (when one is known) to send."""
        return (
            self.state_dirty
            or self.dropped != self.drops_reported
            or self.copies_dropped != self.copies_reported
            or (self.clock_pending and self.published > 0 and clock_known)
        )

    def pending(self, clock_known: bool) -> bool:
        """Anything to send, due now or later."""
        return self.reports(clock_known) or any(b.frames for b in self.batches.values())

    def due(self, now: float, flush_s: float, clock_known: bool) -> bool:
        """Whether anything is to be sent now (a batch once ``flush_s`` old)."""
        if self.reports(clock_known):
            return True
        return any(b.frames and now - b.started >= flush_s for b in self.batches.values())


def job_of(hello: ev.Hello) -> str:
    """The job an agent belongs to, as a subject token: the name its Hello
    carries, else the script's name."""
    if hello.job:
        return sj.token(hello.job)
    script = next((a for a in hello.argv if a.endswith(".py")), hello.argv[0] if hello.argv else "")
    name = os.path.basename(script)
    return sj.token(name[:-3] if name.endswith(".py") else name or "job")


#: bytes a connection may hold unrouted before its reading pauses (the agent's
#: publisher then keeps the rest, and drops for us if we stay behind)
MAX_INBOX = 2 << 20


class AgentProtocol(asyncio.Protocol):
    """One agent's connection. The handshake's messages are awaited one by one
    (:meth:`message`); after it, :meth:`follow` hands every chunk read to a
    callback as it arrives, on the event loop: no task wakes per read, so a relay
    of many ranks pays for one wake-up per turn of its loop, not one per rank."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._on_data: Callable[[bytes], None] | None = None
        #: done when the connection is lost (or closed)
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._on_data is not None:
            self._on_data(data)
            return
        self._buffer += data
        if len(self._buffer) > MAX_INBOX and self.transport is not None:
            self.transport.pause_reading()  # until followed
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def message(self) -> Any:
        """The next handshake message (msgpack in a frame)."""
        buffer = self._buffer
        while True:
            whole = handshake.take_message(buffer)
            if whole is not None:
                return whole[0]
            if self.closed.done():
                raise asyncio.IncompleteReadError(bytes(buffer), None)
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def follow(self, on_data: Callable[[bytes], None]) -> None:
        """From now on every chunk read goes to ``on_data`` (what came with the
        handshake's last message first)."""
        self._on_data = on_data
        if self._buffer:
            data = bytes(self._buffer)
            self._buffer.clear()
            on_data(data)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()


async def open_link(link: AgentLink, agent_token: str | None) -> AgentProtocol:
    """Connect to the agent as a bus client allowed commands (``link.writer``,
    ``link.commands`` set); its frames follow through the protocol returned
    (:meth:`AgentProtocol.follow`). Raises PermissionError when the agent
    refuses the relay; the connection is closed on any failure."""
    address = link.address
    loop = asyncio.get_running_loop()
    if address.scheme == "unix":
        transport, protocol = await loop.create_unix_connection(AgentProtocol, address.path)
    else:
        transport, protocol = await loop.create_connection(
            AgentProtocol, address.host, address.port
        )
    try:
        answer = handshake.client_hello(await protocol.message(), agent_token, readonly=False)
        transport.write(encode_frame(msgpack.packb(answer, use_bin_type=True)))
        verdict = await protocol.message()
        if not isinstance(verdict, dict) or not verdict.get("ok"):
            why = verdict.get("why") if isinstance(verdict, dict) else "refused"
            raise PermissionError(str(why))
    except BaseException:
        transport.close()
        raise
    link.writer = transport
    link.commands = bool(verdict.get("commands"))
    return protocol
