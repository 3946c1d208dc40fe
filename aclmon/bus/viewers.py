"""The publisher's viewers: one connection's state, and who may connect and stay.

Peers are not trusted before they prove who they are (docs/security.md): a
connection in its handshake holds at most one 4 KiB frame and must finish within
``HANDSHAKE_TIMEOUT_S``; such connections are capped per peer and in total (the
oldest is closed to make room, so a newcomer always gets its chance). Viewers
that receive without having authenticated have their own cap, apart from
authenticated ones, so they can never lock a real viewer out; a peer whose
unauthenticated connection misbehaved is refused for a while.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterable

from aclmon.bus import handshake
from aclmon.bus.records import DropCount
from aclmon.events.wire import DEFAULT_MAX_FRAME, HEADER, FrameDecoder, FrameError

HANDSHAKE_TIMEOUT_S = 5.0
#: authenticated viewers served at once; more are closed at accept so a runaway
#: client cannot exhaust the job's descriptors
DEFAULT_MAX_CONNECTIONS = 32
#: connections still in their handshake, in total and from one peer (an IP
#: address, or a process on a Unix socket); past these the oldest is closed
MAX_HANDSHAKES = 16
MAX_HANDSHAKES_PER_PEER = 4
#: viewers admitted without authenticating (receive-only), in total and per peer
MAX_UNAUTHENTICATED = 8
MAX_UNAUTHENTICATED_PER_PEER = 2
#: bytes an authenticated viewer may have waiting before batches are dropped for it
DEFAULT_SUBSCRIBER_BUFFER = 4 * 1024 * 1024
#: output buffer of an unauthenticated viewer (authenticated ones: subscriber_buffer)
UNAUTHENTICATED_BUFFER = 1024 * 1024
#: commands a connection may send that are ignored (it may not send any) before
#: it is dropped: a well-behaved client sends none
MAX_IGNORED_COMMANDS = 64
#: a peer whose unauthenticated connection sent garbage or ignored commands is
#: not admitted without authenticating again for this long (so a flooder that
#: reconnects at once costs a refused handshake, not a snapshot and a flood)
MISBEHAVIOUR_PENALTY_S = 10.0
#: peers remembered for that, at most (the oldest are forgotten first)
MAX_PENALISED = 1024


class Connection:
    """One accepted socket, from its handshake to its close."""

    __slots__ = (
        "authenticated",
        "command_frames",
        "commands",
        "drops",
        "hello",
        "ignored",
        "lost_at",
        "name",
        "nonce",
        "opened",
        "out",
        "out_limit",
        "peer",
        "ready",
        "sock",
        "want_write",
    )

    def __init__(self, sock: socket.socket, name: str, peer: str, max_frame: int) -> None:
        self.sock = sock
        self.name = name
        self.peer = peer
        self.nonce = handshake.make_nonce()
        self.opened = time.monotonic()
        self.ready = False
        self.commands = False
        self.authenticated = False
        # The bytes of the hello so far: never more than one handshake frame.
        self.hello = bytearray()
        self.command_frames = FrameDecoder(max_frame, name)
        self.out = bytearray()
        self.out_limit = 0
        self.want_write = False
        #: batches this viewer lost for being too slow
        self.drops = DropCount()
        #: how many bytes waited in ``out`` when it last lost a batch (-1: never)
        self.lost_at = -1
        self.ignored = 0

    def admit(self, verdict: handshake.Verdict, out_limit: int) -> None:
        """The handshake passed: what the viewer may do, and hold, from now on."""
        self.ready = True
        self.commands = verdict.commands
        self.authenticated = verdict.authenticated
        self.out_limit = out_limit

    def take_hello(self, data: bytes, max_hello: int) -> tuple[bytes, bytes] | None:
        """Add ``data`` to the handshake frame so far: ``(its payload, the bytes
        after it)`` once it is whole, else None. Raises :class:`FrameError` for a
        frame longer than ``max_hello`` (never buffered past it)."""
        hello = self.hello
        hello += data
        if len(hello) < HEADER.size:
            return None
        (length,) = HEADER.unpack_from(hello)
        if length > max_hello:
            raise FrameError(
                self.name, 0, f"a handshake frame of {length} bytes (the limit is {max_hello})"
            )
        end = HEADER.size + length
        if len(hello) < end:
            return None
        self.hello = bytearray()
        return bytes(hello[HEADER.size : end]), bytes(hello[end:])

    def write(self, data: bytes) -> bool:
        """Send what the socket takes now and keep the rest in ``out`` (after
        anything already waiting there); True when bytes are left waiting.
        Raises ``OSError`` when the connection is broken."""
        if self.out:
            self.out += data
            return True
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < len(data):
            self.out += memoryview(data)[sent:]
            return True
        return False

    def ignore(self) -> bool:
        """Count one frame ignored from this viewer; True once past MAX_IGNORED_COMMANDS."""
        self.ignored += 1
        return self.ignored > MAX_IGNORED_COMMANDS

    def close(self) -> None:
        """Close the socket after one try to send what waits (a refused client
        should see the welcome that says why)."""
        if self.out:
            with contextlib.suppress(OSError):
                self.sock.send(self.out)
        self.sock.close()

    def flush(self) -> bool:
        """Send what waits in ``out``; True while some still waits. Raises ``OSError``."""
        try:
            sent = self.sock.send(self.out)
        except (BlockingIOError, InterruptedError):
            return True
        del self.out[:sent]
        return bool(self.out)


def flush_until(connections: Iterable[Connection], deadline: float) -> None:
    """Closing: try until ``deadline`` (monotonic) to send what waits for each
    viewer; a broken one is left behind, what is not sent by then is lost."""
    pending = [c for c in connections if c.out]
    while pending and time.monotonic() < deadline:
        still = []
        for conn in pending:
            with contextlib.suppress(OSError):
                if conn.flush():
                    still.append(conn)
        pending = still
        if pending:
            time.sleep(0.005)


def peer_of(sock: socket.socket, name: str) -> str:
    """Who is on the other end, for the per-peer caps: the IP address over TCP,
    the process over a Unix socket."""
    if name.startswith("tcp:"):
        return name[4:].rsplit(":", 1)[0]
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        pid = int.from_bytes(creds[:4], "little")
    except (OSError, AttributeError):
        return "unix"
    return f"unix pid {pid}"


class Admission:
    """The caps on connections and on what one may hold or send, and the peers refused
    for a while after misbehaving."""

    def __init__(
        self,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        subscriber_buffer: int = DEFAULT_SUBSCRIBER_BUFFER,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self.max_connections = max_connections
        #: the output buffer of an authenticated viewer
        self.subscriber_buffer = subscriber_buffer
        #: the largest frame a viewer may send
        self.max_frame = max_frame
        self._penalised: dict[str, float] = {}  # peer -> until (monotonic)

    def viewers_at_cap(self, connections: Iterable[Connection]) -> int | None:
        """The number of viewers when no more may be accepted at all, else None."""
        ready = sum(1 for c in connections if c.ready)
        return ready if ready >= self.max_connections + MAX_UNAUTHENTICATED else None

    def handshakes_to_close(
        self, connections: Iterable[Connection], peer: str
    ) -> list[tuple[Connection, str]]:
        """The oldest handshakes in progress to close (and why) so that a newcomer
        from ``peer`` fits within the per-peer and total caps."""
        waiting = [c for c in connections if not c.ready]
        close: list[tuple[Connection, str]] = []
        from_peer = [c for c in waiting if c.peer == peer]
        if len(from_peer) >= MAX_HANDSHAKES_PER_PEER:
            oldest = min(from_peer, key=lambda c: c.opened)
            why = f"closed: more than {MAX_HANDSHAKES_PER_PEER} handshakes at once from {peer}"
            close.append((oldest, why))
            waiting.remove(oldest)
        if len(waiting) >= MAX_HANDSHAKES:
            oldest = min(waiting, key=lambda c: c.opened)
            close.append((oldest, f"closed: more than {MAX_HANDSHAKES} handshakes at once"))
        return close

    def room_for(
        self, connections: Iterable[Connection], conn: Connection, verdict: handshake.Verdict
    ) -> handshake.Verdict:
        """``verdict``, or a refusal when viewers of its kind are at their caps
        (authenticated and unauthenticated viewers are counted apart, so the ones
        without a token can never lock out the ones with it)."""
        if verdict.authenticated:
            ready = sum(1 for c in connections if c.ready and c.authenticated)
            if ready < self.max_connections:
                return verdict
            return handshake.Verdict(False, False, f"already {ready} viewers")
        others = [c for c in connections if c.ready and not c.authenticated]
        until = self._penalised.get(conn.peer)
        if until is not None and time.monotonic() < until:
            why = f"{conn.peer} misbehaved without a token in the last {MISBEHAVIOUR_PENALTY_S:g} s"
        elif len(others) >= MAX_UNAUTHENTICATED:
            why = f"already {len(others)} viewers without a token (authenticate to get in)"
        elif sum(1 for c in others if c.peer == conn.peer) >= MAX_UNAUTHENTICATED_PER_PEER:
            why = f"already {MAX_UNAUTHENTICATED_PER_PEER} viewers without a token from {conn.peer}"
        else:
            return verdict
        return handshake.Verdict(False, False, why)

    def out_limit(self, authenticated: bool) -> int:
        """The output buffer of an admitted viewer."""
        if authenticated:
            return self.subscriber_buffer
        return min(self.subscriber_buffer, UNAUTHENTICATED_BUFFER)

    def dropped(self, conn: Connection, kind: str) -> None:
        """``conn`` was dropped for ``kind``: a peer without a token that sent garbage
        or ignored commands is penalised."""
        if kind not in ("garbage", "ignored") or conn.authenticated:
            return
        penalised = self._penalised
        penalised.pop(conn.peer, None)  # re-inserted last: the newest
        if len(penalised) >= MAX_PENALISED:
            del penalised[next(iter(penalised))]
        penalised[conn.peer] = time.monotonic() + MISBEHAVIOUR_PENALTY_S
