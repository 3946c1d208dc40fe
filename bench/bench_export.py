"""Trace export benchmark: ``aclmon export --trace`` of a 1,000,000-event recording
beside ``aclmon events --json`` of the same recording, in the same run.

The recording is written first: a training-like mix on 8 devices (executions
with their operator timings, synchronizes, msproftx ranges and marks on the
workers' threads, device and host samples, an exception every ~1,000 events,
an overflow dump every ~5,000). Each measurement then runs as its own child
process, alternating export and events runs (each writes its output to a file in
the same directory, as one keeps both), and the figures are medians: ``export_s`` and ``events_json_s`` (wall time of the command, Python
start included), ``export_over_events_json`` (target <= 1.0: the export, which
turns the events into a trace, costs no more than printing them) and
``export_over_events_json_cpu`` (the same in CPU time, steadier on a loaded machine),
``events_per_s`` (recording events over the export's time) and
``rss_growth_mb``, the export's peak RSS over the peak RSS of exporting a
recording of one event (target < 50: memory stays flat whatever the length).
The trace is checked with ``aclmon export --check`` once (outside the timing).
``window_query_ms_100k`` is what a timeline view's frame asks of the slice
index (:class:`aclmon.store.slice_index.SliceIndex`) over a lane of 100,000
slices (every row, 200 columns, at zoom and pan steps), beside the same over
1,000 slices: the query looks at the columns, not at the lane.

    python bench/bench_export.py [--events N] [--runs R] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

T0 = 1_764_669_600_000_000_000
#: events a second of the recorded job (1M events span ~100 s)
RATE = 10_000


def write_recording(path: str, count: int) -> None:
    from aclmon import events as ev
    from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION, ACL_FLOAT16, ACL_FORMAT_ND
    from aclmon.bus.recording import RecordingWriter

    tensor = ev.TensorDesc(ACL_FLOAT16, ACL_FORMAT_ND, (32, 64, 56, 56), 0x12C0_0000_0000,
                           1 << 20, "x")  # fmt: skip
    step_ns = 1_000_000_000 // RATE
    seq = 0
    with RecordingWriter(path, {"source": "bench"}) as writer:

        def add(cls: type, *fields: object) -> None:
            nonlocal seq
            seq += 1
            writer.write(cls(seq, T0 + seq * step_ns, *fields))

        add(ev.Hello, ev.SCHEMA_VERSION, "0.1.0", 4242, "node", ("train.py",), "sim",
            "Ascend910B1", 8)  # fmt: skip
        if count <= 1:
            return
        for device in range(8):
            add(ev.DeviceSet, device, 0)
            add(ev.ContextCreated, device, 0xA000 + device, True)
            add(ev.ModelLoaded, device + 1, device, f"resnet50_{device}", 180)
            for n in range(2):
                add(
                    ev.StreamCreated, device, 0xA000 + device, 0xB000 + device * 16 + n, n + 2, 0, 0
                )
        i = 0
        while seq < count:
            i += 1
            device = i % 8
            stream = 0xB000 + device * 16 + i % 2
            thread = 140_000_000_000_000 + device * 2 + i % 2
            now = T0 + (seq + 1) * step_ns
            if i % 1009 == 0:
                add(ev.AclException, device, i % 2 + 2, i, 77, ACL_ERROR_RT_AICORE_EXCEPTION,
                    f"resnet50/layer{i % 50}/conv", "Conv2D", (tensor, tensor), (tensor,))  # fmt: skip
            elif i % 4999 == 0:
                add(ev.DumpFileSeen,
                    f"/dump/20261203150939/{device}/resnet50_{device}/{device + 1}/{i}/Opdebug.Node_OpDebug.{i}.3.{i}",
                    "overflow", 2099, {"kind": "overflow", "task_id": i, "stream_id": 2,
                                       "op_type": "Conv2D", "op_name": f"conv{i}",
                                       "records": [{"explained": ["AI Core: overflow"]}]})  # fmt: skip
            elif i % 97 == 0:
                add(ev.DeviceSample, device, i % 100, i % 77, 3, i * 4096 % (1 << 36), 1 << 36,
                    "OK", 41.5, 250.0)  # fmt: skip
            elif i % 89 == 0:
                add(ev.HostSample, 55.0, 1 << 30, 24)
            elif i % 53 == 0:
                add(ev.TxRange, f"step {i}", now - 3_000_000, now, thread, thread)
            elif i % 211 == 0:
                add(ev.TxMark, f"epoch {i}", thread)
            elif i % 3 == 0:
                add(ev.StreamSynchronized, stream, 900_000, 0, -1)
            else:
                # an execute_async and the operator timings of the run before it
                add(ev.ExecuteEnd, device + 1, stream, 60_000, 0)
                start_us = (now - 2_000_000) // 1000
                for op in range(4):
                    add(ev.OpTiming, device + 1, f"resnet50/layer{op}/conv", "Conv2D",
                        start_us + op * 200, start_us + op * 200 + 180, 180, device)  # fmt: skip


def window_query_ms(slices: int, frames: int = 200) -> float:
    """Median time of the query a timeline view makes per frame over one lane: the
    slice of each of 200 columns in each row, at zoom/pan steps across the lane."""
    import random

    from aclmon.store.slice_index import SliceIndex
    from aclmon.store.slices import OPERATOR, Lane, NestingGuard, Process, Slice

    process = Process(1, "Ascend Hardware", 0, "NPU 0", 14, 1472)
    lane = Lane(process, 3, "Stream 3", 3, True, (0, 3), None, NestingGuard())
    index = SliceIndex()
    rng = random.Random(slices)
    at = 0
    for n in range(slices):  # executions of 10 operators, one row below each
        at += rng.randint(1_000, 50_000)
        if n % 11 == 0:
            parent = Slice(lane, at, at + 10 * 60_000, "run", OPERATOR, {}, None)
            index.slice(parent)
            op = at
        else:
            index.slice(Slice(lane, op, op + 50_000, f"op{n % 11}", OPERATOR, {}, None))
            op += 60_000
            at = op
    first, last = index.span() or (0, 1)
    times = []
    for frame in range(frames):
        width = (last - first) / (1.3 ** (frame % 40))  # zoom in step by step, and pan
        t0 = int(first + (last - first - width) * ((frame * 7) % frames) / frames)
        begin = time.perf_counter()
        for row in range(index.rows(lane)):
            index.cells(lane, row, t0, int(t0 + width), 200)
        times.append(time.perf_counter() - begin)
    return round(statistics.median(times) * 1000, 3)


def _child(argv: list[str], stdout: int | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one aclmon command in its
    own process."""
    begin = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "aclmon", *argv], stdout=stdout or subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - begin
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"aclmon {' '.join(argv)} failed: {stderr[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    args = parser.parse_args()
    directory = args.keep or tempfile.mkdtemp(prefix="aclmon-bench-export-")
    os.makedirs(directory, exist_ok=True)
    recording = os.path.join(directory, "big.aclmrec")
    tiny = os.path.join(directory, "tiny.aclmrec")
    trace = os.path.join(directory, "big.json")
    write_recording(recording, args.events)
    write_recording(tiny, 1)
    baseline_rss = _child(["export", "--trace", os.path.join(directory, "tiny.json"), tiny])[2]
    exports, events_json, peaks, export_cpu, events_cpu = [], [], [], [], []
    for _ in range(args.runs):  # alternating, so load changes hit both alike
        elapsed, cpu, peak = _child(["export", "--trace", trace, recording])
        exports.append(elapsed)
        export_cpu.append(cpu)
        peaks.append(peak)
        # to a file beside the trace, as one keeps its output (the trace is a file too)
        with open(os.path.join(directory, "events.jsonl"), "wb") as sink:
            elapsed, cpu, _ = _child(["events", "--json", recording], stdout=sink.fileno())
        events_json.append(elapsed)
        events_cpu.append(cpu)
    _child(["export", "--check", trace])
    export_s = statistics.median(exports)
    events_s = statistics.median(events_json)
    result = {
        "events": args.events,
        "recording_mb": round(os.path.getsize(recording) / 2**20, 1),
        "trace_mb": round(os.path.getsize(trace) / 2**20, 1),
        "export_s": round(export_s, 2),
        "events_json_s": round(events_s, 2),
        "export_over_events_json": round(export_s / events_s, 3),
        # the same in CPU time: what it costs on a free core (wall time on a loaded
        # machine also counts the waits for one)
        "export_over_events_json_cpu": round(
            statistics.median(export_cpu) / statistics.median(events_cpu), 3
        ),
        "events_per_s": round(args.events / export_s),
        "rss_peak_mb": round(statistics.median(peaks), 1),
        "rss_baseline_mb": round(baseline_rss, 1),
        "rss_growth_mb": round(statistics.median(peaks) - baseline_rss, 1),
        "window_query_ms_100k": window_query_ms(100_000),
        "window_query_ms_1k": window_query_ms(1_000),
        "load_average": round(os.getloadavg()[0], 2),
    }
    if not args.keep:
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
