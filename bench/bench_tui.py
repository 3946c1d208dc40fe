"""TUI benchmark: recorded events into the app through its real source path.

A child process replays a recording through a real bus ``Publisher`` at rising
rates; this process runs the real app (headless Textual, 140x42) attached with
a ``LiveSource`` (the bus ``Subscriber``), exactly as ``aclmon attach`` does.

Measured, side by side in one run:
- ingest: events per second the store actually folded in each phase (from half
  a second in, the slope of the folded count), against the offered and the
  really sent rate; the sustained rate is the highest
  phase the app kept up with (no sequence gaps, >= 90 % of sent folded within
  the phase),
- key-to-screen latency while 50,000 events/s arrive: from a view-switch key
  to the first frame that shows the new view (median and p95),
- idle CPU of this process at the default refresh interval (the publisher is
  connected but quiet), over 5 s: before the load, and again after it has
  drained (with the store full),
- peak RSS of this process,
- timeline_frame_ms: the median time to redraw the Timeline view's canvas (every
  line through the Line API, as Textual asks for them) after a zoom or pan step,
  at 200x50, over a window that holds 100,000 operator slices.

The live arm (first; ``--live-only`` runs it alone) watches the demo job
(:class:`aclmon.sources.demo.DemoJob`, its normal rate, about 250 events/s, held
steady with ``--steady`` so the job's load does not swell between views) with
the real app attached headless at 160x48 as ``aclmon demo`` attaches it (a
``LiveSource``, the simulated host's NPUs beside it), each view in turn:
- viewer_cpu_over_job: this process's CPU (every thread) over the job's (its
  process and children) in the same interval of ``--live-seconds``,
- view_switch_ms: median time from the view's number key, pressed in another
  view, to the first frame that shows it,
- view_switch_over_paint: that over the time of one paint of the same view (the
  app's full repaint, as after a resize: every row drawn again, to the frame),
- frames_per_s: the frames the app displayed in that interval, per second.
``--profile DIR`` writes each view's cProfile of its CPU interval there (and
prints its top functions); its figures are then not the app's own.

usage: python bench/bench_tui.py [--quick] [--timeline-only] [--live-only]
                                 [--live-seconds S] [--profile DIR]
The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

RATES = (10_000, 25_000, 50_000, 100_000, 150_000, 200_000, 300_000)
PHASE_SECONDS = 3.0
LATENCY_RATE = 50_000
LATENCY_PRESSES = 24
IDLE_SECONDS = 5.0
#: seconds into a phase before its fold rate is measured (the viewer reaches the new rate)
RAMP_SECONDS = 0.5
LIVE_SIZE = (160, 48)
LIVE_SECONDS = 10.0
#: view switches (and paints) timed per view: each figure is a median, and five
#: samples of a 10-20 ms time on a shared machine moved the ratio by 0.5 from one
#: run of the same code to the next (eleven: by about 0.2)
LIVE_SWITCHES = 11


# ------------------------------------------------------------------ the recording
def make_recording(path: Path, count: int) -> None:
    """A mixed event stream like a busy job: samples, syncs, op timings, exceptions."""
    from aclmon import events as ev
    from aclmon.bus import RecordingWriter

    clock = ev.Clock()
    tensor = ev.TensorDesc(1, 2, (32, 1024), 0x1000, 65536, "x")
    streams = [0x7000 + i for i in range(16)]
    events = [clock.make(ev.Hello, *ev.hello_fields("sim", "Ascend910B1", 8))]
    for device in range(8):
        events.append(clock.make(ev.ContextCreated, device, 0x5000 + device, True))
        for n in range(2):
            s = streams[device * 2 + n]
            events.append(
                clock.make(ev.StreamCreated, device, 0x5000 + device, s, device * 2 + n, 0, 0)
            )
    i = 0
    while len(events) < count:
        i += 1
        r = i % 100
        s = streams[i % 16]
        if r < 40:
            events.append(
                clock.make(
                    ev.OpTiming, 1, f"layer{i % 300}/MatMul", "MatMulV2", i, i + 40, 40 + i % 7
                )
            )
        elif r < 60:
            events.append(clock.make(ev.StreamSyncBegin, s, 1))
        elif r < 80:
            events.append(clock.make(ev.StreamSynchronized, s, 20_000 + i % 999, 0, -1))
        elif r < 88:
            events.append(clock.make(ev.ExecuteBegin, 1, s, 0))
        elif r < 96:
            events.append(clock.make(ev.ExecuteEnd, 1, s, 1_000_000, 0))
        elif r < 98:
            d = i % 8
            events.append(
                clock.make(
                    ev.DeviceSample, d, i % 100, i % 50, i % 10, 2**33, 2**36, "OK", 40.0, 200.0
                )
            )
        else:
            events.append(clock.make(ev.AclException, i % 8, i % 16, i, 1, 507015, f"op{i}", "Add",
                                     (tensor,), (tensor,)))  # fmt: skip
    with RecordingWriter(path, {"bench": "tui"}) as writer:
        writer.write_many(events)


# ------------------------------------------------------------------ the publisher (child)
def publisher_main(address: str, recording: str, schedule: str) -> int:
    from aclmon.bus import Publisher, RecordingReader

    # Made here, not in the viewer, so the viewer's peak memory is its own.
    make_recording(Path(recording), 200_000)
    reader = RecordingReader(recording, background=False)
    events = list(reader.iter_events())
    reader.close()
    publisher = Publisher(address, queue_size=200_000).start()
    print("ready", flush=True)
    sys.stdin.readline()  # the viewer is attached
    n = 0
    for part in schedule.split(","):
        rate, seconds = part.split(":")
        rate_i, seconds_f = int(rate), float(seconds)
        print(f"phase {rate_i}", flush=True)
        start = time.perf_counter()
        sent = 0
        while (elapsed := time.perf_counter() - start) < seconds_f:
            due = int(rate_i * elapsed) - sent
            for _ in range(due):
                publisher.publish(events[n])
                n = n + 1 if n + 1 < len(events) else 0
            sent += max(due, 0)
            time.sleep(0.002)
        # What the publisher really managed (on 2 cores it can fall short of the offer).
        print(
            f"sent {rate_i} {sent / (time.perf_counter() - start):.0f} {publisher.dropped}",
            flush=True,
        )
    print(f"done dropped={publisher.dropped}", flush=True)
    sys.stdin.readline()
    publisher.close()
    return 0


# ------------------------------------------------------------------ the viewer (this process)
def frame_times(app: Any) -> list[float]:
    """The times the app displays a frame, from now on (filled as it runs)."""
    frames: list[float] = []
    original_display = app._display

    def display_hook(screen, renderable):  # type: ignore[no-untyped-def]
        frames.append(time.perf_counter())
        return original_display(screen, renderable)

    app._display = display_hook
    return frames


async def run_viewer(address: str, child: subprocess.Popen[str], quick: bool) -> dict[str, object]:
    from textual.events import Key

    from aclmon.sources.live import LiveSource
    from aclmon.tui.app import AclmonApp
    from aclmon.tui.options import DEFAULT_INTERVAL

    phases: list[tuple[int, float]] = []
    sent_rates: dict[int, tuple[int, int]] = {}  # offered -> (sent per s, publisher drops so far)
    done = threading.Event()

    def read_child() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("phase "):
                phases.append((int(line.split()[1]), time.perf_counter()))
            elif line.startswith("sent "):
                _, rate, per_s, dropped = line.split()
                sent_rates[int(rate)] = (int(per_s), int(dropped))
            elif line.startswith("done"):
                done.set()

    app = AclmonApp(LiveSource(address), interval=DEFAULT_INTERVAL)
    frames = frame_times(app)
    switched: list[float] = []  # when the view-switch action ran
    original_show = app.action_show_view

    def show_hook(view: str) -> None:
        switched.append(time.perf_counter())
        original_show(view)

    app.action_show_view = show_hook  # type: ignore[method-assign]
    latencies: list[float] = []
    applied: list[tuple[float, int, int]] = []  # (time, events folded, gaps seen)
    async with app.run_test(size=(140, 42), headless=True) as pilot:
        loop_start = time.perf_counter()
        while app.source.state != "connected":
            await asyncio.sleep(0.05)
            if time.perf_counter() - loop_start > 20:
                raise SystemExit("viewer could not connect")
        await pilot.press("2")  # the exceptions tail: the busiest view
        # Idle: connected to a quiet publisher, refreshing at the default interval.
        await asyncio.sleep(1.0)
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        await asyncio.sleep(IDLE_SECONDS if not quick else 2.0)
        idle_cpu = (time.process_time() - cpu0) / (time.perf_counter() - t0) * 100
        threading.Thread(target=read_child, daemon=True).start()
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()

        async def sample_counter() -> None:
            while True:
                counters = app.store.state.counters
                applied.append((time.perf_counter(), counters.events, counters.gaps))
                await asyncio.sleep(0.05)

        sampler = asyncio.create_task(sample_counter())
        keys = ["1", "3", "4", "2"]
        k = 0
        while not done.is_set():
            in_latency_phase = bool(phases) and phases[-1][0] == LATENCY_RATE
            if (
                in_latency_phase
                and len(latencies) < LATENCY_PRESSES
                and time.perf_counter() - phases[-1][1] > 0.5
            ):
                key = keys[k % len(keys)]
                k += 1
                switched.clear()
                t0 = time.perf_counter()
                # Straight into the app's queue, as the terminal driver does.
                app.post_message(Key(key, key))
                while True:
                    if switched:
                        later = [t for t in frames if t >= switched[0]]
                        if later:
                            latencies.append((later[0] - t0) * 1000)
                            break
                    await asyncio.sleep(0.001)
                    if time.perf_counter() - t0 > 2:
                        latencies.append(2000.0)
                        break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.02)
        sampler.cancel()
        counters = app.store.state.counters
        applied.append((time.perf_counter(), counters.events, counters.gaps))
        end_time = time.perf_counter()
        gaps = app.store.state.counters.gaps
        # Let the backlog drain (no new events for a second), then measure idle CPU
        # with the publisher connected but quiet.
        settle_end = time.perf_counter() + 20
        last = -1
        while time.perf_counter() < settle_end:
            now_events = app.store.state.counters.events
            if now_events == last:
                break
            last = now_events
            await asyncio.sleep(1.0)
        # process_time: CPU of every thread of this process (UI loop + subscriber), ns resolution.
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        await asyncio.sleep(IDLE_SECONDS if not quick else 2.0)
        idle_after_cpu = (time.process_time() - cpu0) / (time.perf_counter() - t0) * 100
        child.stdin.write("bye\n")
        child.stdin.flush()

    # Folded events per phase, from the sampled counter.
    rows = []
    bounds = [*phases, (0, end_time)]
    for (rate, start), (_, stop) in itertools.pairwise(bounds):
        # From RAMP_SECONDS into the phase (the rate the fold settles at, not the
        # previous phase's backlog or the first batch in flight), as the slope of
        # the folded count over the samples: the count grows by a whole batch per
        # refresh, so the first and last samples alone would miss up to a batch.
        inside = [(t, n, g) for t, n, g in applied if start + RAMP_SECONDS <= t <= stop]
        if len(inside) < 3:
            continue
        slope = statistics.linear_regression([t for t, _n, _g in inside],
                                             [n for _t, n, _g in inside]).slope  # fmt: skip
        sent, dropped = sent_rates.get(rate, (0, 0))
        rows.append(
            {"offered": rate, "sent_per_s": sent, "applied_per_s": round(slope),
             "gaps": inside[-1][2] - inside[0][2], "publisher_dropped_total": dropped}
        )  # fmt: skip
    # Kept up: no event lost in the phase (no sequence gaps) and at least 90 % of what
    # was sent folded within the phase (the rest is in flight, not lost).
    sustained = max(
        [r["applied_per_s"] for r in rows
         if r["gaps"] == 0 and r["applied_per_s"] >= 0.9 * r["sent_per_s"]]
        or [0]
    )  # fmt: skip
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "phases": rows,
        "gaps": gaps,
        "sustained": sustained,
        "latencies": latencies,
        "idle_cpu": idle_cpu,
        "idle_after_cpu": idle_after_cpu,
        "peak_rss_mb": peak_rss_mb,
    }


# ------------------------------------------------------------------ the live arm
def job_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of a process and its children so far."""
    import psutil

    process = psutil.Process(pid)
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


