"""Benchmark of the simulated pyACL runtime (aclmon.sim).

Measures, in one run:
* ops_per_s: operator executions per second over a 10,000-operator workload
  (mlp_head, 8 operators, executed 1,250 times with execute_async on one stream,
  in 5 synchronized rounds), with the device clock not waited for (time_scale
  0), so the figure is the simulator's own cost (numpy kernels, layouts,
  bookkeeping);
* ops_per_s_profiled / profiling_time_ratio: the same 10,000 operators while a
  profiling session records task time, in rounds alternating with the plain ones;
* stamps_per_s: msproftx stamps per second (acl.prof.mark while a profiling
  session with ACL_PROF_MSPROFTX runs; records go to the session's files);
* rt_call_ns: cost of one cheap runtime call (acl.rt.stream_query), the base
  the agent's hook overhead is compared with;
* memcpy_ns: one 4 KiB host-to-device acl.rt.memcpy (the direction found from
  the pointers, the range checked against the allocation).

Prints what it measured and ends with one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import aclmon.sim
from aclmon.sim import config as sim_config

ACL_PROF_MSPROFTX = 0x0080
ACL_PROF_TASK_TIME = 0x0002
ACL_AICORE_NONE = 0xFF
OPS = 10_000
STAMPS = 100_000
CALLS = 200_000
COPIES = 50_000


def check(ret: int, what: str) -> None:
    if ret != 0:
        sys.exit(f"{what} failed: {ret}")


def main() -> None:
    sim_config.configure(time_scale=0.0)
    acl = aclmon.sim.install()
    check(acl.init(), "acl.init")
    check(acl.rt.set_device(0), "set_device")
    stream, ret = acl.rt.create_stream()
    check(ret, "create_stream")
    model_path = Path(aclmon.sim.__file__).parent / "models" / "mlp_head.json"
    model_id, ret = acl.mdl.load_from_file(os.fspath(model_path))
    check(ret, "load")
    desc = acl.mdl.create_desc()
    check(acl.mdl.get_desc(desc, model_id), "get_desc")
    datasets = []
    for count, size_of in (
        (acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index),
        (acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index),
    ):
        ds = acl.mdl.create_dataset()
        for i in range(count):
            size = size_of(desc, i)
            ptr, _ = acl.rt.malloc(size, 0)
            host = np.random.default_rng(i).normal(0, 1, size // 2).astype(np.float16)
            acl.rt.memcpy(ptr, size, acl.util.numpy_to_ptr(host), size, 1)
            acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size))
        datasets.append(ds)
    ops_per_model = 8
    rounds = 5
    runs_per_round = OPS // ops_per_model // rounds

    def run_round() -> float:
        start = time.perf_counter()
        for _ in range(runs_per_round):
            acl.mdl.execute_async(model_id, datasets[0], datasets[1], stream)
        check(acl.rt.synchronize_stream(stream), "sync")
        return time.perf_counter() - start

    run_round()  # warm-up
    # Side by side: the plain workload and the same workload while an API-mode
    # profiling session records task time, in alternating rounds.
    plain = profiled = 0.0
    with tempfile.TemporaryDirectory() as prof_dir:
        check(acl.prof.init(prof_dir), "prof.init")
        task_cfg = acl.prof.create_config([0], ACL_AICORE_NONE, 0, ACL_PROF_TASK_TIME)
        for _ in range(rounds):
            plain += run_round()
            check(acl.prof.start(task_cfg), "prof.start")
            profiled += run_round()
            check(acl.prof.stop(task_cfg), "prof.stop")
        acl.prof.destroy_config(task_cfg)
        check(acl.prof.finalize(), "prof.finalize")
    ops = rounds * runs_per_round * ops_per_model
    ops_per_s = ops / plain
    ops_per_s_profiled = ops / profiled
    print(f"{ops} operator executions in {plain:.3f} s: {ops_per_s:,.0f} ops/s")
    print(
        f"{ops} operator executions with task-time profiling in {profiled:.3f} s: "
        f"{ops_per_s_profiled:,.0f} ops/s (x{profiled / plain:.2f} time)"
    )

    start = time.perf_counter()
    for _ in range(CALLS):
        acl.rt.stream_query(stream)
    rt_call_ns = (time.perf_counter() - start) / CALLS * 1e9
    print(f"acl.rt.stream_query: {rt_call_ns:.0f} ns per call")

    host = np.zeros(4096, np.uint8)
    host_ptr = acl.util.numpy_to_ptr(host)
    device_ptr, ret = acl.rt.malloc(host.nbytes, 0)
    check(ret, "malloc")
    start = time.perf_counter()
    for _ in range(COPIES):
        acl.rt.memcpy(device_ptr, host.nbytes, host_ptr, host.nbytes, 1)
    memcpy_ns = (time.perf_counter() - start) / COPIES * 1e9
    print(f"acl.rt.memcpy 4 KiB host to device: {memcpy_ns:.0f} ns per call")

    with tempfile.TemporaryDirectory() as prof_dir:
        check(acl.prof.init(prof_dir), "prof.init")
        cfg = acl.prof.create_config([0], ACL_AICORE_NONE, 0, ACL_PROF_MSPROFTX)
        check(acl.prof.start(cfg), "prof.start")
        stamp = acl.prof.create_stamp()
        check(acl.prof.set_stamp_trace_message(stamp, "bench", 5), "set message")
        start = time.perf_counter()
        for _ in range(STAMPS):
            acl.prof.mark(stamp)
        check(acl.prof.stop(cfg), "prof.stop")  # includes flushing the records to disk
        stamp_seconds = time.perf_counter() - start
        acl.prof.destroy_stamp(stamp)
        acl.prof.destroy_config(cfg)
        acl.prof.finalize()
    stamps_per_s = STAMPS / stamp_seconds
    print(
        f"{STAMPS} msproftx marks (recorded and flushed) in {stamp_seconds:.3f} s: "
        f"{stamps_per_s:,.0f} stamps/s"
    )
    check(acl.finalize(), "finalize")
    print(
        json.dumps(
            {
                "ops_per_s": round(ops_per_s),
                "stamps_per_s": round(stamps_per_s),
                "ops_per_s_profiled": round(ops_per_s_profiled),
                "profiling_time_ratio": round(profiled / plain, 3),
                "rt_call_ns": round(rt_call_ns),
                "memcpy_ns": round(memcpy_ns),
            }
        )
    )


if __name__ == "__main__":
    main()
