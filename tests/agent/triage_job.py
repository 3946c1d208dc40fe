"""A pyACL job for the triage tests: it launches in one function and synchronizes in another.

Written against the pyACL API only (no aclmon import), in the shape of the public
samples: a model on one explicit stream, inputs copied from host arrays, and a
scratch buffer allocated and freed every step (what gives a stale pointer
something to point at). Faults come from ``ACLMON_SIM_FAULTS``.

usage: triage_job.py MODEL [--iterations N] [--idle-until FILE] [--max-seconds S]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import acl
import numpy as np

ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1


def check(result: object, what: str) -> object:
    ret = result[-1] if isinstance(result, tuple) else result
    if ret != 0:
        raise SystemExit(f"{what} failed: {ret}")
    return result[0] if isinstance(result, tuple) else result


def launch(model_id: int, inputs: int, outputs: int, stream: int) -> int:
    return acl.mdl.execute_async(model_id, inputs, outputs, stream)  # the launch site


def wait_for(stream: int) -> int:
    return acl.rt.synchronize_stream(stream)  # where a device error surfaces


def dataset(desc: int, count: int, size_of: object, fill: float) -> tuple[int, list[int]]:
    handle = acl.mdl.create_dataset()
    pointers = []
    for index in range(count):
        size = size_of(desc, index)  # type: ignore[operator]
        pointer = check(acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST), "malloc")
        host = np.full(size // 2, fill, dtype=np.float16)
        check(
            acl.rt.memcpy(pointer, size, acl.util.numpy_to_ptr(host), size,
                          ACL_MEMCPY_HOST_TO_DEVICE), "memcpy",
        )  # fmt: skip
        buffer = acl.create_data_buffer(pointer, size)
        check(acl.mdl.add_dataset_buffer(handle, buffer), "add_dataset_buffer")
        pointers.append(pointer)
    return handle, pointers


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--idle-until")
    parser.add_argument("--max-seconds", type=float, default=60.0)
    args = parser.parse_args()

    check(acl.init(), "acl.init")
    check(acl.rt.set_device(0), "set_device")
    context = check(acl.rt.create_context(0), "create_context")
    stream = check(acl.rt.create_stream(), "create_stream")
    model_id = check(acl.mdl.load_from_file(args.model), "load_from_file")
    desc = acl.mdl.create_desc()
    check(acl.mdl.get_desc(desc, model_id), "get_desc")
    inputs, in_pointers = dataset(
        desc, acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index, 0.5
    )
    outputs, out_pointers = dataset(
        desc, acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index, 0.0
    )
    failures = 0
    for _ in range(args.iterations):
        scratch = check(acl.rt.malloc(4096, ACL_MEM_MALLOC_HUGE_FIRST), "malloc scratch")
        check(acl.rt.free(scratch), "free scratch")
        ret = launch(model_id, inputs, outputs, stream)
        if ret == 0:
            ret = wait_for(stream)
        if ret != 0:
            failures += 1
    print(f"iterations {args.iterations} failures {failures}", flush=True)
    deadline = time.monotonic() + args.max_seconds
    while args.idle_until and not os.path.exists(args.idle_until):
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    check(acl.mdl.unload(model_id), "unload")
    for pointer in in_pointers + out_pointers:
        acl.rt.free(pointer)
    check(acl.rt.destroy_stream(stream), "destroy_stream")
    check(acl.rt.destroy_context(context), "destroy_context")
    check(acl.rt.reset_device(0), "reset_device")
    check(acl.finalize(), "acl.finalize")
    return 0


if __name__ == "__main__":
    sys.exit(main())
