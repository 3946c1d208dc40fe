"""The relay against agents and servers that misbehave, and what a viewer is
told: bounded snapshots, oversized frames skipped, every loss counted, --host,
the host relay's checks, a rank's first events, heartbeats and staleness, a
quick quit in the middle of a catch-up, a server restarted without its store."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fleethelpers import (
    UNREACHABLE,
    RelayThread,
    answering_agent,
    start_publisher,
    unreachable,
    wait_until,
)

from aclmon import events as ev
from aclmon.bus import registry
from aclmon.errors import AclmonError
from aclmon.events.wire import encode_frame
from aclmon.fleet import subjects as sj
from aclmon.fleet.nats_source import NatsFeed
from aclmon.fleet.relay import RELAY_COPY_DROPS, RELAY_DROPS, Relay
from aclmon.fleet.server import LocalNatsServer
from aclmon.store.fleet import LIVE, RELAY_SILENT_AFTER_S, STALE, FleetStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
HOST = sj.short_host(socket.gethostname())


def drops_seen(fleet: FleetStore) -> dict[str, int]:
    out: dict[str, int] = {}
    for entry in fleet.sources.values():
        out.update(entry.store.state.counters.agent_drops)
    return out


def test_snapshot_frames_outside_a_snapshot_are_bounded_and_counted(nats, runtime_dir):
    """An agent that sends seq-0 frames forever: the relay's state message stays
    under the server's max_payload, nothing fails to publish, the lost copies
    are counted and told to viewers."""
    publisher = start_publisher(runtime_dir)
    relay = Relay(nats.url, nats.credentials, job="unit", flush_ms=5)
    feed = NatsFeed(nats.url, sj.Scope("unit"), nats.credentials)
    fleet = FleetStore()
    try:
        feed.start()
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].frames_in, what="relay")
            link = relay.links[os.getpid()]
            text = "x" * 1000
            for i in range(3000):  # 3 MB of snapshot frames, three times max_payload
                while not publisher.publish(ev.LogLine(0, i + 1, "info", text)):
                    time.sleep(0.001)
            wait_until(lambda: link.frames_in >= 3000, what="all frames read")

            def told() -> bool:
                fleet.take_from(feed)
                return drops_seen(fleet).get(RELAY_COPY_DROPS, 0) > 0

            wait_until(told, what="the lost copies told to the viewer")
            assert link.state_size <= relay.max_payload
            assert link.copies_dropped >= 3000 - relay.max_payload // 1000
            assert relay.publish_errors == 0
    finally:
        feed.close()
        publisher.close()
        registry.unregister()


def test_an_oversized_frame_is_skipped_and_the_connection_kept(nats, runtime_dir):
    notes: list[str] = []
    publisher = start_publisher(runtime_dir)
    relay = Relay(nats.url, nats.credentials, job="unit", flush_ms=5, on_note=notes.append)
    feed = NatsFeed(nats.url, sj.Scope("unit"), nats.credentials)
    fleet = FleetStore()
    try:
        feed.start()
        wait_until(lambda: feed.state == "connected", what="viewer")
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].frames_in, what="relay")
            link = relay.links[os.getpid()]
            publisher.emit(ev.TxMark, "before")
            publisher.emit(ev.LogLine, "error", "y" * (5 << 20))  # over the 4 MiB bus limit
            for i in range(100):
                publisher.emit(ev.TxMark, f"after {i}")

            def all_after() -> bool:
                fleet.take_from(feed)
                entry = fleet.sources.get((HOST, os.getpid()))
                return entry is not None and entry.store.state.tx_marks == 101

            wait_until(all_after, what="the events after the big frame")
            assert relay.links[os.getpid()] is link  # the same connection throughout
            assert link.oversized == 1
            assert sum("following pid" in n for n in notes) == 1
            wait_until(lambda: fleet.take_from(feed) or drops_seen(fleet).get(RELAY_DROPS))
            assert drops_seen(fleet)[RELAY_DROPS] == 1
    finally:
        feed.close()
        publisher.close()
        registry.unregister()


def test_relay_host_names_the_subjects_and_takes_their_commands(nats, runtime_dir):
    seen: list[ev.Event] = []
    notes: list[str] = []
    publisher = answering_agent(runtime_dir, seen)
    relay = Relay(nats.url, nats.credentials, job="unit", host="renamed.example", flush_ms=5,
                  on_note=notes.append)  # fmt: skip
    feed = NatsFeed(nats.url, sj.Scope("unit", "renamed"), nats.credentials)
    try:
        feed.start()
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].commands, what="relay")
            publisher.emit(ev.TxMark, "here")
            keys: set = set()
            wait_until(lambda: keys.update(k for k, _ in feed.poll()) or keys, what="events")
            assert keys == {("renamed", os.getpid())}
            reply = feed.send_command(("renamed", os.getpid()), ev.StartProfiling, timeout=5)
            assert reply.code == 0 and [type(e) for e in seen] == [ev.StartProfiling]
        assert any("--host " + HOST in n for n in notes)  # the agents say another name
    finally:
        feed.close()
        publisher.close()
        registry.unregister()


def test_run_relay_refuses_a_running_relay_to_another_server(runtime_dir):
    from aclmon.fleet.hostrelay import ensure_relay, hold_relay_lock, running_relay_info

    lock = hold_relay_lock("nats://elsewhere:4222")
    try:
        assert running_relay_info()[1] == "nats://elsewhere:4222"
        with pytest.raises(AclmonError, match="forwards to nats://elsewhere:4222, not to"):
            ensure_relay("nats://127.0.0.1:4222")
        assert ensure_relay("nats://elsewhere:4222/") == (os.getpid(), False)
    finally:
        lock.close()


def test_a_relay_that_cannot_reach_its_server_is_not_reported_started(runtime_dir):
    from aclmon.fleet.hostrelay import ensure_relay, running_relay

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once closed
    with pytest.raises(AclmonError, match=r"relay for nats://127\.0\.0\.1"):
        ensure_relay(f"nats://127.0.0.1:{port}", timeout=20)
    assert running_relay() is None


def test_a_ranks_first_events_reach_nats(nats, runtime_dir, tmp_path):
    """`run --relay`: the job starts once the relay follows it, so the stream holds
    the events of its very first calls, not only those after the relay's next look."""
    script = tmp_path / "quick.py"
    script.write_text("import acl\nacl.init()\nacl.rt.set_device(0)\nacl.rt.reset_device(0)\n"
                      "acl.finalize()\n")  # fmt: skip
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime_dir.parent), ACLMON_NATS_TOKEN=nats.token)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "aclmon", "run", "--sim", "--relay", nats.url, "--job", "quick",
         str(script)], env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    from aclmon.fleet.hostrelay import running_relay

    relay_pid = running_relay(runtime_dir)
    try:
        assert done.returncode == 0, done.stderr
        feed = NatsFeed(nats.url, sj.Scope("quick"), nats.credentials, since_s=0.0)
        events: list[ev.Event] = []
        feed.start()
        try:

            def ended() -> bool:
                for _key, batch in feed.poll():
                    events.extend(batch)
                return any(isinstance(e, ev.Goodbye) for e in events)

            wait_until(ended, 30, "the job's Goodbye")
        finally:
            feed.close()
        numbered = [e.seq for e in events if e.seq]
        # Only the agent's own start (its Hello and state, also in the snapshot)
        # comes before the relay; every event of the job's calls is there, in order.
        assert numbered == list(range(numbered[0], numbered[0] + len(numbered)))
        kinds = [type(e) for e in events if e.seq]
        assert ev.DeviceSet in kinds and ev.DeviceReset in kinds
    finally:
        if relay_pid and relay_pid > 0:
            os.kill(relay_pid, 15)


