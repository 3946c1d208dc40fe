"""What the agent costs the job it watches, on the simulated runtime.

Three figures, each measured side by side in one process (alternating rounds,
median of the per-round results, so drift and noise hit both arms alike):

* ``hook_ns``: added time per hooked call that publishes an event: the job's
  ``synchronize_stream`` on an idle stream (the sim returns at once), run with
  the hooks installed and with the original functions, difference per call.
  It includes the publisher thread's share of the GIL (it packs every event).
  ``hook_no_event_ns`` is the same for ``set_context`` with an unchanged
  context (the hook runs but publishes nothing).
* ``exception_us``: time of the agent's exception callback per exception
  (ids, ``create_and_get_op_desc``, every tensor desc, destroy, publish), on a
  real sim exception-info handle.
* ``stalled_viewer_ratio``: the job's model-execution throughput with a
  connected viewer that never reads, divided by the throughput with no
  viewer (1.0 = no effect; the target is >= 0.95).

Also reported: the model workload's relative overhead (agent vs none).

usage: python bench/bench_agent.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

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

    def model_loop(self, seconds: float) -> float:
        """Model executions per second for ``seconds``."""
        mdl, rt = self.acl.mdl, self.acl.rt
        args = (self.model_id, self.inputs, self.outputs, self.stream)
        done = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            for _ in range(20):
                mdl.execute_async(*args)
                rt.synchronize_stream(self.stream)
            done += 20
        return done / seconds

    def close(self) -> None:
        acl = self.acl
        acl.mdl.unload(self.model_id)
        acl.rt.destroy_stream(self.stream)
        acl.rt.destroy_context(self.context)
        acl.rt.reset_device(0)
        acl.finalize()


def timed(fn, *args) -> float:
    start = time.perf_counter_ns()
    fn(*args)
    return time.perf_counter_ns() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hot-iterations", type=int, default=30000)
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from aclmon.agent.core import Agent
    from aclmon.bus.subscriber import Subscriber
    from aclmon.sim import acl, config

    workdir = Path(tempfile.mkdtemp(prefix="aclmon-bench-agent-"))
    config.configure(time_scale=0.0)  # device time does not make the host wait
    job = Job(acl, workdir)
    agent = Agent(
        acl, address=str(workdir / "agent.sock"), register=False, sample_interval=0.2
    ).start()
    hooks = agent.hooks

    # ---- hook_ns: the same loops with and without the hooks, alternating rounds
    job.sync_loop(2000)  # warm up both the sim and the wrappers
    n = args.hot_iterations
    per_call: list[float] = []
    per_quiet_call: list[float] = []
    for _ in range(args.rounds):
        hooks.uninstall()
        bare = timed(job.sync_loop, n)
        bare_quiet = timed(job.set_context_loop, n)
        hooks.install()
        watched = timed(job.sync_loop, n)
        watched_quiet = timed(job.set_context_loop, n)
        per_call.append((watched - bare) / n)
        per_quiet_call.append((watched_quiet - bare_quiet) / n)
        print(
            f"synchronize_stream: {bare / n:6.0f} ns bare, {watched / n:6.0f} ns with the agent;"
            f" set_context (same context): {bare_quiet / n:5.0f} ns bare,"
            f" {watched_quiet / n:5.0f} ns with the agent"
        )
    hook_ns = statistics.median(per_call)
    quiet_hook_ns = statistics.median(per_quiet_call)

    # ---- model workload overhead (relative); arm order alternates to cancel drift
    model_ratio = []
    for round_index in range(args.rounds):
        arms = {}
        for watched in (False, True) if round_index % 2 == 0 else (True, False):
            if watched:
                hooks.install()
            else:
                hooks.uninstall()
            arms[watched] = job.model_loop(0.3)
        hooks.install()
        model_ratio.append(arms[True] / arms[False])
        print(
            f"model loop: {arms[False]:8.0f} exec/s bare, {arms[True]:8.0f} exec/s with the agent"
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
    samples = []
    for _ in range(args.rounds):
        count = 500
        start = time.perf_counter_ns()
        for _ in range(count):
            capture.callback(handles[0])
        samples.append((time.perf_counter_ns() - start) / count / 1000)
    exception_us = statistics.median(samples)
    print(f"exception callback: {exception_us:.1f} us per exception")

    # ---- stalled viewer: throughput with a viewer that never reads vs no viewer
    def connect_stalled() -> Subscriber:
        """A viewer that stops reading once it holds 1000 events (never polled), run
        until the publisher drops for it: from then on it is the steady stalled state."""
        viewer = Subscriber(agent.address, readonly=True, buffer_events=1000).start()
        assert viewer.wait_connected(5.0)
        before = agent.publisher.dropped
        deadline = time.monotonic() + 15
        while agent.publisher.dropped == before and time.monotonic() < deadline:
            job.model_loop(0.2)
        return viewer

    ratios = []
    for round_index in range(args.rounds):
        # Alternate which arm goes first; the stalled arm always starts saturated.
        if round_index % 2 == 0:
            without = job.model_loop(0.4)
            stalled = connect_stalled()
        else:
            stalled = connect_stalled()
        dropped = agent.publisher.dropped
        with_stall = job.model_loop(0.4)
        if round_index % 2 == 1:
            stalled.close()
            without = job.model_loop(0.4)
        else:
            stalled.close()
        ratios.append(with_stall / without)
        print(
            f"stalled viewer: {with_stall:8.0f} exec/s with it, {without:8.0f} exec/s without"
            f" ({agent.publisher.dropped - dropped} events dropped for it meanwhile)"
        )
    stalled_ratio = statistics.median(ratios)
    job.close()
    agent.close(restore=True)

    figures = {
        "hook_ns": round(hook_ns, 1),
        "exception_us": round(exception_us, 2),
        "stalled_viewer_ratio": round(stalled_ratio, 4),
        "model_loop_ratio": round(statistics.median(model_ratio), 4),
        "hook_no_event_ns": round(quiet_hook_ns, 1),
        "rounds": args.rounds,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
