"""The relay between an in-process bus publisher and a real nats-server."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator

import pytest
from fleethelpers import RelayThread, answering_agent, start_publisher, wait_until

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_API_NOT_SUPPORT
from aclmon.bus import registry
from aclmon.fleet import subjects as sj
from aclmon.fleet.nats_source import NatsFeed
from aclmon.fleet.relay import Relay
from aclmon.fleet.relay_clock import clock_offset
from aclmon.store.fleet import FleetStore

HOST = sj.short_host(socket.gethostname())


def drain(feed: NatsFeed, fleet: FleetStore) -> int:
    for key, events in feed.poll():
        fleet.apply(key, events)
    return sum(e.store.state.counters.events for e in fleet.sources.values())


def tx_marks(feed: NatsFeed, fleet: FleetStore) -> int:
    """The marks the viewer has folded, once what has come is drained."""
    drain(feed, fleet)
    return sum(e.store.state.tx_marks for e in fleet.sources.values())


@contextlib.contextmanager
def viewed(nats, publisher) -> Iterator[NatsFeed]:
    """A viewer of job "unit" over NATS, once connected; closed with ``publisher``
    (the agent this process plays) afterwards."""
    feed = NatsFeed(nats.url, sj.Scope("unit"), nats.credentials)
    try:
        feed.start()
        wait_until(lambda: feed.state == "connected", what="viewer connected")
        yield feed
    finally:
        feed.close()
        publisher.close()
        registry.unregister()


def test_frames_reach_a_viewer_in_order_in_small_batches(nats, runtime_dir):
    publisher = start_publisher(runtime_dir)
    relay = Relay(nats.url, nats.credentials, job="unit", max_bytes=2048, flush_ms=5)
    sizes: list[int] = []
    fleet = FleetStore()
    with viewed(nats, publisher) as feed:
        with RelayThread(relay):
            wait_until(
                lambda: relay.links and relay.links[os.getpid()].frames_in, what="relay follows"
            )
            count = 3000
            for i in range(count):
                publisher.emit(ev.TxMark, f"mark {i} " + "x" * (i % 50))
            wait_until(lambda: drain(feed, fleet) >= count, what="all events")
            sizes = [feed.messages]
        entry = fleet.sources[(HOST, os.getpid())]
        state = entry.store.state
        assert state.counters.gaps == 0
        assert state.tx_marks == count
        assert state.hello is not None and state.hello.pid == os.getpid()
        # 3,000 frames of 20-70 bytes in messages of at most 2 KiB: many messages.
        assert sizes[0] > count * 20 // 2048
        assert relay.publish_errors == 0


def test_commands_over_nats_reach_the_agent_and_only_commands_pass(nats, runtime_dir):
    seen: list[ev.Event] = []
    publisher = answering_agent(runtime_dir, seen, "profiling started")
    relay = Relay(nats.url, nats.credentials, job="unit", flush_ms=5)
    feed = NatsFeed(nats.url, sj.Scope("unit"), nats.credentials)
    try:
        feed.start()
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].commands)
            key = (HOST, os.getpid())
            reply = feed.send_command(key, ev.StartProfiling, timeout=5)
            assert reply.code == 0 and reply.message == "profiling started"
            assert [type(e) for e in seen] == [ev.StartProfiling]
            # A non-command frame is refused by the relay and never reaches the agent.
            import asyncio

            async def raw_request() -> bytes:
                import nats as nats_client

                nc = await nats_client.connect(nats.url, token=nats.token)
                try:
                    from aclmon.events.wire import encode_frame

                    frame = encode_frame(ev.encode(ev.TxMark(1, 1, "not a command")))
                    msg = await nc.request(sj.subject("unit", HOST, os.getpid(), sj.CMD), frame, 5)
                    return bytes(msg.data)
                finally:
                    await nc.close()

            data = asyncio.run(raw_request())
            refusal = ev.EventDecoder().decode_payload(data[4:])
            assert isinstance(refusal, ev.Reply) and refusal.code != 0
            assert "only command kinds" in refusal.message
            assert len(seen) == 1
    finally:
        feed.close()
        publisher.close()
        registry.unregister()


def test_relay_refuses_commands_when_the_agent_allows_it_none(nats, runtime_dir):
    # A token on the agent and none given to the relay: it may receive, not command.
    publisher = start_publisher(runtime_dir, token="agent-secret")
    relay = Relay(nats.url, nats.credentials, job="unit", flush_ms=5)
    feed = NatsFeed(nats.url, sj.Scope("unit"), nats.credentials)
    try:
        feed.start()
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].frames_in)
            reply = feed.send_command((HOST, os.getpid()), ev.StartProfiling, timeout=5)
            assert reply.code == ACL_ERROR_API_NOT_SUPPORT
            assert "commands are off" in reply.message
    finally:
        feed.close()
        publisher.close()
        registry.unregister()


def test_a_viewer_without_the_token_is_refused(nats):
    feed = NatsFeed(nats.url, sj.Scope("unit"))
    feed.start()
    try:
        wait_until(lambda: feed.state != "connecting", what="a verdict")
        assert feed.state == "auth-failed"
        assert "authorization" in feed.state_reason
    finally:
        feed.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [("node-1.example.com", "node-1"), ("a b*c>d", "a_b_c_d"), ("", "_")],
)
def test_host_tokens(text, expected):
    assert sj.short_host(text) == expected


def test_the_clock_offset_takes_the_least_delayed_probe():
    """The server's clock is 200 ns ahead of this host's; each probe is delayed on
    its way out and back (40+10, 5+2, 250+50 ns): the one least delayed gives the
    closest offset, within half its round trip."""
    assert clock_offset([]) is None
    sent = 1_000
    probes = [
        (sent, sent + out + back, sent + out + 200) for out, back in ((40, 10), (5, 2), (250, 50))
    ]
    offset, uncertainty = clock_offset(probes)
    assert (offset, uncertainty) == (202, 3)
    assert abs(offset - 200) <= uncertainty


def test_routing_reads_the_kind_after_either_array_header(nats, runtime_dir):
    """Hello has more than 15 elements (array16 header): it must still reach
    ``summary`` and, as snapshot state (seq 0), ``state``."""
    import asyncio

    publisher = start_publisher(runtime_dir)
    relay = Relay(nats.url, nats.credentials, job="unit", flush_ms=5)
    got: dict[str, list[str]] = {}
    try:
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].frames_in)
            publisher.emit(ev.DeviceSample, 0, 5, 0, 0, 1, 2, "OK", None, None)
            publisher.emit(ev.LogLine, "error", "boom")

            async def read() -> None:
                import nats as nats_client

                from aclmon.events.wire import StreamDecoder

                nc = await nats_client.connect(nats.url, token=nats.token)
                js = nc.jetstream()
                expected = {sj.STATE: 1, sj.SUMMARY: 2, sj.ALERTS: 1}
                deadline = time.monotonic() + 15
                for cls, count in expected.items():
                    names: list[str] = []
                    seq = 1
                    while len(names) < count and time.monotonic() < deadline:
                        try:
                            msg = await js.get_msg(sj.STREAMS[cls], seq)
                        except Exception:  # not stored yet
                            await asyncio.sleep(0.05)
                            continue
                        # (the relay's own ClockOffset frames ride along: not routed kinds)
                        events = StreamDecoder().feed(msg.data)
                        names += [type(e).__name__ for e in events if type(e) is not ev.ClockOffset]
                        seq += 1
                    got[cls] = names
                await nc.close()

            asyncio.run(read())
    finally:
        publisher.close()
        registry.unregister()
    assert got[sj.STATE] == ["Hello"]
    assert got[sj.SUMMARY][:2] == ["Hello", "DeviceSample"]
    assert got[sj.ALERTS] == ["LogLine"]


def test_stream_limits_from_the_command_line_shape_the_streams(nats, runtime_dir):
    import asyncio

    from aclmon.errors import AclmonError
    from aclmon.fleet.commands import parse_stream_limits

    limits = parse_stream_limits(["events=2m:10MiB", "alerts=1d:1MiB"])
    with pytest.raises(AclmonError, match="CLASS=AGE:SIZE"):
        parse_stream_limits(["everything=1m:1MiB"])
    relay = Relay(nats.url, nats.credentials, job="unit", stream_limits=limits)

    async def setup_and_read() -> dict[str, tuple[float, int, int]]:
        from aclmon.fleet.connect import connect

        relay.nc = await connect(nats.url, nats.credentials, name="test")
        await relay.ensure_streams()
        js = relay.nc.jetstream()
        out = {}
        for cls, name in sj.STREAMS.items():
            config = (await js.stream_info(name)).config
            out[cls] = (config.max_age, config.max_bytes, config.max_msgs_per_subject)
        await relay.nc.close()
        return out

    got = asyncio.run(setup_and_read())
    assert got[sj.EVENTS][:2] == (120.0, 10 << 20)
    assert got[sj.ALERTS][:2] == (86400.0, 1 << 20)
    assert got[sj.STATE][2] == 1  # the latest snapshot per source only


def test_a_batch_left_by_a_read_goes_out_by_the_flusher_which_then_forgets_the_link(
    nats, runtime_dir
):
    """The flusher visits only links with something waiting: a lone event read
    before its batch is due still goes out, and a quiet link is not looked at."""
    publisher = start_publisher(runtime_dir)
    relay = Relay(nats.url, nats.credentials, job="unit", flush_ms=150)
    fleet = FleetStore()
    with viewed(nats, publisher) as feed:
        with RelayThread(relay):
            wait_until(
                lambda: relay.links and relay.links[os.getpid()].published, what="relay follows"
            )
            wait_until(lambda: not relay.waiting, what="the first batches sent")
            publisher.emit(ev.TxMark, "alone")
            # the mark itself, not any event (the first batches may still be arriving)
            wait_until(lambda: tx_marks(feed, fleet) == 1, what="the lone event")
            wait_until(lambda: not relay.waiting, what="nothing left waiting")
        state = fleet.sources[(HOST, os.getpid())].store.state
        assert state.tx_marks == 1 and state.counters.gaps == 0
