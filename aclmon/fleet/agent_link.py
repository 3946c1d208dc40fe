"""One agent a relay follows (:class:`AgentLink`): its connection (made by
:func:`open_link`, the bus handshake as a client allowed commands), the
batches of frames waiting to be published on each subject class, its latest
snapshot and what it lost; and the job its Hello names (:func:`job_of`)."""

from __future__ import annotations

import asyncio
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import msgpack

from aclmon import events as ev
from aclmon.bus import handshake
from aclmon.bus.transport import Address
from aclmon.events.wire import HEADER_SIZE, encode_frame
from aclmon.fleet import subjects as sj

_LENGTH = struct.Struct("<I").unpack_from


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
    writer: asyncio.StreamWriter | None = None
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


async def open_link(link: AgentLink, agent_token: str | None) -> asyncio.StreamReader:
    """Connect to the agent as a bus client allowed commands (``link.writer``,
    ``link.commands`` set); its frames follow on the reader. Raises
    PermissionError when the agent refuses the relay."""
    address = link.address
    if address.scheme == "unix":
        reader, writer = await asyncio.open_unix_connection(address.path, limit=1 << 20)
    else:
        reader, writer = await asyncio.open_connection(address.host, address.port)
    link.writer = writer

    async def message() -> Any:
        (length,) = _LENGTH(await reader.readexactly(HEADER_SIZE))
        if length > handshake.MAX_HANDSHAKE_FRAME:
            raise ValueError(f"handshake message of {length} bytes is too big")
        return msgpack.unpackb(await reader.readexactly(length), raw=False)

    answer = handshake.client_hello(await message(), agent_token, readonly=False)
    writer.write(encode_frame(msgpack.packb(answer, use_bin_type=True)))
    verdict = await message()
    if not isinstance(verdict, dict) or not verdict.get("ok"):
        why = verdict.get("why") if isinstance(verdict, dict) else "refused"
        raise PermissionError(str(why))
    link.commands = bool(verdict.get("commands"))
    return reader