async def live_views(
    seconds: float, switches: int, profile_dir: Path | None, only: set[str] | None = None
) -> dict[str, object]:
    """Each view of the app watching the demo job: CPU beside the job's, switch and paint times."""
    import cProfile
    import pstats

    from textual.events import Key

    from aclmon.sources.demo import DemoJob
    from aclmon.sources.host import WithHost
    from aclmon.sources.live import LiveSource
    from aclmon.tui.app import AclmonApp
    from aclmon.tui.host_commands import host_feed, host_opener

    results: dict[str, dict[str, float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="aclmon-bench-") as tmp,
        DemoJob(directory=Path(tmp), extra_args=["--steady"]) as job,
    ):
        assert job.process is not None
        job_pid = job.process.pid
        feed = host_feed(host_opener("auto", sim=True, timeout=5.0, details="rotate"))
        feed.start()
        live = LiveSource(str(job.socket_path), description="aclmon demo")
        app = AclmonApp(WithHost(live, feed.reader()))
        frames = frame_times(app)
        #: the views the app shows (Compare only with a golden run), in tab order
        shown = app.view_entries

        async def next_frame_after(t0: float, limit: float = 3.0) -> float:
            """ms from ``t0`` to the first frame displayed after ``t0``."""
            while True:
                later = [t for t in frames if t > t0]
                if later:
                    return (later[0] - t0) * 1000
                if time.perf_counter() - t0 > limit:
                    return limit * 1000
                await asyncio.sleep(0.001)

        async def press(key: str) -> float:
            """A key straight into the app's queue (as the terminal driver puts it):
            ms to the first frame after the switch ran."""
            t0 = time.perf_counter()
            app.post_message(Key(key, key))
            while app.current_view != shown[int(key) - 1].id:
                await asyncio.sleep(0.001)
                if time.perf_counter() - t0 > 3.0:
                    return 3000.0
            return await next_frame_after(t0)

        async def paint() -> float:
            t0 = time.perf_counter()
            app._repaint()
            return await next_frame_after(t0)

        try:
            async with app.run_test(size=LIVE_SIZE, headless=True):
                start = time.perf_counter()
                while app.store.state.hello is None or app.store.state.counters.events < 500:
                    await asyncio.sleep(0.1)
                    if time.perf_counter() - start > 30:
                        raise SystemExit("the demo job sent no events")
                for n, entry in enumerate(shown):
                    if only and entry.id not in only:
                        continue
                    key, other = str(n + 1), str((n - 1) % len(shown) + 1)
                    switch_ms, paint_ms = [], []
                    for _ in range(switches):
                        await press(other)
                        await asyncio.sleep(0.3)
                        switch_ms.append(await press(key))
                        await asyncio.sleep(0.3)
                    for _ in range(switches):
                        paint_ms.append(await paint())
                        await asyncio.sleep(0.2)
                    await asyncio.sleep(1.0)
                    profiler = cProfile.Profile() if profile_dir is not None else None
                    events0 = app.store.state.counters.events
                    job0, cpu0, t0 = (
                        job_cpu_seconds(job_pid),
                        time.process_time(),
                        time.perf_counter(),
                    )
                    if profiler is not None:
                        profiler.enable()
                    await asyncio.sleep(seconds)
                    if profiler is not None:
                        profiler.disable()
                    wall = time.perf_counter() - t0
                    painted_frames = sum(1 for t in frames if t0 <= t <= t0 + wall)
                    viewer_cpu = time.process_time() - cpu0
                    job_cpu = job_cpu_seconds(job_pid) - job0
                    events = app.store.state.counters.events - events0
                    if profiler is not None and profile_dir is not None:
                        profile_dir.mkdir(parents=True, exist_ok=True)
                        path = profile_dir / f"{entry.id}.prof"
                        profiler.dump_stats(str(path))
                        print(f"--- profile of {entry.id}: {path}")
                        pstats.Stats(str(path)).sort_stats("tottime").print_stats(12)
                    switch, painted = statistics.median(switch_ms), statistics.median(paint_ms)
                    results[entry.id] = {
                        "viewer_cpu_over_job": round(viewer_cpu / job_cpu, 3) if job_cpu else 0.0,
                        "viewer_cpu_percent": round(viewer_cpu / wall * 100, 2),
                        "job_cpu_percent": round(job_cpu / wall * 100, 2),
                        "events_per_s": round(events / wall),
                        "view_switch_ms": round(switch, 1),
                        "paint_ms": round(painted, 1),
                        "view_switch_over_paint": round(switch / painted, 2) if painted else 0.0,
                        "frames_per_s": round(painted_frames / wall, 2),
                        "load": round(os.getloadavg()[0], 2),
                    }
                    r = results[entry.id]
                    print(f"live {entry.id:<10} viewer {r['viewer_cpu_percent']:5.1f} %"
                          f" job {r['job_cpu_percent']:5.1f} % -> {r['viewer_cpu_over_job']:.3f}"
                          f"  ({r['events_per_s']} ev/s)  switch {switch:6.1f} ms"
                          f"  paint {painted:6.1f} ms -> {r['view_switch_over_paint']:.2f}"
                          f"  {r['frames_per_s']:.1f} frames/s"
                          f"  (load {r['load']:.2f})", flush=True)  # fmt: skip
        finally:
            feed.close()
    return results


