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

``--sources N`` is the large-fleet run instead (:func:`fleet_main`): N synthetic
ranks (``fleet_load.py``, niced: they stand for other hosts' jobs) through 8
relays into one nats-server and the fleet screen. Its lag is over the events of
the steady load (the ranks' set-up burst apart: ``setup_lag_p99_ms``), and it
reports CPU per event of the viewer, the relays and the load, which the
machine's load does not change, and the load's share of the machine.

    PYTHONPATH=. python bench/bench_fleet.py --sources 1024 [--rate 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import array
import asyncio
import contextlib
import itertools
import json
import operator
import os
import signal
import socket
import statistics
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
from aclmon.children import dies_with_me
from aclmon.events.wire import StreamDecoder, encode_frame
from aclmon.fleet import subjects as sj
from aclmon.fleet.nats_source import NatsFeed
from aclmon.fleet.server import LocalNatsServer

JOB = "bench"
_ts_ns = operator.attrgetter("ts_ns")
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
        preexec_fn=dies_with_me(),
    )  # fmt: skip
    start_at = time.time() + 4.0 + publishers * 0.25
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--publisher", str(rate), str(seconds), str(start_at)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=dies_with_me(),
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


# ---------------------------------------------------------------- a large fleet
#: relays (hosts) of the large-fleet run: its sources are spread over them
FLEET_HOSTS = 8
#: ranks that raise an exception in the large-fleet run (the alert line has work)
FLEET_FAULTY = (37, 512, 901)
#: the fleet screen's size for frame_ms and the live viewer
SCREEN = (160, 48)
#: the synthetic ranks stand for the jobs of other hosts: on one small machine
#: they run at a lower priority, so that they take the CPU the viewer and the
#: relays leave rather than starve them (their share is reported: load_cpu_percent)
LOAD_NICE = 10


def niced_child() -> Any:
    """The ``preexec_fn`` of a load process: dies with this one, runs at ``LOAD_NICE``."""
    die = dies_with_me()

    def preexec() -> None:
        if die is not None:
            die()
        os.nice(LOAD_NICE)

    return preexec


def fleet_viewer_main(url: str, sources: int) -> None:
    """The viewer of the large-fleet run: the fleet screen (headless, 160x48) over a
    :class:`NatsFeed` that also notes, as it decodes, each event's lag and each
    source's count and sequence gaps. Its stdin says ``start UNIX_TIME`` (the
    load begins then) and ``done OFFERED`` (every event was emitted); it prints
    one JSON line when it has them all (or nothing came for ``QUIET_S``)."""
    import psutil

    from aclmon.collector import tune_for_viewer
    from aclmon.store.fleet import FleetStore
    from aclmon.tui.fleet import FleetApp

    tune_for_viewer()  # as `aclmon attach` sets a fleet viewer's process

    class MeasuredFeed(NatsFeed):
        """Notes each event's lag, each source's count and its sequence gaps as
        the feed decodes, in C-level calls: the measurement must not be what
        slows the viewer (per event Python loops here once cost as much as the
        decoding itself)."""

        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            self.counted: dict[tuple[str, int], int] = {}
            self.total = 0
            self.last_seq: dict[tuple[str, int], int] = {}
            self.gaps = 0
            self.stamps = array.array("q")
            self.arrivals = array.array("q")
            self.newest = time.monotonic()

        def _push(self, key: Any, events: list[Any]) -> None:
            now = time.time_ns()
            sequenced = [e for e in events if e.seq]  # not the snapshot (seq 0)
            if sequenced:
                # A source's events come in order: what the numbers skipped.
                previous = self.last_seq.get(key, 0)
                if previous:
                    self.gaps += max(sequenced[-1].seq - previous - len(sequenced), 0)
                self.last_seq[key] = sequenced[-1].seq
                # What the load emitted: not the Replies to the relay's requests.
                live = [e for e in sequenced if type(e) is not ev.Reply]
                self.counted[key] = self.counted.get(key, 0) + len(live)
                self.total += len(live)
                self.stamps.extend(map(_ts_ns, live))
                self.arrivals.extend(itertools.repeat(now, len(live)))
                self.newest = time.monotonic()
            super()._push(key, events)

    me = psutil.Process()
    feed = MeasuredFeed(url, sj.Scope(JOB))
    fleet = FleetStore()
    app = FleetApp(feed, fleet)
    report: dict[str, Any] = {}

    def control() -> None:
        deadline = time.monotonic() + 30
        while feed.state != "connected" or not app.is_running:
            if time.monotonic() > deadline:
                report["error"] = f"viewer did not connect: {feed.state} {feed.state_reason}"
                app.call_from_thread(app.exit)
                return
            time.sleep(0.02)
        time.sleep(0.5)  # the screen painted once: the baseline
        rss_before = me.memory_info().rss
        print("ready", flush=True)
        start_at = float(sys.stdin.readline().split()[1])
        while time.time() < start_at:
            time.sleep(0.005)
        cpu_before, wall_before = me.cpu_times(), time.monotonic()
        offered = int(sys.stdin.readline().split()[1])
        while feed.total < offered and time.monotonic() - feed.newest < QUIET_S:
            time.sleep(0.05)
        cpu_after, wall_after = me.cpu_times(), time.monotonic()
        time.sleep(1.0)  # the screen folds the last of it
        used = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
        stamps = np.frombuffer(feed.stamps, dtype=np.int64)
        arrivals = np.frombuffer(feed.arrivals, dtype=np.int64)
        all_lags = (arrivals - stamps) / 1e6 if len(stamps) else np.zeros(1)
        # The ranks' set-up (Hello, device, context, stream, model of 1,024 ranks
        # at once, before the load starts) is the job starting, not its steady
        # flow: its lag is reported apart.
        steady = stamps >= int(start_at * 1e9)
        lag = all_lags[steady] if steady.any() else all_lags
        setup = all_lags[~steady] if len(stamps) and (~steady).any() else np.zeros(1)
        seconds = (stamps[steady] - int(start_at * 1e9)) // 10**9
        lag_by_second = {
            int(second): round(float(np.percentile(lag[seconds == second], 99)), 1)
            for second in np.unique(seconds)
        }
        report.update(
            received=feed.total,
            per_source=len(feed.counted),
            gaps=feed.gaps,
            feed_lost=feed.lost,
            lag_p50_ms=float(np.percentile(lag, 50)),
            lag_p99_ms=float(np.percentile(lag, 99)),
            lag_max_ms=float(lag.max()),
            lag_all_p99_ms=float(np.percentile(all_lags, 99)),
            setup_lag_p99_ms=float(np.percentile(setup, 99)),
            lag_p99_ms_by_second=lag_by_second,
            viewer_cpu_s=used,
            viewer_wall_s=wall_after - wall_before,
            rss_before_mb=rss_before / 1e6,
            rss_after_mb=me.memory_info().rss / 1e6,
            screen_sources=len(fleet.accepted()),
            screen_rows=len(app.rows),
        )
        app.call_from_thread(app.exit)

    feed.start()
    threading.Thread(target=control, daemon=True).start()
    app.run(headless=True, size=SCREEN)
    feed.close()
    print(json.dumps(report), flush=True)


def fleet_frame_ms(sources: int, paints: int = 30) -> tuple[float, float]:
    """(median ms of one fleet-screen refresh at 160x48 with ``sources`` ranks: a tick
    that folds new events of 1/8 of the ranks, repaints and renders every line;
    the same for a tick with nothing new)."""
    from textual.geometry import Region

    from aclmon.sources.fleet import drain
    from aclmon.store.fleet import FleetStore
    from aclmon.tui.fleet import FleetApp

    def rank_events(host: str, pid: int, rank: int, seq: int, second: int) -> list[Any]:
        ts = (1_800_000_000 + second) * 10**9
        util = (rank * 7 + second * 3) % 101
        out: list[Any] = []
        if seq == 1:
            out += [
                ev.Hello(1, ts, *ev.hello_fields("sim", "Ascend910B1", 1))._replace(
                    pid=pid, host=host, job=JOB, rank=rank, rank_size=sources,
                    local_rank=rank % 8, device_id=rank % 8),
                ev.ModelLoaded(2, ts, 1, rank % 8, "resnet50_bs32", 312),
            ]  # fmt: skip
        base = seq + len(out)
        out += [
            ev.DeviceSample(base, ts, rank % 8, util, 0, -1, 20 << 30, 64 << 30, "OK", 50.0, 250.0),
            ev.ExecuteEnd(base + 1, ts, 1, 0, 850_000, 0),
            ev.ExecuteEnd(base + 2, ts + 10**6, 1, 0, 850_000, 0),
        ]
        if rank in FLEET_FAULTY and second == 3:
            out.append(ev.AclException(base + 3, ts, rank % 8, 3, 7, 1, 507015,
                                       "conv12/Conv2D", "Conv2D", (), ()))  # fmt: skip
        return out

    keys = [(f"node{r // (sources // FLEET_HOSTS):02d}", 10_000 + r) for r in range(sources)]
    seqs = dict.fromkeys(keys, 1)

    class StepFeed:
        """What a NATS feed would hand over: the next second's events of some ranks."""

        description = "bench"
        readonly = True
        state = "connected"
        state_reason = ""

        def __init__(self) -> None:
            self.caught_up = threading.Event()
            self.gone: set[Any] = set()
            self.pending: list[tuple[Any, list[Any]]] = []

        def poll(self, max_events: int = 0) -> list[tuple[Any, list[Any]]]:
            out, self.pending = self.pending, []
            return out

        def queue(self, second: int, every: int) -> None:
            for index, key in enumerate(keys):
                if index % every == second % every:
                    events = rank_events(key[0], key[1], index, seqs[key], second)
                    seqs[key] += len(events)
                    self.pending.append((key, events))

    async def run() -> tuple[float, float]:
        feed = StepFeed()
        feed.queue(0, 1)  # every rank is there
        app = FleetApp(feed, FleetStore(), interval=3600)  # type: ignore[arg-type]
        async with app.run_test(size=SCREEN) as pilot:
            await pilot.pause()

            def paint(fold: bool) -> float:
                """A refresh: fold what came (when asked) and repaint, as the timer
                does when the screen is due, or a tick with nothing new."""
                began = time.perf_counter()
                if fold:
                    drain(feed, app.fleet)  # type: ignore[arg-type]
                    app.repaint()
                else:
                    app.tick()
                for widget in (app.alert, app.header, app.heat, app.colhead, app.vlist):
                    if widget.display:
                        widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
                return (time.perf_counter() - began) * 1000

            busy, idle = [], []
            for second in range(1, paints + 1):
                feed.queue(second, FLEET_HOSTS)
                busy.append(paint(True))
                await pilot.pause()
                idle.append(paint(False))
            assert len(app.rows) == sources, (len(app.rows), sources)
        return statistics.median(busy), statistics.median(idle)

    return asyncio.run(run())


def wait_for_streams(url: str, relay: subprocess.Popen[bytes], log: Path) -> None:
    """Until the relay has made every class's stream."""
    import nats

    async def run() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        deadline = time.monotonic() + 60
        try:
            for name in sj.STREAMS.values():
                while True:
                    try:
                        await js.stream_info(name)
                        break
                    except Exception:
                        if relay.poll() is not None or time.monotonic() > deadline:
                            raise SystemExit(
                                f"no stream {name}: {log.read_text()[-2000:]}"
                            ) from None
                        await asyncio.sleep(0.1)
        finally:
            await nc.close()

    asyncio.run(run())


def fleet_run(args: argparse.Namespace, root: str) -> dict[str, Any]:
    """One large-fleet run (see ``fleet_main``)."""
    import psutil

    sources, hosts = args.sources, FLEET_HOSTS
    per_host = sources // hosts
    with tempfile.TemporaryDirectory(prefix="aclmon-fleet-bench-") as tmp:
        base_env = dict(os.environ)
        base_env["PYTHONPATH"] = os.pathsep.join([root, base_env.get("PYTHONPATH", "")])
        base_env.pop("ACLMON_JOB", None)
        with LocalNatsServer(directory=str(Path(tmp) / "nats"), anonymous=True) as server:
            url = server.url
            viewer = subprocess.Popen(
                [sys.executable, __file__, "--fleet-viewer", url, str(sources)],
                env=base_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                preexec_fn=dies_with_me(),
            )  # fmt: skip
            assert viewer.stdin is not None and viewer.stdout is not None
            if viewer.stdout.readline().strip() != "ready":
                raise SystemExit(f"the viewer did not start: {viewer.stdout.read()}")
            relays, loads = [], []
            host_envs = []
            for index in range(hosts):
                runtime = Path(tmp) / f"host{index}"
                runtime.mkdir(mode=0o700)
                host_envs.append(dict(base_env, XDG_RUNTIME_DIR=str(runtime)))
            for index, env in enumerate(host_envs):
                # The first relay makes the streams; the others find them made.
                setup = [] if index == 0 else ["--no-setup-streams"]
                with open(Path(tmp) / f"relay{index}.log", "w") as log:
                    relays.append(subprocess.Popen(
                        [sys.executable, "-m", "aclmon", "relay", "--nats", url, "--job", JOB,
                         "--host", f"node{index:02d}", *setup],
                        env=env, stdout=log, stderr=subprocess.STDOUT,
                        preexec_fn=dies_with_me(),
                    ))  # fmt: skip
                if index == 0:
                    wait_for_streams(url, relays[0], Path(tmp) / "relay0.log")
            start_at = time.time() + 5.0 + sources * 0.01
            for index, env in enumerate(host_envs):
                first = index * per_host
                faulty = ",".join(str(r) for r in FLEET_FAULTY if first <= r < first + per_host)
                loads.append(subprocess.Popen(
                    [sys.executable, str(Path(__file__).parent / "fleet_load.py"),
                     "--host", f"node{index:02d}", "--ranks", str(per_host),
                     "--first-rank", str(first), "--world", str(sources),
                     "--rate", str(args.rate), "--seconds", str(args.seconds),
                     "--start-at", str(start_at), "--faulty", faulty],
                    env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                    preexec_fn=niced_child(),
                ))  # fmt: skip
            viewer.stdin.write(f"start {start_at}\n")
            viewer.stdin.flush()
            loads_before = [psutil.cpu_times()]
            reports = []
            for load in loads:
                assert load.stdout is not None
                line = load.stdout.readline()
                reports.append(json.loads(line) if line.strip() else {"missing": True})
                if "error" in reports[-1]:
                    raise SystemExit(f"{reports[-1]['error']}; relay logs in {tmp}")
            load_average = os.getloadavg()
            for index, relay in enumerate(relays):
                if relay.poll() is not None:
                    log_text = (Path(tmp) / f"relay{index}.log").read_text()
                    raise SystemExit(f"relay {index} exited: {log_text[-2000:]}")
            offered = sum(sum(r.get("emitted", {}).values()) + r.get("dropped", 0) for r in reports)
            viewer.stdin.write(f"done {offered}\n")
            viewer.stdin.flush()
            out, _ = viewer.communicate(timeout=120)
            seen = json.loads(out.strip().splitlines()[-1])
            del loads_before
            relay_cpu = server_cpu = 0.0
            with contextlib.suppress(psutil.Error):
                times = psutil.Process(server.process.pid).cpu_times()  # type: ignore[union-attr]
                server_cpu = times.user + times.system
            for relay in relays:
                with contextlib.suppress(psutil.Error):
                    times = psutil.Process(relay.pid).cpu_times()
                    relay_cpu += times.user + times.system
            for index, load in enumerate(loads):
                out, _ = load.communicate("", timeout=60)
                for line in out.strip().splitlines():
                    reports[index].update(json.loads(line))
            for relay in relays:
                relay.send_signal(signal.SIGTERM)
            for relay in relays:
                relay.wait(30)
    if "error" in seen:
        raise SystemExit(seen["error"])
    return {
        "offered": offered,
        "offered_events_per_s": offered / args.seconds,
        "publisher_drops": sum(r.get("dropped", 0) + r.get("subscriber_drops", 0) for r in reports),
        "load_cpu_s": sum(r.get("cpu_s", 0.0) for r in reports),
        "relay_cpu_s": relay_cpu,
        "server_cpu_s": server_cpu,
        "load_average": load_average[0],
        **seen,
        "lost": offered - seen["received"],
    }


def fleet_main(args: argparse.Namespace) -> None:
    """``--sources N``: N synthetic ranks (``fleet_load.py``, N/8 per process) through
    8 ``aclmon relay`` processes (one per synthetic host) into one nats-server, and
    one viewer: the fleet screen, headless at 160x48, over a live NatsFeed. Then
    the fleet screen's frame time with N ranks. ``--runs`` times; medians."""
    if args.sources % FLEET_HOSTS:
        raise SystemExit(f"--sources must be a multiple of {FLEET_HOSTS}")
    root = str(Path(__file__).resolve().parents[1])
    runs = []
    for number in range(args.runs):
        run = fleet_run(args, root)
        runs.append(run)
        print(
            f"run {number + 1}: {args.sources} sources x {args.rate:g} events/s ="
            f" {run['offered']:,} events ({run['offered_events_per_s']:,.0f}/s) for"
            f" {args.seconds:g} s; decoded {run['received']:,}, lost {run['lost']},"
            f" gaps {run['gaps']}; lag p50 {run['lag_p50_ms']:.1f} p99 {run['lag_p99_ms']:.1f}"
            f" max {run['lag_max_ms']:.1f} ms; viewer {run['viewer_cpu_s']:.1f} s CPU over"
            f" {run['viewer_wall_s']:.1f} s, RSS {run['rss_before_mb']:.0f} ->"
            f" {run['rss_after_mb']:.0f} MB; relays {run['relay_cpu_s']:.1f} s,"
            f" nats-server {run['server_cpu_s']:.1f} s, load processes {run['load_cpu_s']:.1f} s;"
            f" screen {run['screen_rows']} rows (load average {run['load_average']:.1f}"
            f" on {os.cpu_count()} cores)",
            flush=True,
        )
        print(f"  lag p99 by second of the load (ms): {run['lag_p99_ms_by_second']};"
              f" the ranks' set-up: p99 {run['setup_lag_p99_ms']:.1f} ms", flush=True)  # fmt: skip
    busy_ms, idle_ms = fleet_frame_ms(args.sources)
    print(f"fleet screen at {SCREEN[0]}x{SCREEN[1]} with {args.sources} ranks: a refresh"
          f" that folds 1/{FLEET_HOSTS} of them {busy_ms:.1f} ms, one with nothing new"
          f" {idle_ms:.1f} ms (median)", flush=True)  # fmt: skip

    def median(name: str) -> float:
        return float(statistics.median(run[name] for run in runs))

    print(
        json.dumps(
            {
                "sources": args.sources,
                "hosts": FLEET_HOSTS,
                "runs": args.runs,
                "rate_per_source": args.rate,
                "seconds": args.seconds,
                "offered_events_per_s": round(median("offered_events_per_s")),
                "lost": int(median("lost")),
                "lost_per_run": [run["lost"] for run in runs],
                "gaps": int(median("gaps")),
                "lag_p50_ms": round(median("lag_p50_ms"), 1),
                "lag_p99_ms": round(median("lag_p99_ms"), 1),
                "lag_p99_ms_per_run": [round(run["lag_p99_ms"], 1) for run in runs],
                "viewer_cpu_percent": round(
                    statistics.median(100 * r["viewer_cpu_s"] / r["viewer_wall_s"] for r in runs), 1
                ),
                "viewer_rss_mb": round(median("rss_after_mb"), 1),
                "viewer_rss_mb_per_source": round(
                    statistics.median(
                        (r["rss_after_mb"] - r["rss_before_mb"]) / args.sources for r in runs
                    ),
                    3,
                ),
                # CPU per event (microseconds): what the load does not change
                "viewer_cpu_us_per_event": round(
                    statistics.median(
                        1e6 * r["viewer_cpu_s"] / max(r["received"], 1) for r in runs
                    ),
                    1,
                ),
                "relay_cpu_us_per_event": round(
                    statistics.median(1e6 * r["relay_cpu_s"] / max(r["offered"], 1) for r in runs),
                    1,
                ),
                "load_cpu_us_per_event": round(
                    statistics.median(1e6 * r["load_cpu_s"] / max(r["offered"], 1) for r in runs),
                    1,
                ),
                # the synthetic ranks' share of the machine (percent of all its cores)
                "load_cpu_percent": round(
                    statistics.median(
                        100 * r["load_cpu_s"] / r["viewer_wall_s"] / (os.cpu_count() or 1)
                        for r in runs
                    ),
                    1,
                ),
                "relay_cpu_percent": round(
                    statistics.median(
                        100 * r["relay_cpu_s"] / r["viewer_wall_s"] / FLEET_HOSTS for r in runs
                    ),
                    1,
                ),
                "frame_ms": round(busy_ms, 1),
                "idle_frame_ms": round(idle_ms, 1),
                "load_average": round(median("load_average"), 1),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--publishers", type=int, default=16)
    parser.add_argument("--rate", type=float, help="events/s per source (2,000; 20 with --sources)")
    parser.add_argument("--seconds", type=float, default=32.0)
    parser.add_argument("--sources", type=int, help="the large-fleet run: this many ranks")
    parser.add_argument("--runs", type=int, default=3, help="large-fleet runs (median)")
    args = parser.parse_args()
    if args.sources:
        args.rate = args.rate or 20.0
        fleet_main(args)
        return
    args.rate = int(args.rate or 2000)
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
    elif len(sys.argv) > 1 and sys.argv[1] == "--fleet-viewer":
        fleet_viewer_main(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--blast":
        blast_main(sys.argv[2], int(sys.argv[3]))
    else:
        main()
