"""The relay's reading: each connection's bytes wait in its link's inbox until the
one router task takes them (no task per read); a link whose inbox outgrows the
limit stops reading until it is routed; one link's failure closes that link alone."""

from __future__ import annotations

import asyncio
from typing import Any

from aclmon import events as ev
from aclmon.bus.transport import parse_address
from aclmon.events.wire import encode_frame
from aclmon.fleet.agent_link import MAX_INBOX, AgentLink
from aclmon.fleet.relay import Relay


class FakeTransport:
    """What the relay does to a connection: pause, resume, close."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def close(self) -> None:
        self.calls.append("close")

    def write(self, data: bytes) -> None:
        self.calls.append("write")


def make_link(pid: int) -> tuple[AgentLink, FakeTransport]:
    # No job yet (no Hello read): the batches are held, nothing is published.
    link = AgentLink(pid=pid, host="node00", address=parse_address(f"unix:/nonexistent/{pid}"))
    transport = FakeTransport()
    link.writer = transport  # type: ignore[assignment]
    return link, transport


def frames(count: int, text: str = "x" * 200) -> bytes:
    return b"".join(
        encode_frame(ev.encode(ev.LogLine(seq, 1, "info", text))) for seq in range(1, count + 1)
    )


def test_a_link_over_the_inbox_limit_pauses_until_routed_then_reads_again() -> None:
    async def run() -> None:
        relay = Relay("nats://127.0.0.1:1")
        link, transport = make_link(11)
        data = frames(MAX_INBOX // 200 + 100)
        assert len(data) > MAX_INBOX
        half = len(data) // 2 + 3  # a frame cut in two by the reads
        relay._received(link, data[:half])
        assert transport.calls == [] and not link.paused
        relay._received(link, data[half:])
        assert transport.calls == ["pause"] and link.paused
        await relay._take(link)
        assert transport.calls == ["pause", "resume"] and not link.paused
        assert link.frames_in == MAX_INBOX // 200 + 100 and not link.inbox

    asyncio.run(run())


def test_the_router_takes_every_ready_link_in_one_wake_and_keeps_partial_frames() -> None:
    async def run() -> None:
        relay = Relay("nats://127.0.0.1:1")
        stop = asyncio.Event()
        router = asyncio.create_task(relay._router(stop))
        links = [make_link(pid)[0] for pid in (21, 22, 23)]
        data = frames(10)
        for link in links:
            relay._received(link, data[:-5])  # the last frame not whole yet
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert [link.frames_in for link in links] == [9, 9, 9]
        assert all(len(link.inbox) == len(data) - 5 - len(frames(9)) for link in links)
        relay._received(links[1], data[-5:])
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert [link.frames_in for link in links] == [9, 10, 9] and not links[1].inbox
        stop.set()
        router.cancel()

    asyncio.run(run())


def test_a_link_the_router_cannot_route_is_closed_and_the_others_go_on(caplog: Any) -> None:
    async def run() -> None:
        relay = Relay("nats://127.0.0.1:1", on_note=notes.append)
        route = relay._route

        async def failing(link: AgentLink, *args: Any) -> None:
            if link.pid == 31:
                raise RuntimeError("boom")
            await route(link, *args)

        relay._route = failing  # type: ignore[method-assign]
        stop = asyncio.Event()
        router = asyncio.create_task(relay._router(stop))
        (bad, bad_transport), (good, good_transport) = make_link(31), make_link(32)
        relay._received(bad, frames(3))
        relay._received(good, frames(3))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert bad_transport.calls == ["close"] and good_transport.calls == []
        assert good.frames_in == 3
        relay._received(good, frames(2))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert good.frames_in == 5  # the router still runs
        stop.set()
        router.cancel()

    notes: list[str] = []
    asyncio.run(run())
    assert any("agent pid 31: internal error routing" in note for note in notes)
    assert "RuntimeError: boom" in caplog.text
