"""What the agent costs the job it watches, on the simulated runtime.

Every figure compares the same workload with and without the agent (or the
viewer) in one process, in interleaved rounds (the order changes every round),
and takes the median of the per-round results. Each is measured twice:

* by the job process's **CPU time** (all its threads: the hooks on the job's
  thread and the publisher's thread taking the events, and packing them when
  a viewer is connected; they share the GIL, so this is what the job pays).
  Other processes on a shared machine barely disturb it: these are the
  headline figures;
* by **wall-clock time** (``*_wall`` figures), which on a busy machine swings
  with everyone else's load.

Figures:

* ``hook_ns``: added cost per hooked call that publishes an event: the job's
  ``synchronize_stream`` on an idle stream (the sim returns at once).
  ``hook_no_event_ns``: the same for ``set_context`` to the current context
  (the hook runs, nothing is published). ``hook_without_bus_ns``: the
  ``synchronize_stream`` loop with the hooks' records appended to a plain
  deque nobody drains instead of the publisher's ring, i.e. the job thread's
  share of ``hook_ns`` (the rest is the publisher thread taking the records).
* ``hook_floor_ns``: the same loop with the least a hook can do instead of the
  agent's hook: a bare wrapper that reads the clock around the call and appends
  one tuple to a deque. ``hook_over_floor`` = ``hook_ns / hook_floor_ns``
  (target <= 3), both measured in this process and run, rounds interleaved;
  ``hook_over_floor_quartiles``: the spread of the same ratio taken round by round.

  The hook figures come from one set of rounds: each round runs every arm (bare,
  hooked, floor, hooks into a deque, set_context bare and hooked) once, in a
  new order, and each figure is the median over the rounds of its arm minus the
  bare arm of the same round. An arm's CPU time runs from before its loop until
  the publisher has taken and finished every record the loop left in its ring
  (waiting without CPU), so all the work the agent does for those calls is in it,
  and none of it spills into the next arm.
* ``launch_site_ns``: what noting a launch's site costs the launch (the caller's
  code object and line into the stream's ring, :mod:`aclmon.agent.launches`): the
  agent's launch wrapper around the same loop, less a wrapper that only passes the
  call through, in the same rounds. ``launch_site_over_floor`` =
  ``launch_site_ns / hook_floor_ns`` (target <= 1.5).
* ``hook_viewer_ns``: ``hook_ns`` with a viewer (another process) connected and
  reading everything: the publisher then builds, observes, packs and sends every
  event. ``hook_viewer_over_floor``: over the floor arm of those same rounds.
* ``exception_us``: the agent's exception callback per exception (ids,
  ``create_and_get_op_desc``, every tensor desc, destroy, publish), on a real
  sim exception-info handle.
* ``stalled_viewer_ratio``: the job's model-execution throughput with a
  connected viewer (another process) that never reads, divided by the
  throughput with no viewer (1.0 = no effect; the target is >= 0.95). The
  viewer is saturated first: the publisher is already dropping for it.
* ``model_loop_ratio``: throughput of a tiny model loop with the agent divided
  by without (2 hooked calls per execution).
* ``plog_job_ratio``: a CPU-bound job (a pure Python loop) while the agent's
  plog tail faces a 200 MB burst appended to the job's CANN log, over the same
  loop with nothing new in the log (iterations per CPU second of the process:
  the tail's work is all in it; target >= 0.95). ``plog_job_wall_ratio``: the
  same by wall time. ``plog_newest_seen_s``: how long after the burst an ERROR
  line written after it reached the agent's viewers.

usage: python bench/bench_agent.py [--rounds N] [--workload-rounds N] [--only plog]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: how long an arm waits after its loop for the publisher to finish what the loop left
#: (the publisher looks at its ring every 5 ms while records arrive)
SETTLE_S = 0.015

MODEL = {
    "name": "bench",
    "inputs": [{"name": "x", "dtype": "float16", "format": "ND", "shape": [4, 16]}],
    "weights": [{"name": "w", "dtype": "float16", "format": "ND", "shape": [16, 16]}],
    "ops": [
        {
            "name": "mm1",
            "type": "MatMul",
            "inputs": ["x", "w"],
            "outputs": [{"name": "y", "dtype": "float16", "format": "ND", "shape": [4, 16]}],
        },
        {
            "name": "relu1",
            "type": "Relu",
            "inputs": ["y"],
            "outputs": [{"name": "out", "dtype": "float16", "format": "ND", "shape": [4, 16]}],
        },
    ],
    "outputs": ["out"],
}


class Job:
    """The job side: a device, a context, a stream and a loaded model, on the sim."""

    def __init__(self, acl, workdir: Path) -> None:
        self.acl = acl
        model_path = workdir / "model.json"
        model_path.write_text(json.dumps(MODEL))
        assert acl.init() == 0
        assert acl.rt.set_device(0) == 0
        self.context, ret = acl.rt.create_context(0)
        assert ret == 0
        self.stream, ret = acl.rt.create_stream()
        assert ret == 0
        self.model_id, ret = acl.mdl.load_from_file(str(model_path))
        assert ret == 0, ret
        desc = acl.mdl.create_desc()
        assert acl.mdl.get_desc(desc, self.model_id) == 0
        self.inputs = self._dataset(
            desc, acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index
        )
        self.outputs = self._dataset(
            desc, acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index
        )

    def _dataset(self, desc, count, size_of):
        acl = self.acl
        dataset = acl.mdl.create_dataset()
        for index in range(count):
            size = size_of(desc, index)
            pointer, ret = acl.rt.malloc(size, 0)
            assert ret == 0
            acl.rt.memset(pointer, size, 0, size)
            _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(pointer, size))
            assert ret == 0
        return dataset

    def sync_loop(self, iterations: int) -> None:
        """A hooked call that returns at once and always yields an event."""
        synchronize_stream = self.acl.rt.synchronize_stream
        stream = self.stream
        for _ in range(iterations):
            synchronize_stream(stream)

    def set_context_loop(self, iterations: int) -> None:
        """A hooked call that yields no event when the context does not change."""
        set_context = self.acl.rt.set_context
        context = self.context
        for _ in range(iterations):
            set_context(context)

    def model_loop(self, seconds: float) -> tuple[float, float]:
        """Model executions per wall-clock second and per CPU second of this process."""
        mdl, rt = self.acl.mdl, self.acl.rt
        args = (self.model_id, self.inputs, self.outputs, self.stream)
        done = 0
        cpu_start = time.process_time_ns()
        start = time.perf_counter_ns()
        end = start + int(seconds * 1e9)
        while time.perf_counter_ns() < end:
            for _ in range(20):
                mdl.execute_async(*args)
                rt.synchronize_stream(self.stream)
            done += 20
        wall = time.perf_counter_ns() - start
        cpu = time.process_time_ns() - cpu_start
        return done * 1e9 / wall, done * 1e9 / max(cpu, 1)

    def close(self) -> None:
        acl = self.acl
        acl.mdl.unload(self.model_id)
        acl.rt.destroy_stream(self.stream)
        acl.rt.destroy_context(self.context)
        acl.rt.reset_device(0)
        acl.finalize()


def timed(fn, *args) -> tuple[int, int]:
    """(wall ns, process CPU ns) of one call."""
    cpu = time.process_time_ns()
    start = time.perf_counter_ns()
    fn(*args)
    return time.perf_counter_ns() - start, time.process_time_ns() - cpu


STALLED_VIEWER = """
import sys, time
from aclmon.bus.subscriber import Subscriber
viewer = Subscriber(sys.argv[1], readonly=True, buffer_events=1000).start()
assert viewer.wait_connected(20)
print("connected", flush=True)
time.sleep(600)  # never polls: stops reading once it holds 1000 events
"""


READING_VIEWER = """
import sys
from aclmon.bus.subscriber import Subscriber
viewer = Subscriber(sys.argv[1], readonly=True).start()
assert viewer.wait_connected(20)
print("connected", flush=True)
while True:
    viewer.poll(100_000, 0.05)  # takes everything, keeps nothing