def test_a_silent_relay_makes_its_sources_stale(nats, runtime_dir):
    publisher = start_publisher(runtime_dir)
    relay = Relay(nats.url, nats.credentials, job="unit", flush_ms=5)
    feed = NatsFeed(nats.url, sj.Scope("unit"), nats.credentials)
    fleet = FleetStore()
    key = (HOST, os.getpid())
    try:
        feed.start()
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].frames_in, what="relay")
            publisher.emit(ev.TxMark, "here")

            def beating() -> bool:
                fleet.take_from(feed)
                return (
                    key in fleet.sources
                    and HOST in fleet.relay_heard
                    and HOST in fleet.clock_offsets()
                )

            wait_until(beating, what="events, a heartbeat and the relay's clock offset")
            assert fleet.state_of(fleet.sources[key]) == LIVE
            # One clock here: the offset to the server's, measured by the relay, is small.
            assert abs(fleet.clock_offsets()[HOST]["offset_ns"]) < 5_000_000_000
        fleet.take_from(feed)
        last_beat = fleet.relay_heard[HOST]
        # The relay is gone (no tombstone: it was stopped, not the agent): a
        # viewer's clock a little past the heartbeat period says stale.
        later = last_beat + RELAY_SILENT_AFTER_S + 0.1
        assert fleet.state_of(fleet.sources[key], now=later) == STALE
        assert fleet.row(fleet.sources[key], now=later).executions_per_s == 0.0
    finally:
        feed.close()
        publisher.close()
        registry.unregister()


