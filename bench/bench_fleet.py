"""A fleet through NATS: publishers -> relay -> nats-server -> one fleet viewer.

Measured side by side in one run:

1. **Live fleet.** ``--publishers`` (16) agent-side bus Publishers, one per
   child process (each registers like an agent), emit the realistic event mix
   of bench_events at ``--rate`` (2,000) events/s each for ``--seconds`` (32;
   at least 20). One ``aclmon relay`` process forwards them to a nats-server
   (JetStream on, file storage); one viewer (:class:`NatsFeed`, live core
   subscription, in this process) decodes everything. ``lost`` = events the
   publishers emitted (or dropped) that the viewer never decoded; lag = the
   viewer's decode time minus the event's timestamp (same clock: one host).
2. **Late joiner.** A second viewer replays the ``events`` stream from the
   start (ordered JetStream consumer): seconds per million events, until it
   has decoded everything the live phase stored (>= 1,000,000 events at the
   defaults).
3. **Batched NATS vs the socketpair ceiling.** The same frames, in batches of
   at most 64 KiB as the relay sends them, published as fast as possible by a
   child process and decoded here with the same :class:`StreamDecoder`,
   against the same frames written through a socketpair into the same decoder
   (1 MiB reads, as a subscriber reads). ``live_ratio`` = NATS / socketpair.

The last line is JSON. Targets on a 2-core machine: lost 0, lag_p99_ms < 100,
replay_s_per_million < 3, live_ratio >= 0.5. ``replay_ratio`` (the late
joiner's events/s over the socketpair ceiling) compares runs on a machine
whose load changes.

    PYTHONPATH=. python bench/bench_fleet.py [--seconds 32] [--publishers 16]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_events import event_mix

from aclmon import events as ev
from aclmon.events.wire import StreamDecoder, encode_frame
from aclmon.fleet import subjects as sj
from aclmon.fleet.nats_source import NatsFeed
from aclmon.fleet.server import LocalNatsServer
from aclmon.sources.demo import _die_with_parent

JOB = "bench"
TICK_S = 0.01
BLAST_EVENTS = 1_000_000
#: after the publishers are done, the viewer waits this long for more before counting the rest lost
QUIET_S = 10.0
MAX_BATCH = 64 * 1024


# ---------------------------------------------------------------- children
def publisher_main(rate: int, seconds: float, start_at: float) -> None:
    """One agent-like source: a bus Publisher in the registry, the event mix at ``rate``."""
    from aclmon.bus import registry
    from aclmon.bus.publisher import Publisher

    mix = event_mix(4096, seed=os.getpid())
    hello = ev.Hello(0, time.time_ns(), *ev.hello_fields("sim", "Ascend910B1", 1))
    publisher = Publisher(snapshot=lambda: [hello]).start()
    registry.register(publisher.address)
    try:
        while publisher.subscriber_count < 1:  # the relay
            time.sleep(0.01)
        while time.time() < start_at:
            time.sleep(0.001)
        emitted = dropped = 0
        per_tick = rate * TICK_S
        begin = time.monotonic()
        end = begin + seconds
        index = 0
        while True:
            now = time.monotonic()
            if now >= end:
                break
            due = int((now - begin) * rate) - emitted - dropped
            for _ in range(max(due, 0)):
                event = mix[index % len(mix)]
                index += 1
                if publisher.emit(type(event), *event[2:]):
                    emitted += 1
                else:
                    dropped += 1
            time.sleep(max(0.0, TICK_S - (time.monotonic() - now)))
        del per_tick
        cpu = os.times()
        print(json.dumps({"pid": os.getpid(), "emitted": emitted, "dropped": dropped,
                          "cpu_s": cpu.user + cpu.system}), flush=True)  # fmt: skip
        # Stay until the viewer has everything (or gave up): the tail may still
        # be in this publisher's buffers when the relay runs behind.
        sys.stdin.read()
        print(json.dumps({"subscriber_drops": publisher.dropped}), flush=True)
    finally:
        registry.unregister()
        publisher.close()


def frames_of(events: list[Any]) -> list[bytes]:
    return [encode_frame(ev.encode(e)) for e in events]


def batches_of(frames: list[bytes], limit: int = MAX_BATCH) -> list[bytes]:
    out: list[bytes] = []
    parts: list[bytes] = []
    size = 0
    for frame in frames:
        if parts and size + len(frame) > limit:
            out.append(b"".join(parts))
            parts, size = [], 0
        parts.append(frame)
        size += len(frame)
    if parts:
        out.append(b"".join(parts))
    return out


def blast_main(url: str, count: int) -> None:
    """Publish ``count`` events of the mix in relay-sized batches, as fast as NATS takes them."""
    import nats

    events = event_mix(count, seed=7)
    batches = batches_of(frames_of(events))

    async def run() -> None:
        nc = await nats.connect(url)
        for batch in batches:
            await nc.publish("fleetbench.blast", batch)
        while nc.pending_data_size:
            await nc.flush()
        await nc.flush()
        await nc.close()
        await asyncio.sleep(0.5)

    asyncio.run(run())


# ---------------------------------------------------------------- measurements
def ceiling(events: list[Any]) -> float:
    """Events/s through a socketpair into the StreamDecoder (1 MiB reads)."""
    data = b"".join(frames_of(events))
    left, right = socket.socketpair()

    def write() -> None:
        with left:
            left.sendall(data)

    decoder = StreamDecoder()
    writer = threading.Thread(target=write)
    start = time.perf_counter()
    writer.start()
    decoded = 0
    with right:
        while True:
            chunk = right.recv(1 << 20)
            if not chunk:
                break
            decoded += len(decoder.feed(chunk))
    elapsed = time.perf_counter() - start
    writer.join()
    assert decoded == len(events), (decoded, len(events))
    return decoded / elapsed


def nats_batched(url: str, count: int) -> float:
    """Events/s decoded here from relay-sized batches published by a child process."""
    import nats

    result: dict[str, float] = {}

    async def run() -> None:
        nc = await nats.connect(url)
        decoder = StreamDecoder()
        done = asyncio.Event()
        state = {"n": 0, "first": 0.0}

        async def on_msg(msg: Any) -> None:
            if not state["first"]:
                state["first"] = time.perf_counter()
            state["n"] += len(decoder.feed(msg.data))
            if state["n"] >= count:
                result["last"] = time.perf_counter()
                done.set()

        await nc.subscribe("fleetbench.blast", cb=on_msg, pending_msgs_limit=4_000_000,
                           pending_bytes_limit=1 << 30)  # fmt: skip
        await nc.flush()
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--blast", url, str(count)
        )
        await asyncio.wait_for(done.wait(), 300)
        await child.wait()
        result["rate"] = state["n"] / (result["last"] - state["first"])
        await nc.close()

    asyncio.run(run())
    return result["rate"]


def live_phase(
    url: str, env: dict[str, str], publishers: int, rate: int, seconds: float
) -> dict[str, Any]:
    feed = NatsFeed(url, sj.Scope(JOB))
    feed.start()
    deadline = time.monotonic() + 20
    while feed.state != "connected":
        if time.monotonic() > deadline:
            raise SystemExit(f"viewer did not connect: {feed.state} {feed.state_reason}")
        time.sleep(0.02)
    relay = subprocess.Popen(
        [sys.executable, "-m", "aclmon", "relay", "--nats", url, "--job", JOB],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )  # fmt: skip
    start_at = time.time() + 4.0 + publishers * 0.25
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--publisher", str(rate), str(seconds), str(start_at)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=_die_with_parent,
        )
        for _ in range(publishers)
    ]
    reports: list[dict[str, Any]] = [{} for _ in children]

    def read_report(index: int) -> None:
        stdout = children[index].stdout
        line = stdout.readline() if stdout is not None else ""
        reports[index] = json.loads(line) if line.strip() else {"missing": True}

    readers = [
        threading.Thread(target=read_report, args=(i,), daemon=True) for i in range(len(children))
    ]
    for reader in readers:
        reader.start()
    cpu_before = os.times()
    received: dict[int, int] = {}
    last_seq: dict[int, int] = {}
    gaps = 0
    lags: list[np.ndarray] = []
    relay_cpu = float("nan")
    finished = False
    quiet_since = None
    try:
        while True:
            batches = feed.poll(1_000_000)
            now = time.time_ns()
            for (_host, pid), events in batches:
                sequenced = [e for e in events if e.seq]  # not the snapshot (seq 0)
                if not sequenced:
                    continue
                previous = last_seq.get(pid, 0)
                for event in sequenced:
                    if previous and event.seq != previous + 1:
                        gaps += max(event.seq - previous - 1, 0)
                    previous = event.seq
                last_seq[pid] = previous
                # What the publisher emitted: not the Replies to the relay's
                # periodic snapshot requests.
                live = [e for e in sequenced if type(e) is not ev.Reply]
                received[pid] = received.get(pid, 0) + len(live)
                stamps = np.fromiter((e.ts_ns for e in live), dtype=np.int64, count=len(live))
                lags.append((now - stamps) / 1e6)
            if not finished and all(not r.get("missing", not r) for r in reports):
                finished = True  # every publisher has emitted its share
                quiet_since = time.monotonic()
            if finished:
                offered = sum(r.get("emitted", 0) + r.get("dropped", 0) for r in reports)
                if sum(received.values()) >= offered:
                    break
                if batches:
                    quiet_since = time.monotonic()
                elif time.monotonic() - quiet_since > QUIET_S:
                    break  # nothing more for a while: the rest is lost
            time.sleep(0.005)
    finally:
        for index, child in enumerate(children):
            out, _ = child.communicate("", timeout=60)
            for line in out.strip().splitlines():
                reports[index].update(json.loads(line))
        import psutil

        with contextlib.suppress(psutil.Error):
            times = psutil.Process(relay.pid).cpu_times()
            relay_cpu = times.user + times.system
        relay.send_signal(signal.SIGTERM)
        relay.wait(30)
        feed.close()
    cpu_after = os.times()
    viewer_cpu = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    offered = sum(r.get("emitted", 0) + r.get("dropped", 0) for r in reports)
    got = sum(received.values())
    lag = np.concatenate(lags) if lags else np.zeros(1)
    return {
        "sources": len(received),
        "offered": offered,
        "received": got,
        "lost": offered - got,
        "gaps": gaps,
        "publisher_drops": sum(r.get("dropped", 0) + r.get("subscriber_drops", 0) for r in reports),
        "lag_p50_ms": float(np.percentile(lag, 50)),
        "lag_p99_ms": float(np.percentile(lag, 99)),
        "lag_max_ms": float(lag.max()),
        "relay_cpu_s": relay_cpu,
        "viewer_cpu_s": viewer_cpu,
        "publishers_cpu_s": sum(r.get("cpu_s", 0.0) for r in reports),
    }


def replay_phase(url: str, expected: int) -> dict[str, Any]:
    """A late joiner: every event the ``events`` stream holds for the job."""
    feed = NatsFeed(url, sj.Scope(JOB), since_s=0.0)
    start = time.perf_counter()
    feed.start()
    decoded = 0
    deadline = time.monotonic() + 300
    while decoded < expected and time.monotonic() < deadline:
        for _key, events in feed.poll(1_000_000):
            decoded += len(events)
        time.sleep(0.002)
    elapsed = time.perf_counter() - start
    feed.close()
    return {"replayed": decoded, "replay_s": elapsed}


def stream_events(url: str) -> tuple[int, int]:
    """(messages, bytes) in ACLMON_EVENTS."""
    import nats

    async def run() -> tuple[int, int]:
        nc = await nats.connect(url)
        info = await nc.jetstream().stream_info(sj.STREAMS[sj.EVENTS])
        await nc.close()
        return int(info.state.messages), int(info.state.bytes)

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--publishers", type=int, default=16)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=32.0)
    args = parser.parse_args()
    if args.seconds < 20:
        raise SystemExit("--seconds must be at least 20")
    root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory(prefix="aclmon-fleet-bench-") as tmp:
        runtime = Path(tmp) / "run"
        runtime.mkdir(mode=0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime))
        env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
        env.pop("ACLMON_JOB", None)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        # Without auth (no command is sent here): the figures are the data path's.
        with LocalNatsServer(directory=str(Path(tmp) / "nats"), anonymous=True) as server:
            print(f"nats-server {server.binary} at {server.url}", flush=True)
            live = live_phase(server.url, env, args.publishers, args.rate, args.seconds)
            offered_rate = live["offered"] / args.seconds
            print(
                f"live: {live['sources']} sources, {live['offered']:,} events offered"
                f" ({offered_rate:,.0f}/s), {live['received']:,} decoded, lost {live['lost']},"
                f" gaps {live['gaps']}, lag p50 {live['lag_p50_ms']:.1f} ms"
                f" p99 {live['lag_p99_ms']:.1f} ms max {live['lag_max_ms']:.1f} ms",
                flush=True,
            )
            print(
                f"cpu over the live phase: relay {live['relay_cpu_s']:.1f} s,"
                f" viewer {live['viewer_cpu_s']:.1f} s,"
                f" publishers {live['publishers_cpu_s']:.1f} s in all"
                f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)",
                flush=True,
            )
            messages, stored = stream_events(server.url)
            # Every event the live phase stored: the decoded ones plus each
            # source's snapshot (seq 0) frames.
            replay = replay_phase(server.url, live["received"])
            per_million = replay["replay_s"] / (replay["replayed"] / 1e6)
            print(
                f"late joiner: {replay['replayed']:,} events from JetStream ({messages:,} messages,"
                f" {stored / 1e6:.1f} MB) in {replay['replay_s']:.2f} s"
                f" = {per_million:.2f} s per million",
                flush=True,
            )
            mix = event_mix(300_000, seed=7)
            ceiling_rates = [ceiling(mix) for _ in range(2)]
            nats_rate = nats_batched(server.url, BLAST_EVENTS)
            best_ceiling = max(ceiling_rates)
            print(
                f"socketpair + StreamDecoder: {', '.join(f'{r:,.0f}' for r in ceiling_rates)}"
                f" events/s; NATS batched (64 KiB) + StreamDecoder: {nats_rate:,.0f} events/s"
                f" -> ratio {nats_rate / best_ceiling:.2f}",
                flush=True,
            )
    print(
        json.dumps(
            {
                "sources": live["sources"],
                "publishers": args.publishers,
                "seconds": args.seconds,
                "offered_events_per_s": round(offered_rate),
                "received": live["received"],
                "lost": live["lost"],
                "gaps": live["gaps"],
                "lag_p50_ms": round(live["lag_p50_ms"], 1),
                "lag_p99_ms": round(live["lag_p99_ms"], 1),
                "relay_cpu_s": round(live["relay_cpu_s"], 1),
                "load_average": round(os.getloadavg()[0], 1),
                "replayed": replay["replayed"],
                "replay_s_per_million": round(per_million, 2),
                "nats_batched_events_per_s": round(nats_rate),
                "socketpair_events_per_s": round(best_ceiling),
                "live_ratio": round(nats_rate / best_ceiling, 2),
                # the replay's decode rate over the same ceiling: comparable across loads
                "replay_ratio": round(replay["replayed"] / replay["replay_s"] / best_ceiling, 2),
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--publisher":
        publisher_main(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--blast":
        blast_main(sys.argv[2], int(sys.argv[3]))
    else:
        main()
