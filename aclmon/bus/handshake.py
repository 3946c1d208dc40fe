"""The three frames that open every bus connection, and who may send commands.

1. server -> client ``{"bus": 1, "nonce": <32 random bytes>, "token": bool}``
2. client -> server ``{"bus": 1, "readonly": bool, "proof": <32 bytes> | None}``
   where ``proof = HMAC-SHA256(token, b"aclmon-bus-1" + nonce)``: the token
   itself never crosses the wire, and a recorded proof is useless for the next
   connection's nonce.
3. server -> client ``{"ok": True, "commands": bool}`` then events, or
   ``{"ok": False, "why": str}`` and the server closes.

Handshake payloads are msgpack maps; events are arrays, so the two can never
be confused. The rules (docs/events.md "Connections"):

- a Unix socket without a token: the 0600 socket file is the authentication,
  every non-readonly client may send commands;
- with a token (Unix or TCP): commands need a valid proof; a client without
  one may still receive, unless the listener is on a non-loopback address;
- TCP on loopback without a token: receive only, for everyone;
- TCP on a non-loopback address: refused to start without a token, and every
  client must prove it, even to receive;
- a wrong proof is always refused ("bad token"), never downgraded;
- a client that declared ``readonly`` is never allowed commands.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Any

import msgpack

from aclmon.events.wire import HEADER

BUS_VERSION = 1
NONCE_SIZE = 32
#: handshake frames are small; anything bigger is not a handshake.
MAX_HANDSHAKE_FRAME = 4096
_CONTEXT = b"aclmon-bus-1"


def take_message(buffer: bytearray) -> tuple[Any] | None:
    """The first handshake message of ``buffer`` (a frame: ``u32`` LE length, then
    msgpack), taken out of it, as ``(message,)``; ``None`` while it is not whole
    (what follows it is left in ``buffer``). Raises ``ValueError`` as soon as the
    length says it is too big to be a handshake message, before more is read."""
    if len(buffer) < HEADER.size:
        return None
    (length,) = HEADER.unpack_from(buffer)
    if length > MAX_HANDSHAKE_FRAME:
        raise ValueError(f"handshake message of {length} bytes is too big")
    end = HEADER.size + length
    if len(buffer) < end:
        return None
    payload = bytes(buffer[HEADER.size : end])
    del buffer[:end]
    return (msgpack.unpackb(payload, raw=False),)


def make_nonce() -> bytes:
    return os.urandom(NONCE_SIZE)


def prove(token: str, nonce: bytes) -> bytes:
    return hmac.new(token.encode(), _CONTEXT + nonce, hashlib.sha256).digest()


def server_hello(nonce: bytes, has_token: bool) -> dict[str, Any]:
    return {"bus": BUS_VERSION, "nonce": nonce, "token": has_token}


def client_hello(hello: Any, token: str | None, readonly: bool) -> dict[str, Any]:
    """The client's answer to ``server_hello`` (raises ValueError on a bad one)."""
    if not isinstance(hello, dict) or hello.get("bus") != BUS_VERSION:
        raise ValueError("the peer does not speak aclmon bus version 1")
    nonce = hello.get("nonce")
    if not isinstance(nonce, bytes) or len(nonce) != NONCE_SIZE:
        raise ValueError("the peer sent a bad nonce")
    proof = prove(token, nonce) if token and hello.get("token") else None
    return {"bus": BUS_VERSION, "readonly": bool(readonly), "proof": proof}


@dataclass(frozen=True)
class Policy:
    """What the listening side requires."""

    token: str | None
    loopback: bool  # listening on a Unix socket or a loopback TCP address
    unix: bool


@dataclass(frozen=True)
class Verdict:
    ok: bool
    commands: bool
    why: str = ""
    #: the client proved who it is (a valid token proof, or the 0600 Unix socket
    #: without a token); the publisher caps the others separately
    authenticated: bool = False


def judge(policy: Policy, nonce: bytes, hello: Any) -> Verdict:
    """Admit a client (and decide whether it may send commands) from its hello."""
    if not isinstance(hello, dict) or hello.get("bus") != BUS_VERSION:
        return Verdict(False, False, "not an aclmon bus client")
    readonly = hello.get("readonly")
    proof = hello.get("proof")
    if not isinstance(readonly, bool) or not (proof is None or isinstance(proof, bytes)):
        return Verdict(False, False, "malformed client hello")
    if policy.token:
        if proof is not None:
            if not hmac.compare_digest(proof, prove(policy.token, nonce)):
                return Verdict(False, False, "bad token")
            return Verdict(True, not readonly, authenticated=True)
        if not policy.loopback:
            return Verdict(False, False, "token required")
        return Verdict(True, False)
    # No token: only the Unix socket's file mode vouches for the client.
    return Verdict(True, policy.unix and not readonly, authenticated=policy.unix)


def welcome(verdict: Verdict) -> dict[str, Any]:
    if verdict.ok:
        return {"ok": True, "commands": verdict.commands}
    return {"ok": False, "why": verdict.why}
