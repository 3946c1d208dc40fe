"""A small pyACL job for the agent's end-to-end tests and benchmark.

Written against the pyACL API only (no aclmon import), so it runs the same
under ``aclmon run --sim`` and on a real CANN install with a real model.

usage: sim_job.py MODEL ACL_JSON [--until FILE] [--max-seconds S] [--iterations N]
                  [--pause S] [--callback-log FILE] [--sync] [--idle-until FILE]
                  [--exit-status N]

Runs the model on one explicit stream until FILE exists, S seconds pass or N
iterations are done. With --callback-log, registers its own exception
callback, which appends one line per exception to that file. --sync runs
``acl.mdl.execute`` (synchronous) instead of execute_async + synchronize_stream;
--idle-until keeps the job alive, idle, after its iterations until FILE exists;
--exit-status ends the script with that status.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import acl

ACL_MEM_MALLOC_HUGE_FIRST = 0


def check(ret: int, what: str) -> None:
    if ret != 0:
        raise SystemExit(f"{what} failed: {ret}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("acl_json")
    parser.add_argument("--until")
    parser.add_argument("--max-seconds", type=float, default=30.0)
    parser.add_argument("--iterations", type=int, default=0)
    parser.add_argument("--pause", type=float, default=0.005)
    parser.add_argument("--callback-log")
    parser.add_argument("--sync", action="store_true")
    parser.add_argument("--idle-until")
    parser.add_argument("--exit-status", type=int, default=0)
    args = parser.parse_args()

    check(acl.init(args.acl_json), "acl.init")
    if args.callback_log:
        log_path = args.callback_log

        def job_callback(info: int) -> None:
            task = acl.rt.get_task_id_from_exception_info(info)
            with open(log_path, "a") as handle:
                handle.write(f"task {task}\n")

        check(acl.rt.set_exception_info_callback(job_callback), "set_exception_info_callback")
    check(acl.rt.set_device(0), "set_device")
    context, ret = acl.rt.create_context(0)
    check(ret, "create_context")
    stream, ret = acl.rt.create_stream()
    check(ret, "create_stream")
    model_id, ret = acl.mdl.load_from_file(args.model)
    check(ret, "load_from_file")
    desc = acl.mdl.create_desc()
    check(acl.mdl.get_desc(desc, model_id), "get_desc")

    def dataset(count: int, size_of: object) -> tuple[int, list[int]]:
        handle = acl.mdl.create_dataset()
        pointers = []
        for index in range(count):
            size = size_of(desc, index)  # type: ignore[operator]
            pointer, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
            check(ret, "malloc")
            # 0x3C3C is 1.06 in float16: non-zero inputs, so an injected overflow really overflows
            check(acl.rt.memset(pointer, size, 0x3C, size), "memset")
            buffer = acl.create_data_buffer(pointer, size)
            _, ret = acl.mdl.add_dataset_buffer(handle, buffer)
            check(ret, "add_dataset_buffer")
            pointers.append(pointer)
        return handle, pointers

    inputs, in_pointers = dataset(acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index)
    outputs, out_pointers = dataset(acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index)
    deadline = time.monotonic() + args.max_seconds
    iterations = failures = 0
    while time.monotonic() < deadline:
        if args.until and os.path.exists(args.until):
            break
        if args.iterations and iterations >= args.iterations:
            break
        if args.sync:
            ret = acl.mdl.execute(model_id, inputs, outputs)
        else:
            ret = acl.mdl.execute_async(model_id, inputs, outputs, stream)
            if ret == 0:
                ret = acl.rt.synchronize_stream(stream)
        if ret != 0:
            failures += 1
        iterations += 1
        if args.pause:
            time.sleep(args.pause)
    print(f"iterations {iterations} failures {failures}", flush=True)
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
    return args.exit_status


if __name__ == "__main__":
    sys.exit(main())