# ------------------------------------------------------------------ the timeline
TIMELINE_SLICES = 100_000
TIMELINE_STEPS = ("w", "w", "s", "a", "d", "s", "w", "d", "a", "s") * 3


def timeline_events(slices: int) -> list[object]:
    """Four streams, each running its model over and over, 100 operators a run."""
    from aclmon import events as ev

    clock = ev.Clock()
    out: list[object] = [clock.make(ev.Hello, *ev.hello_fields("sim", "Ascend910B1", 1))]
    out.append(clock.make(ev.ContextCreated, 0, 0x5000, True))
    for n in range(4):
        out.append(clock.make(ev.StreamCreated, 0, 0x5000, 0x7000 + n, n, 0, 0))
        out.append(clock.make(ev.ModelLoaded, n + 1, 0, f"model{n}", 100))
    start = time.time_ns() + 1_000_000
    runs = slices // (4 * 100)
    for run in range(runs):
        for n in range(4):
            begin = start + run * 1_100_000  # a run every 1.1 ms, 100 ops of 10 us
            out.append(ev.ExecuteEnd(0, begin + 20_000, n + 1, 0x7000 + n, 20_000, 0))
            for op in range(100):
                op_start = (begin + 50_000 + op * 10_000) // 1000
                out.append(ev.OpTiming(0, begin + 1_000_000, n + 1, f"layer{op}/Conv2D",
                                       "Conv2D", op_start, op_start + 9, 9, 0))  # fmt: skip
    return out


