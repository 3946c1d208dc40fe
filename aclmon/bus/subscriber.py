"""The viewer's side of the bus: receive decoded events, send commands.

A daemon thread connects (with backoff between attempts), runs the handshake,
then reads large chunks and decodes them in one pass
(:class:`~aclmon.events.wire.StreamDecoder`). Decoded events wait in a
bounded buffer for ``poll()``; when it is full the thread stops reading, so
the publisher sees a slow subscriber and drops for it rather than the viewer
growing without bound.

``state`` is one of ``stopped``, ``connecting``, ``connected``,
``disconnected``, ``auth-failed``, ``closed``; ``on_state(state)`` is called
on the subscriber thread at each change and must not block.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import operator
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import msgpack

from aclmon.bus import handshake
from aclmon.bus.states import AUTH_FAILED, CLOSED, CONNECTED, CONNECTING, DISCONNECTED, STOPPED
from aclmon.bus.transport import Address, as_address, connect
from aclmon.errors import AclmonError, CommandRefused
from aclmon.events import (
    COMMAND_KINDS,
    KIND_NAMES,
    Event,
    Hello,
    Reply,
    encode,
    missed_between,
)
from aclmon.events.wire import (
    DEFAULT_MAX_FRAME,
    FrameError,
    StreamDecoder,
    encode_frame,
)

log = logging.getLogger("aclmon.bus")

#: decoded events held for poll() before the reader stops reading
DEFAULT_BUFFER_EVENTS = 200_000
#: bytes read (and decoded) at a time. Small enough that a read's events are still in
#: the CPU's cache while they are checked, counted and handed over: a subscriber
#: behind its publisher reads full buffers, and 1 MiB of them (twenty thousand
#: events) ran at 0.85 the speed of 64 KiB
_READ_SIZE = 64 * 1024
#: with ``coalesce`` the thread waits before the next read only while the stream
#: is slow: the last read under _COALESCE_BELOW bytes and the rate over the last
#: _RATE_WINDOW_S under _SLOW_RATE bytes/s (about 5,000 events/s of 50 bytes), so
#: what gathers in the socket meanwhile stays far under its buffer; a faster or
#: unmeasured stream reads on at once
_COALESCE_BELOW = 64 * 1024
_SLOW_RATE = 256 * 1024
_RATE_WINDOW_S = 0.5
_seq_of = operator.itemgetter(0)


class CommandTimeout(AclmonError):
    """A command got no Reply in time."""


class _Waiter:
    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: Reply | None = None


class _HandshakeRefused(Exception):
    pass


class Subscriber:
    """Connect to a publisher and keep connected; see the module docstring."""

    def __init__(
        self,
        address: str | os.PathLike[str] | Address,
        *,
        token: str | None = None,
        readonly: bool = False,
        on_state: Callable[[str], None] | None = None,
        max_frame: int = DEFAULT_MAX_FRAME,
        buffer_events: int = DEFAULT_BUFFER_EVENTS,
        connect_timeout: float = 5.0,
        backoff_initial: float = 0.05,
        backoff_max: float = 2.0,
        coalesce: float = 0.0,
    ) -> None:
        self.address = as_address(address)
        self._token = token or None
        self.readonly = readonly
        self._on_state = on_state
        self._max_frame = max_frame
        self._buffer_limit = buffer_events
        self._connect_timeout = connect_timeout
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        #: seconds to let a slow stream gather in the socket after a short read
        #: (a viewer that polls every refresh needs no more wakes than that); may
        #: be changed while running
        self.coalesce = coalesce
        #: ends a gathering wait early: a command sent (its reply is read at once),
        #: or closing
        self._wake = threading.Event()
        self.state = STOPPED
        #: why the last connection ended or failed ("" while fine)
        self.state_reason = ""
        #: events the publisher skipped in its sequence (drops, time disconnected)
        self.gaps = 0
        #: frames that decoded to no known event, and kinds too new for us
        self.malformed = 0
        self.unknown = 0
        self.received = 0
        self.connects = 0
        self.commands_allowed = False
        self._last_seq = 0
        self._batches: collections.deque[list[Event]] = collections.deque()
        self._buffered = 0
        self._cond = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._pending: dict[int, _Waiter] = {}
        self._seq = itertools.count(1)

    # ------------------------------------------------------------ public API
    def start(self) -> Subscriber:
        if self._thread is not None:
            raise AclmonError("subscriber already started")
        self._thread = threading.Thread(target=self._run, name="aclmon-subscriber", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._wake.set()
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            if self._thread is not threading.current_thread():  # close() from on_state
                self._thread.join(5.0)
            self._thread = None
        self._set_state(CLOSED, self.state_reason)

    def __enter__(self) -> Subscriber:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def poll(self, max_events: int = 10_000, timeout: float = 0.0) -> list[Event]:
        """Up to ``max_events`` decoded events, waiting up to ``timeout`` s for the first."""
        with self._cond:
            if not self._batches and timeout > 0:
                self._cond.wait_for(lambda: self._batches or self._closing, timeout)
            out: list[Event] = []
            batches = self._batches
            while batches and len(out) < max_events:
                batch = batches[0]
                room = max_events - len(out)
                if len(batch) <= room:
                    out += batches.popleft()
                else:
                    out += batch[:room]
                    batches[0] = batch[room:]
            self._buffered -= len(out)
            self._cond.notify_all()
            return out

    def wait_connected(self, timeout: float) -> bool:
        """True once the handshake has succeeded (for tools and tests)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.state != CONNECTED:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closing:
                    return False
                self._cond.wait(min(remaining, 0.05))
        return True

    def send_command(self, cls: type, *fields: Any, timeout: float = 5.0) -> Reply:
        """Send a command (``fields`` after ``request_id``) and wait for its Reply."""
        if cls not in COMMAND_KINDS:
            raise CommandRefused(f"{cls.__name__} is not a command")
        if self.readonly:
            raise CommandRefused("this viewer is read-only: commands are disabled")
        sock = self._sock
        if self.state != CONNECTED or sock is None:
            raise CommandRefused(f"not connected to {self.address} ({self.state})")
        if not self.commands_allowed:
            raise CommandRefused(
                f"{self.address} accepts no commands from this connection"
                " (receive-only: it needs a token, or it listens on TCP without one)"
            )
        request_id = secrets.randbits(63)
        event = cls(next(self._seq), time.time_ns(), request_id, *fields)
        waiter = _Waiter()
        self._pending[request_id] = waiter
        try:
            try:
                with self._send_lock:
                    sock.sendall(encode_frame(encode(event)))
                self._wake.set()  # the reading thread stops gathering: the reply comes
            except OSError as exc:
                raise CommandRefused(f"cannot send {KIND_NAMES[cls]}: {exc}") from exc
            answered = waiter.done.wait(timeout)
            if answered and waiter.reply is None:
                raise CommandRefused(
                    f"connection to {self.address} lost before the reply to {KIND_NAMES[cls]}"
                )
            if waiter.reply is None:
                raise CommandTimeout(
                    f"no reply to {KIND_NAMES[cls]} (request {request_id:#x}) "
                    f"from {self.address} within {timeout:g} s"
                )
            return waiter.reply
        finally:
            self._pending.pop(request_id, None)

    # ------------------------------------------------------------ the thread
    def _set_state(self, state: str, reason: str = "") -> None:
        with self._cond:
            changed = state != self.state
            self.state = state
            self.state_reason = reason
            self._cond.notify_all()
        if changed and self._on_state is not None:
            try:
                self._on_state(state)
            except Exception:
                log.exception("on_state callback failed")

    def _sleep(self, seconds: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._closing, seconds)

    def _run(self) -> None:
        backoff = self._backoff_initial
        while not self._closing:
            self._set_state(CONNECTING)
            try:
                sock = connect(self.address, self._connect_timeout)
            except OSError as exc:
                self._set_state(DISCONNECTED, f"cannot connect: {exc}")
                self._sleep(backoff)
                backoff = min(backoff * 2, self._backoff_max)
                continue
            self._sock = sock
            try:
                leftover = self._handshake(sock)
            except _HandshakeRefused as exc:
                self._close_socket(sock)
                log.warning("%s refused us: %s", self.address, exc)
                self._set_state(AUTH_FAILED, str(exc))
                self._sleep(self._backoff_max)
                continue
            except Exception as exc:  # a peer that is not an aclmon bus: msgpack raises many types
                self._close_socket(sock)
                self._set_state(DISCONNECTED, f"handshake failed: {exc}")
                self._sleep(backoff)
                backoff = min(backoff * 2, self._backoff_max)
                continue
            backoff = self._backoff_initial
            self.connects += 1
            self._set_state(CONNECTED)
            try:
                reason = self._receive(sock, leftover)
            except Exception as exc:  # a bug here must not end the viewer's feed for good
                log.exception("subscriber receive loop failed")
                reason = f"internal error: {exc}"
            self._close_socket(sock)
            self.commands_allowed = False
            self._fail_pending()
            if not self._closing:
                self._set_state(DISCONNECTED, reason)
                self._sleep(backoff)

    def _close_socket(self, sock: socket.socket) -> None:
        self._sock = None
        with contextlib.suppress(OSError):
            sock.close()

    def _handshake(self, sock: socket.socket) -> bytes:
        """Run the handshake; returns bytes already received after it."""
        # Event frames (the snapshot, or anything else) may follow the welcome in
        # the same read: frames are taken one at a time, so only the two handshake
        # messages are judged here (against their own small limit) and whatever
        # follows is left, unparsed, to the event stream and its own checks.
        received = bytearray()

        def next_message() -> Any:
            while True:
                whole = handshake.take_message(received)
                if whole is not None:
                    return whole[0]
                data = sock.recv(65536)
                if not data:
                    raise OSError("connection closed during handshake")
                received.extend(data)

        hello = next_message()
        answer = handshake.client_hello(hello, self._token, self.readonly)
        sock.sendall(encode_frame(msgpack.packb(answer, use_bin_type=True)))
        verdict = next_message()
        if not isinstance(verdict, dict) or not verdict.get("ok"):
            why = verdict.get("why") if isinstance(verdict, dict) else None
            raise _HandshakeRefused(str(why or "refused"))
        self.commands_allowed = bool(verdict.get("commands")) and not self.readonly
        sock.settimeout(None)
        return bytes(received)

    def _receive(self, sock: socket.socket, leftover: bytes) -> str:
        decoder = StreamDecoder(self._max_frame, str(self.address))
        # One buffer for every read: recv() of a large size allocates and frees
        # one each time, which cost ten times the read of a small batch.
        buffer = bytearray(_READ_SIZE)
        received = memoryview(buffer)
        data: bytes | memoryview = leftover
        slow = False
        # bytes/s over the last window; fast until measured
        window_start, window_bytes, rate = time.monotonic(), 0, float("inf")
        try:
            while not self._closing:
                if data:
                    events = decoder.feed(data)
                    # Fed once: the wait below loops back here with nothing new.
                    data = b""
                    self.malformed = decoder.malformed
                    self.unknown = decoder.unknown
                    if events:
                        self._deliver(events)
                with self._cond:
                    if self._buffered >= self._buffer_limit:
                        # Stop reading until poll() catches up: the publisher
                        # then drops for us instead of anything growing.
                        self._cond.wait_for(
                            lambda: self._buffered < self._buffer_limit or self._closing
                        )
                        continue
                if slow and self.coalesce and not self._pending:
                    # A slow stream: let it gather instead of waking per frame (a
                    # command sent meanwhile ends the wait: its reply is read at once).
                    self._wake.wait(self.coalesce)
                    self._wake.clear()
                size = sock.recv_into(buffer)
                if not size:
                    return "closed by the publisher"
                data = received[:size]
                now = time.monotonic()
                window_bytes += size
                if now - window_start >= _RATE_WINDOW_S:
                    rate = window_bytes / (now - window_start)
                    window_start, window_bytes = now, 0
                slow = size < _COALESCE_BELOW and rate < _SLOW_RATE
        except FrameError as exc:
            log.warning("dropping connection to %s: %s", self.address, exc)
            return str(exc)
        except OSError as exc:
            return f"connection lost: {exc}"
        return "closed"

    def _deliver(self, events: list[Event]) -> None:
        self.received += len(events)
        self._count_gaps(events)
        if self._pending:
            for event in events:
                if type(event) is Reply:
                    waiter = self._pending.get(event.request_id)
                    if waiter is not None:
                        waiter.reply = event
                        waiter.done.set()
        with self._cond:
            self._batches.append(events)
            self._buffered += len(events)
            self._cond.notify_all()

    def _count_gaps(self, events: list[Event]) -> None:
        first = events[0][0]
        last = events[-1][0]
        # The common batch: consecutive numbers continuing the last one (the ends
        # and the sum agree with that; a bogus number inside would break the sum).
        count = len(events)
        if (
            first == self._last_seq + 1
            and last - first == count - 1
            and first
            and sum(map(_seq_of, events)) == (first + last) * count // 2
        ):
            self._last_seq = last
            return
        previous = self._last_seq
        for event in events:
            seq = event[0]
            if seq == 0:  # snapshot state, outside the sequence
                continue
            if seq > previous + 1 and previous and type(event) is not Hello:
                self.gaps += missed_between(previous, seq)
            # A Hello or a smaller number: a new or restarted source.
            previous = seq
        self._last_seq = previous

    def _fail_pending(self) -> None:
        for waiter in list(self._pending.values()):
            waiter.done.set()  # reply stays None: the sender reports the loss