def test_quitting_in_the_middle_of_a_long_catch_up_drops_the_backlog(nats):
    """A large history replayed with --since all: close() does not decode the
    rest first (nats-py's drain would run every pending message through the
    viewer's callback)."""
    frames = b"".join(encode_frame(ev.encode(ev.TxMark(i + 1, i, f"m{i}"))) for i in range(200))

    async def fill() -> None:
        from aclmon.fleet.connect import connect
        from aclmon.fleet.relay import Relay as StreamMaker

        maker = StreamMaker(nats.url, nats.credentials)
        maker.nc = nc = await connect(nats.url, nats.credentials, name="fill")
        await maker.ensure_streams()
        js = nc.jetstream()
        for _ in range(3000):  # 600,000 events
            await nc.publish(sj.subject("big", HOST, 1, sj.EVENTS), frames)
        await nc.flush()
        while (await js.stream_info(sj.STREAMS[sj.EVENTS])).state.messages < 3000:
            await asyncio.sleep(0.05)
        await nc.close()

    asyncio.run(fill())
    feed = NatsFeed(nats.url, sj.Scope("big"), nats.credentials, since_s=0.0)
    feed.start()
    wait_until(lambda: feed.messages >= 20, what="the catch-up under way")
    at_close = feed.messages
    feed.close()
    assert feed.messages < 3000
    assert feed.messages - at_close < 100, (at_close, feed.messages)


def test_a_server_restarted_without_its_store_gets_its_streams_back(start_nats, runtime_dir):
    first = start_nats()
    port = first.url.rsplit(":", 1)[1]
    publisher = start_publisher(runtime_dir)
    notes: list[str] = []
    relay = Relay(first.url, first.credentials, job="unit", flush_ms=5, on_note=notes.append)
    feed = NatsFeed(first.url, sj.Scope("unit"), first.credentials, since_s=0.0)
    fleet = FleetStore()
    key = (HOST, os.getpid())
    second: LocalNatsServer | None = None
    try:
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[os.getpid()].frames_in, what="relay")
            publisher.emit(ev.TxMark, "before")
            feed.start()

            def marks() -> int:
                fleet.take_from(feed)
                entry = fleet.sources.get(key)
                return entry.store.state.tx_marks if entry else 0

            wait_until(lambda: marks() == 1, what="the first mark")
            # The server dies with its store; a new one takes the same port and token.
            token = first.token
            first.stop()
            # Meanwhile the job goes on: more than nats-py buffers while it reconnects.
            link = relay.links[os.getpid()]
            for i in range(4000):
                publisher.emit(ev.LogLine, "info", f"{i} " + "z" * 1000)
            wait_until(lambda: link.dropped > 0, 30, "publishes failing, counted")
            second = LocalNatsServer(first.binary, extra_args=["-p", port])
            second.token = token
            second.start()
            wait_until(lambda: any("created stream ACLMON_EVENTS" in n for n in notes[1:]),
                       30, "streams made again")  # fmt: skip
            for i in range(5):
                publisher.emit(ev.TxMark, f"after {i}")
            wait_until(lambda: marks() == 6, 30, "the marks after the restart")
            assert "lost its stored history" in feed.state_reason
            # What was lost during the outage is a counted drop, told to the viewer.
            wait_until(lambda: drops_seen(fleet).get(RELAY_DROPS, 0) == link.dropped, 30,
                       "the relay's drops told")  # fmt: skip
    finally:
        feed.close()
        publisher.close()
        registry.unregister()
        if second is not None:
            second.stop()


@pytest.mark.parametrize("case", UNREACHABLE)
def test_a_viewer_that_cannot_connect_says_why(case, nats, tmp_path):
    url, credentials, expected = unreachable(case, nats.url, tmp_path)
    feed = NatsFeed(url, sj.Scope("unit"), credentials)
    feed.start()
    try:
        wait_until(lambda: feed.state != "connecting", 30, "a verdict")
        assert feed.state in ("auth-failed", "disconnected")
        assert expected in feed.state_reason.lower()
    finally:
        feed.close()


def test_a_link_whose_frames_cannot_be_routed_ends_and_is_followed_again(nats, runtime_dir):
    """An internal error routing one agent's frames closes that connection: the link
    ends (its task does not die with the same error on what is left) and the agent
    is followed again at the next look at the registry."""
    notes: list[str] = []
    publisher = start_publisher(runtime_dir)
    relay = Relay(nats.url, nats.credentials, job="unit", flush_ms=5, on_note=notes.append)
    route = relay._route
    broken = [False]

    async def failing(*args: object) -> None:
        if broken[0]:
            raise RuntimeError("boom")
        await route(*args)  # type: ignore[arg-type]

    relay._route = failing  # type: ignore[method-assign]
    pid = os.getpid()
    try:
        with RelayThread(relay):
            wait_until(lambda: relay.links and relay.links[pid].frames_in, what="relay")
            first = relay.links[pid]
            broken[0] = True
            publisher.emit(ev.TxMark, "cannot be routed")
            wait_until(lambda: any(f"pid {pid} ended" in n for n in notes), what="the end")
            assert any(f"agent pid {pid}: internal error routing" in n for n in notes)
            broken[0] = False
            wait_until(lambda: relay.links.get(pid) not in (None, first), what="followed again")
            wait_until(lambda: relay.links[pid].frames_in, what="its frames again")
    finally:
        publisher.close()
        registry.unregister()
