"""Commands through a relay: a NATS request on ``aclmon.<job>.<host>.<pid>.cmd``
holds one framed command; the relay forwards it to that agent and answers with
the agent's framed ``Reply``, or with a refusal of its own: not a command kind,
no such agent, an agent that takes no commands from the relay, a server that
lets anyone connect (unless ``--allow-anonymous-commands``), no reply in time."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from aclmon import events as ev
from aclmon.acl_constants import (
    ACL_ERROR_API_NOT_SUPPORT,
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_RT_WAIT_TIMEOUT,
)
from aclmon.events.wire import HEADER_SIZE, FrameError, encode_frame, split_frames
from aclmon.fleet import subjects as sj

if TYPE_CHECKING:
    from aclmon.fleet.relay import Relay

log = logging.getLogger("aclmon.relay")

COMMAND_TIMEOUT_S = 5.0


async def on_command(relay: Relay, msg: Any) -> None:
    """Answer a NATS request on an agent's ``cmd`` subject (never raises)."""
    if not msg.reply:
        return
    try:
        answer = await answer_command(relay, msg.subject, msg.data)
    except Exception as exc:  # never let one request end the subscription
        log.exception("command on %s failed", msg.subject)
        answer = refusal(0, ACL_ERROR_API_NOT_SUPPORT, f"relay error: {exc}")
    with contextlib.suppress(Exception):
        await msg.respond(answer)


async def answer_command(relay: Relay, subject: str, data: bytes) -> bytes:
    """The framed Reply to one framed command request for one of ``relay``'s agents."""
    parsed = sj.parse_subject(subject)
    if parsed is None:
        return refusal(0, ACL_ERROR_INVALID_PARAM, f"not an agent's command subject: {subject}")
    offsets: list[int] = []
    stop = 0
    with contextlib.suppress(FrameError):
        offsets, stop = split_frames(data, 0, len(data), 64 * 1024, "command request")
    if len(offsets) != 1 or stop != len(data):
        return refusal(0, ACL_ERROR_INVALID_PARAM, "a command request is exactly one frame")
    payload = data[HEADER_SIZE:]
    command = ev.EventDecoder().decode_payload(payload)
    if command is None or not ev.is_command(command):
        return refusal(0, ACL_ERROR_INVALID_PARAM, "only command kinds are accepted")
    request_id = command.request_id
    if relay.anonymous_server and not relay.allow_anonymous_commands:
        # Anyone who can reach such a server could command this user's agents.
        return refusal(
            request_id,
            ACL_ERROR_API_NOT_SUPPORT,
            f"commands refused: the NATS server {relay.url} requires no authentication"
            " (the relay forwards commands only from a server with auth, or when started"
            " with --allow-anonymous-commands)",
        )
    link = relay.links.get(parsed.pid)
    if link is None or link.writer is None or link.job != parsed.job:
        return refusal(request_id, ACL_ERROR_INVALID_PARAM,
                        f"no agent pid {parsed.pid} of job {parsed.job} on {relay.host}")  # fmt: skip
    if not link.commands:
        return refusal(
            request_id, ACL_ERROR_API_NOT_SUPPORT,
            f"agent pid {link.pid} accepts no commands from the relay (commands are off)",
        )  # fmt: skip
    future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    link.replies[request_id] = future
    try:
        link.writer.write(data)
        return await asyncio.wait_for(future, COMMAND_TIMEOUT_S)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        return refusal(request_id, ACL_ERROR_RT_WAIT_TIMEOUT,
                        f"no reply from agent pid {link.pid}")  # fmt: skip
    finally:
        link.replies.pop(request_id, None)


def requires_authentication(nc: Any) -> bool:
    """Whether the server we are connected to asked for credentials (a token, a
    user, an nkey or a JWT) or verifies client certificates, from its INFO."""
    # nats-py keeps the server's INFO in a private attribute only.
    info = getattr(nc, "_server_info", None) or {}
    return bool(info.get("auth_required") or info.get("tls_verify"))


def refusal(request_id: int, code: int, message: str) -> bytes:
    """A framed Reply from the relay that refuses (or fails) a command."""
    reply = ev.Reply(0, time.time_ns(), request_id, code, message, {"from": "relay"})
    return encode_frame(ev.encode(reply))


async def ask_for_snapshots(relay: Relay, stop: asyncio.Event) -> None:
    """Ask every agent for its snapshot now and then, so ``state`` stays current."""
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), relay.state_every_s)
        if stop.is_set():
            return
        for link in list(relay.links.values()):
            if link.commands and link.writer is not None:
                command = ev.RequestSnapshot(
                    1, time.time_ns(), int.from_bytes(os.urandom(7), "big")
                )
                with contextlib.suppress(Exception):
                    link.writer.write(encode_frame(ev.encode(command)))