"""


PLOG_INFO = (
    "[INFO] RUNTIME({pid},python):2026-01-01-10:00:00.123.456 [stream.cc:123]{pid}"
    " StreamSynchronize: stream 7 task {i} done, waited 12 us for the device\n"
)
PLOG_ERROR = (
    "[ERROR] RUNTIME({pid},python):2026-01-01-10:00:00.123.456 [stream.cc:456]{pid} {text}\n"
)


def cpu_bound(seconds: float) -> tuple[float, float]:
    """A job that never calls acl: (iterations per wall second, per CPU second)."""
    iterations = 0
    cpu = time.process_time()
    start = time.perf_counter()
    end = start + seconds
    while True:
        for _ in range(2000):
            iterations += 1
            _ = (iterations * 2654435761) % 4294967291
        if time.perf_counter() >= end:
            break
    wall = time.perf_counter() - start
    return iterations / wall, iterations / max(time.process_time() - cpu, 1e-9)


def plog_burst(agent, plog_file: Path, rounds: int, burst_mb: int) -> dict:
    """``plog_job_ratio`` and its wall twin: quiet rounds and rounds right after a
    burst appended to the followed plog file, interleaved."""
    pid = os.getpid()
    block = "".join(
        PLOG_ERROR.format(pid=pid, text="background failure") if i % 100 == 99
        else PLOG_INFO.format(pid=pid, i=i)
        for i in range(6000)
    ).encode()  # fmt: skip
    seen: list[float] = []
    ctx = agent.plog.ctx
    emit = ctx.emit

    def watch(cls, *fields) -> bool:  # every event the plog tail sends passes here
        if any(isinstance(f, str) and "after the burst" in f for f in fields):
            seen.append(time.perf_counter())
        return emit(cls, *fields)

    ctx.emit = watch
    cpu_ratios, wall_ratios, newest = [], [], []
    try:
        for round_index in range(rounds):
            plog_file.write_bytes(b"")
            time.sleep(0.6)  # the tail notices the truncation
            quiet = cpu_bound(2.0)
            with plog_file.open("ab") as log:
                for _ in range(max(1, burst_mb * (1 << 20) // len(block))):
                    log.write(block)
                log.write(PLOG_ERROR.format(pid=pid, text="after the burst").encode())
            written = time.perf_counter()
            seen.clear()
            burst = cpu_bound(2.0)
            deadline = time.perf_counter() + 5.0
            while not seen and time.perf_counter() < deadline:
                time.sleep(0.05)
            newest.append(seen[0] - written if seen else float("inf"))
            cpu_ratios.append(burst[1] / quiet[1])
            wall_ratios.append(burst[0] / quiet[0])
            print(
                f"plog burst round {round_index}: job {burst[1]:,.0f} it/CPU-s against"
                f" {quiet[1]:,.0f} quiet ({burst[1] / quiet[1]:.3f}); newest line seen"
                f" {newest[-1]:.2f} s after the burst",
                flush=True,
            )
    finally:
        ctx.emit = emit
        plog_file.write_bytes(b"")
    return {
        "plog_job_ratio": round(statistics.median(cpu_ratios), 4),
        "plog_job_wall_ratio": round(statistics.median(wall_ratios), 4),
        "plog_newest_seen_s": round(statistics.median(newest), 2),
        "plog_burst_mb": burst_mb,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31, help="rounds of the hook loops")
    parser.add_argument(
        "--workload-rounds", type=int, default=7, help="rounds of the model and viewer loops"
    )
    parser.add_argument("--hot-iterations", type=int, default=20000)
    parser.add_argument(
        "--only", choices=("plog",), help="measure only this (the plog burst figures)"
    )
    parser.add_argument("--burst-mb", type=int, default=200, help="size of the plog burst")
    args = parser.parse_args()

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    from aclmon.agent.core import Agent
    from aclmon.sim import acl, config

    workdir = Path(tempfile.mkdtemp(prefix="aclmon-bench-agent-"))
    # The job's CANN log, which the agent's plog tail follows (read when it starts).
    plog_dir = workdir / "log" / "debug" / "plog"
    plog_dir.mkdir(parents=True)
    plog_file = plog_dir / f"plog-{os.getpid()}_20260101000000000.log"
    plog_file.touch()
    os.environ["ASCEND_PROCESS_LOG_PATH"] = str(workdir / "log")
    config.configure(time_scale=0.0)  # device time does not make the host wait
    job = Job(acl, workdir)
    agent = Agent(
        acl, address=str(workdir / "agent.sock"), register=False, sample_interval=0.2
    ).start()
    if args.only == "plog":
        figures = plog_burst(agent, plog_file, args.workload_rounds, args.burst_mb)
        agent.close(restore=True)
        job.close()
        figures.update(python=sys.version.split()[0], cpus=os.cpu_count())
        print(json.dumps(figures))
        return 0
    hooks = agent.hooks
    n = args.hot_iterations

    floor_ring: collections.deque = collections.deque(maxlen=65536)

    def floor_wrapper(original):
        """The least a hook can do: time the call, append one tuple to a deque."""
        perf_ns = time.perf_counter_ns
        append = floor_ring.append

        def synchronize_stream(*args, **kwargs):
            start = perf_ns()
            result = original(*args, **kwargs)
            append((start, perf_ns(), result))
            return result

        return synchronize_stream

    class DequeSink:
        """A sink nobody drains: the records go to a bounded deque."""

        ring_limit = 1 << 30

        def __init__(self) -> None:
            self.ring: collections.deque = collections.deque(maxlen=1024)

        def submit(self, record) -> bool:
            self.ring.append(record)
            return True

        def count_drop(self) -> None:
            pass

    def passthrough_wrapper(original):
        """A launch wrapper that notes nothing: what the launch site is measured against."""

        def synchronize_stream(*args, **kwargs):
            return original(*args, **kwargs)

        return synchronize_stream

    sites = hooks.launches

    def site_wrapper(original):
        """The agent's launch wrapper, noting each call's site in the stream's ring."""
        return sites.wrapper("rt.synchronize_stream", original, agent.fail, 0, "stream")

    context = agent.context
    real_sink = context.sink
    ring = agent.publisher.ring

    def settle() -> None:
        """Wait (no CPU) until the publisher has taken every record the loop left in its
        ring and finished with them: its work for these calls is counted in their arm."""
        deadline = time.monotonic() + 2.0
        while ring and time.monotonic() < deadline:
            time.sleep(0.001)
        time.sleep(SETTLE_S)

    def arm(name: str) -> tuple[int, int]:
        """(wall ns of the loop, CPU ns of the loop and of the settling after it)."""
        hooks.uninstall()
        original = acl.rt.synchronize_stream
        try:
            if name == "floor":
                acl.rt.synchronize_stream = floor_wrapper(original)
            elif name == "site":
                acl.rt.synchronize_stream = site_wrapper(original)
            elif name == "passthrough":
                acl.rt.synchronize_stream = passthrough_wrapper(original)
            elif name in ("hooked", "deque", "context_hooked"):
                if name == "deque":
                    context.sink = DequeSink()
                hooks.install()  # the wrappers bind the sink's ring when installed
            loop = job.set_context_loop if name.startswith("context") else job.sync_loop
            settle()
            cpu = time.process_time_ns()
            start = time.perf_counter_ns()
            loop(n)
            wall = time.perf_counter_ns() - start
            settle()
            return wall, time.process_time_ns() - cpu
        finally:
            hooks.uninstall()
            acl.rt.synchronize_stream = original
            context.sink = real_sink

    # ---- hooks: every arm in every round, in a new order each round
    job.sync_loop(2000)  # warm up both the sim and the wrappers
    arms = (
        "bare", "hooked", "floor", "deque", "context_bare", "context_hooked", "site",
        "passthrough",
    )  # fmt: skip
    order = random.Random(1)
    per_round: dict[str, list[tuple[float, float]]] = {
        "hook": [], "floor": [], "own": [], "quiet": [], "site": []
    }  # fmt: skip
    for _ in range(args.rounds):
        names = list(arms)
        order.shuffle(names)
        got = {name: arm(name) for name in names}
        for key, name, base in (
            ("hook", "hooked", "bare"),
            ("floor", "floor", "bare"),
            ("own", "deque", "bare"),
            ("quiet", "context_hooked", "context_bare"),
            ("site", "site", "passthrough"),
        ):
            (wall1, cpu1), (wall0, cpu0) = got[name], got[base]
            per_round[key].append(((cpu1 - cpu0) / n, (wall1 - wall0) / n))
    hooks.install()

    def medians(key: str) -> tuple[float, float]:
        rows = per_round[key]
        return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)

    hook_ns, hook_wall_ns = medians("hook")
    quiet_ns, quiet_wall_ns = medians("quiet")
    own_ns, own_wall_ns = medians("own")
    floor_ns, floor_wall_ns = medians("floor")
    site_ns, site_wall_ns = medians("site")
    round_ratios = [
        h[0] / f[0] for h, f in zip(per_round["hook"], per_round["floor"], strict=True) if f[0] > 0
    ]
    hook_ratio_spread = statistics.quantiles(round_ratios, n=4) if len(round_ratios) > 1 else []
    print(f"synchronize_stream: +{hook_ns:5.0f} ns CPU, +{hook_wall_ns:5.0f} ns wall per call")
    print(f"set_context (same): +{quiet_ns:5.0f} ns CPU, +{quiet_wall_ns:5.0f} ns wall per call")
    print(
        f"synchronize_stream, events to a deque: +{own_ns:5.0f} ns CPU, +{own_wall_ns:5.0f} ns wall"
    )
    print(
        f"synchronize_stream, bare floor wrapper: +{floor_ns:5.0f} ns CPU,"
        f" +{floor_wall_ns:5.0f} ns wall; the hook costs {hook_ns / floor_ns:.2f}x the floor"
        f" (per round: quartiles {', '.join(f'{q:.2f}' for q in hook_ratio_spread)})"
    )

    print(
        f"launch site: +{site_ns:5.0f} ns CPU, +{site_wall_ns:5.0f} ns wall per launch,"
        f" {site_ns / floor_ns:.2f}x the floor"
    )

    # ---- the same with a viewer (another process) reading everything: the publisher
    # builds, observes and packs each event, and sends it
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    )

    def start_viewer(script: str) -> subprocess.Popen:
        """A viewer process running ``script``, once it says it is connected."""
        viewer = subprocess.Popen(
            [sys.executable, "-c", script, agent.address],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert viewer.stdout is not None and viewer.stdout.readline().strip() == "connected"
        return viewer

    def disconnect(viewer: subprocess.Popen) -> None:
        viewer.kill()
        viewer.wait()
        assert viewer.stdout is not None
        viewer.stdout.close()

    reader = start_viewer(READING_VIEWER)
    viewer_rows: list[tuple[float, float]] = []
    for _ in range(args.rounds):
        names = ["bare", "hooked", "floor"]
        order.shuffle(names)
        got = {name: arm(name) for name in names}
        viewer_rows.append(
            (
                (got["hooked"][1] - got["bare"][1]) / n,
                (got["floor"][1] - got["bare"][1]) / n,
            )
        )
    disconnect(reader)
    hooks.install()
    viewer_ns = statistics.median(r[0] for r in viewer_rows)
    viewer_floor_ns = statistics.median(r[1] for r in viewer_rows)
    print(
        f"synchronize_stream with a viewer reading: +{viewer_ns:5.0f} ns CPU"
        f" ({viewer_ns / viewer_floor_ns:.2f}x the floor, +{viewer_floor_ns:.0f} ns, of the same rounds)"
    )

    # ---- model workload
    model_cpu, model_wall = [], []
    for round_index in range(args.workload_rounds):
        arms = {}
        for watched in (False, True) if round_index % 2 == 0 else (True, False):
            if watched:
                hooks.install()
            else:
                hooks.uninstall()
            arms[watched] = job.model_loop(0.3)
        hooks.install()
        model_wall.append(arms[True][0] / arms[False][0])
        model_cpu.append(arms[True][1] / arms[False][1])
        print(
            f"model loop: {arms[False][0]:7.0f} exec/s bare, {arms[True][0]:7.0f} with the agent"
            f" (per CPU second: {arms[False][1]:7.0f} / {arms[True][1]:7.0f})"
        )

    # ---- exception_us: the agent's callback on a real exception-info handle
    job.close()
    # Fault rules are read at acl.init: re-initialise with one injected AI Core exception.
    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "mm1", "nth": 1}])
    job = Job(acl, workdir)
    capture = agent.exceptions
    assert capture is not None
    handles: list[int] = []
    capture.job_callback = handles.append  # the chain hands us the info handle
    acl.mdl.execute_async(job.model_id, job.inputs, job.outputs, job.stream)
    ret = acl.rt.synchronize_stream(job.stream)
    assert handles, f"no exception delivered (synchronize returned {ret})"
    capture.job_callback = None
    cpu_samples, wall_samples = [], []
    count = 500

    def exceptions() -> None:
        for _ in range(count):
            capture.callback(handles[0])

    for _ in range(args.rounds):
        wall, cpu = timed(exceptions)
        cpu_samples.append(cpu / count / 1000)
        wall_samples.append(wall / count / 1000)
    exception_us = statistics.median(cpu_samples)
    exception_wall_us = statistics.median(wall_samples)
    print(f"exception callback: {exception_us:.1f} us CPU, {exception_wall_us:.1f} us wall")

    # ---- stalled viewer (another process) against no viewer

    def connect_stalled() -> subprocess.Popen:
        viewer = start_viewer(STALLED_VIEWER)
        before = agent.publisher.dropped
        deadline = time.monotonic() + 15
        while agent.publisher.dropped == before and time.monotonic() < deadline:
            job.model_loop(0.1)  # until the publisher drops for it: the stalled state
        return viewer

    stalled_cpu, stalled_wall = [], []
    for round_index in range(args.workload_rounds):
        if round_index % 2 == 0:
            without = job.model_loop(0.4)
            viewer = connect_stalled()
            dropped = agent.publisher.dropped
            with_stall = job.model_loop(0.4)
            disconnect(viewer)
        else:
            viewer = connect_stalled()
            dropped = agent.publisher.dropped
            with_stall = job.model_loop(0.4)
            disconnect(viewer)
            time.sleep(0.05)  # the publisher notices the closed socket
            without = job.model_loop(0.4)
        stalled_wall.append(with_stall[0] / without[0])
        stalled_cpu.append(with_stall[1] / without[1])
        print(
            f"stalled viewer: {with_stall[0]:7.0f} exec/s with it, {without[0]:7.0f} without"
            f" (per CPU second: {with_stall[1]:7.0f} / {without[1]:7.0f};"
            f" {agent.publisher.dropped - dropped} events dropped for it meanwhile)"
        )
    plog = plog_burst(agent, plog_file, args.workload_rounds, args.burst_mb)
    job.close()
    agent.close(restore=True)

    figures = {
        **plog,
        "hook_ns": round(hook_ns, 1),
        "hook_floor_ns": round(floor_ns, 1),
        "hook_over_floor": round(hook_ns / floor_ns, 3),
        "hook_over_floor_quartiles": [round(q, 3) for q in hook_ratio_spread],
        "launch_site_ns": round(site_ns, 1),
        "launch_site_over_floor": round(site_ns / floor_ns, 3),
        "launch_site_wall_ns": round(site_wall_ns, 1),
        "exception_us": round(exception_us, 2),
        "stalled_viewer_ratio": round(statistics.median(stalled_cpu), 4),
        "model_loop_ratio": round(statistics.median(model_cpu), 4),
        "hook_viewer_ns": round(viewer_ns, 1),
        "hook_viewer_over_floor": round(viewer_ns / viewer_floor_ns, 3),
        "hook_no_event_ns": round(quiet_ns, 1),
        "hook_without_bus_ns": round(own_ns, 1),
        "hook_wall_ns": round(hook_wall_ns, 1),
        "hook_floor_wall_ns": round(floor_wall_ns, 1),
        "exception_wall_us": round(exception_wall_us, 2),
        "stalled_viewer_wall_ratio": round(statistics.median(stalled_wall), 4),
        "model_loop_wall_ratio": round(statistics.median(model_wall), 4),
        "rounds": args.rounds,
        "workload_rounds": args.workload_rounds,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
