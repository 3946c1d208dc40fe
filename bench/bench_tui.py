"""TUI benchmark: recorded events into the app through its real source path.

A child process replays a recording through a real bus ``Publisher`` at rising
rates; this process runs the real app (headless Textual, 140x42) attached with
a ``LiveSource`` (the bus ``Subscriber``), exactly as ``aclmon attach`` does.

Measured, side by side in one run:
- ingest: events per second the store actually folded in each phase, against
  the offered and the really sent rate; the sustained rate is the highest
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

usage: python bench/bench_tui.py [--quick] [--timeline-only]
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

RATES = (10_000, 25_000, 50_000, 100_000, 150_000, 200_000, 300_000)
PHASE_SECONDS = 3.0
LATENCY_RATE = 50_000
LATENCY_PRESSES = 24
IDLE_SECONDS = 5.0


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
    frames: list[float] = []
    original_display = app._display

    def display_hook(screen, renderable):  # type: ignore[no-untyped-def]
        frames.append(time.perf_counter())
        return original_display(screen, renderable)

    app._display = display_hook  # type: ignore[method-assign]
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
        inside = [(t, n, g) for t, n, g in applied if start <= t <= stop]
        if len(inside) < 2:
            continue
        (ta, na, ga), (tb, nb, gb) = inside[0], inside[-1]
        sent, dropped = sent_rates.get(rate, (0, 0))
        rows.append(
            {"offered": rate, "sent_per_s": sent, "applied_per_s": round((nb - na) / (tb - ta)),
             "gaps": gb - ga, "publisher_dropped_total": dropped}
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
    args = parser.parse_args()
    if args.publish:
        return publisher_main(*args.publish)
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
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
