"""Helpers shared by the bus tests: waiting, and a hand-driven raw client."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import msgpack

from aclmon import events as ev
from aclmon.bus import handshake
from aclmon.bus.transport import connect, parse_address
from aclmon.events.wire import FrameDecoder, encode_frame

LIVENESS_TIMEOUT = 10.0  # generous: a limit for hangs, never a speed assertion


def wait_until(predicate: Callable[[], Any], timeout: float = LIVENESS_TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())


def collect(subscriber: Any, count: int, timeout: float = LIVENESS_TIMEOUT) -> list[ev.Event]:
    """Poll until ``count`` events arrived (or the timeout)."""
    out: list[ev.Event] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        out += subscriber.poll(100_000, 0.05)
    return out


class RawClient:
    """A bus client driven by hand, to do what a well-behaved Subscriber won't."""

    def __init__(self, address: str, *, rcvbuf: int | None = None) -> None:
        parsed = parse_address(address)
        if rcvbuf is not None:
            family = socket.AF_UNIX if parsed.scheme == "unix" else socket.AF_INET
            self.sock = socket.socket(family, socket.SOCK_STREAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(5.0)
            target: Any = parsed.path if parsed.scheme == "unix" else (parsed.host, parsed.port)
            self.sock.connect(target)
        else:
            self.sock = connect(parsed, 5.0)
        self.frames = FrameDecoder()
        self.payloads: list[bytes] = []

    def next_payload(self, timeout: float = 5.0) -> bytes | None:
        self.sock.settimeout(timeout)
        while not self.payloads:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            if not data:
                return None
            self.payloads += self.frames.feed(data)
        return self.payloads.pop(0)

    def handshake(self, *, readonly: bool = False, token: str | None = None) -> dict[str, Any]:
        hello = msgpack.unpackb(self.next_payload())
        answer = handshake.client_hello(hello, token, readonly)
        self.send(msgpack.packb(answer))
        return msgpack.unpackb(self.next_payload())

    def send(self, payload: bytes) -> None:
        self.sock.sendall(encode_frame(payload))

    def events(self, timeout: float) -> list[ev.Event]:
        """Every event that arrives within ``timeout``."""
        decoder = ev.EventDecoder()
        out = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            payload = self.next_payload(left)
            if payload is None:
                break
            event = decoder.decode_payload(payload)
            if event is not None:
                out.append(event)
        return out

    def close(self) -> None:
        self.sock.close()