async def timeline_frames() -> tuple[float, int]:
    """(median ms per redraw of the whole canvas after a step, slices in the window)."""
    from aclmon.sources.base import ListSource
    from aclmon.store.slice_index import IndexedTimeline
    from aclmon.tui.app import AclmonApp

    built = IndexedTimeline.build(timeline_events(TIMELINE_SLICES))
    assert built is not None
    app = AclmonApp(ListSource([], description="bench"), clock=lambda: 0.0)
    async with app.run_test(size=(200, 50)) as pilot:
        app.slices = built
        view = app.timeline_view
        view.show_timeline(built)
        await pilot.press("6", "z")  # the whole span: every slice in the window
        await pilot.pause()
        shown = len(view.slices_in_window())
        canvas = view.canvas
        times = []
        for key in TIMELINE_STEPS:
            await pilot.press(key)
            began = time.perf_counter()
            for y in range(canvas.size.height):
                canvas.render_line(y)
            times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), shown


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="shorter phases (smoke run)")
    parser.add_argument("--publish", nargs=3, metavar=("ADDR", "RECORDING", "SCHEDULE"))
    parser.add_argument("--timeline-only", action="store_true", help="only timeline_frame_ms")
    parser.add_argument("--live-only", action="store_true", help="only the live arm (the demo)")
    parser.add_argument("--no-live", action="store_true", help="without the live arm")
    parser.add_argument(
        "--live-seconds",
        type=float,
        default=None,
        metavar="S",
        help=f"CPU interval per view (default {LIVE_SECONDS:g}, --quick 4)",
    )
    parser.add_argument("--views", help="the live arm on these views only (ids, commas)")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="write each view's cProfile of the live arm to DIR")  # fmt: skip
    args = parser.parse_args()
    if args.publish:
        return publisher_main(*args.publish)
    # The app runs here: its collector set as the `aclmon` command sets a viewer's.
    from aclmon.collector import tune_for_viewer

    tune_for_viewer()
    live: dict[str, object] = {}
    if not (args.timeline_only or args.no_live):
        live_seconds = args.live_seconds or (4.0 if args.quick else LIVE_SECONDS)
        print(f"live arm: the demo job, each view {live_seconds:g} s at"
              f" {LIVE_SIZE[0]}x{LIVE_SIZE[1]} (load {os.getloadavg()[0]:.2f})")  # fmt: skip
        only = set(args.views.split(",")) if args.views else None
        views = asyncio.run(live_views(live_seconds, LIVE_SWITCHES, args.profile, only))
        live = {
            "viewer_cpu_over_job_max": max(v["viewer_cpu_over_job"] for v in views.values()),
            "view_switch_over_paint_max": max(v["view_switch_over_paint"] for v in views.values()),
            "live_views": views,
        }
        if args.live_only:
            print(json.dumps({**live, "load_average": round(os.getloadavg()[0], 2)}))
            return 0
    frame_ms, shown = asyncio.run(timeline_frames())
    print(f"timeline redraw at 200x50 over {shown} slices: median {frame_ms:.1f} ms"
          f" (load {os.getloadavg()[0]:.1f})")  # fmt: skip
    if args.timeline_only:
        print(json.dumps({"timeline_frame_ms": round(frame_ms, 1)}))
        return 0

    seconds = 1.5 if args.quick else PHASE_SECONDS
    schedule = ",".join(
        f"{rate}:{seconds if rate != LATENCY_RATE else seconds * 2}" for rate in RATES
    )
    with tempfile.TemporaryDirectory(prefix="aclmon-bench-") as tmp:
        recording = Path(tmp) / "bench.aclrec"
        address = str(Path(tmp) / "pub.sock")
        child = subprocess.Popen(
            [sys.executable, __file__, "--publish", address, str(recording), schedule],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert child.stdout is not None
            if child.stdout.readline().strip() != "ready":  # recording made, publisher listening
                raise SystemExit("publisher did not start")
            result = asyncio.run(run_viewer(address, child, args.quick))
        finally:
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    lat = sorted(result["latencies"])  # type: ignore[arg-type]
    median = statistics.median(lat) if lat else float("nan")
    p95 = lat[min(len(lat) - 1, int(len(lat) * 0.95))] if lat else float("nan")
    print(f"cpu cores: {os.cpu_count()}  (publisher in a child process, app headless 140x42)")
    for row in result["phases"]:  # type: ignore[union-attr]
        print(
            f"offered {row['offered']:>7}/s  sent {row['sent_per_s']:>7}/s"
            f"  folded {row['applied_per_s']:>7}/s  gaps {row['gaps']}"
        )
    print(f"sequence gaps seen by the viewer: {result['gaps']}")
    print(f"sustained ingest: {result['sustained']} events/s")
    print(
        f"key-to-screen at {LATENCY_RATE}/s: median {median:.1f} ms, p95 {p95:.1f} ms over {len(lat)} keys"
    )
    print(f"idle CPU at the default interval: {result['idle_cpu']:.2f} % of a core"
          f" (after the load, state full: {result['idle_after_cpu']:.2f} %)")  # fmt: skip
    print(f"peak RSS: {result['peak_rss_mb']:.1f} MB")
    print(json.dumps({
        "ingest_events_per_s": result["sustained"],
        "key_latency_ms": round(median, 1),
        "key_latency_p95_ms": round(p95, 1),
        "idle_cpu_percent": round(result["idle_cpu"], 2),  # type: ignore[arg-type]
        "idle_after_load_cpu_percent": round(result["idle_after_cpu"], 2),  # type: ignore[arg-type]
        "peak_rss_mb": round(result["peak_rss_mb"], 1),  # type: ignore[arg-type]
        "timeline_frame_ms": round(frame_ms, 1),
        "phases": result["phases"],
        **live,
        "load_average": round(os.getloadavg()[0], 2),
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
