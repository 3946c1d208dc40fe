"""One rank of a data-parallel job for the first-anomaly tests (pyACL only, no aclmon).

Every rank runs its steps at the same moments (a shared monotonic time given in the
``--go`` file, which all processes of the machine read alike), as ranks held together
by an all-reduce do; ``--delay-ms`` makes this rank a little later, as a rank that
receives another's bad gradients is. ``--steps-done FILE``: this rank writes there
how many steps it finished; ``--after FILE``: this rank runs a step only once the
rank writing FILE finished it (then ``--delay-ms`` later), so a loaded machine
cannot reorder them. Overflows come from ``ACLMON_SIM_FAULTS``.

usage: anomaly_job.py MODEL ACL_JSON --go FILE --stop FILE [--steps N] [--step-ms MS]
                      [--delay-ms MS] [--steps-done FILE | --after FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import acl
import numpy as np


def check(result: object, what: str) -> object:
    ret = result[-1] if isinstance(result, tuple) else result
    if ret != 0:
        raise SystemExit(f"{what} failed: {ret}")
    return result[0] if isinstance(result, tuple) else result


def buffer(size: int, fill: float) -> int:
    pointer = check(acl.rt.malloc(size, 0), "malloc")
    host = np.full(size // 2, fill, dtype=np.float16)
    check(acl.rt.memcpy(pointer, size, acl.util.numpy_to_ptr(host), size, 1), "memcpy")
    return int(pointer)  # type: ignore[call-overload]


def steps_done(path: str) -> int:
    try:
        with open(path) as handle:
            return int(handle.read() or 0)
    except (OSError, ValueError):
        return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("acl_json")
    parser.add_argument("--go", required=True)
    parser.add_argument("--stop", required=True)
    parser.add_argument("--steps", type=int, default=7)
    parser.add_argument("--step-ms", type=float, default=150.0)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--steps-done")
    parser.add_argument("--after")
    args = parser.parse_args()

    check(acl.init(args.acl_json), "acl.init")
    check(acl.rt.set_device(0), "set_device")
    stream = check(acl.rt.create_stream(), "create_stream")
    model_id = check(acl.mdl.load_from_file(args.model), "load_from_file")
    desc = acl.mdl.create_desc()
    check(acl.mdl.get_desc(desc, model_id), "get_desc")
    inputs = acl.mdl.create_dataset()
    for index in range(acl.mdl.get_num_inputs(desc)):
        size = acl.mdl.get_input_size_by_index(desc, index)
        data = acl.create_data_buffer(buffer(size, 0.5), size)
        check(acl.mdl.add_dataset_buffer(inputs, data), "add_dataset_buffer")
    outputs = acl.mdl.create_dataset()
    for index in range(acl.mdl.get_num_outputs(desc)):
        size = acl.mdl.get_output_size_by_index(desc, index)
        data = acl.create_data_buffer(buffer(size, 0.0), size)
        check(acl.mdl.add_dataset_buffer(outputs, data), "add_dataset_buffer")
    print("ready", flush=True)
    while not os.path.exists(args.go):
        time.sleep(0.005)
    with open(args.go) as handle:
        start = float(handle.read())
    for step in range(args.steps):
        moment = start + (step * args.step_ms + args.delay_ms) / 1000
        if args.after:
            while steps_done(args.after) <= step:
                time.sleep(0.0005)
            moment = max(moment, time.monotonic() + args.delay_ms / 1000)
        time.sleep(max(0.0, moment - time.monotonic()))
        check(acl.mdl.execute_async(model_id, inputs, outputs, stream), "execute_async")
        acl.rt.synchronize_stream(stream)
        if args.steps_done:
            written = args.steps_done + ".tmp"
            with open(written, "w") as handle:
                handle.write(str(step + 1))
            os.replace(written, args.steps_done)  # whole or not at all
    print("steps done", flush=True)
    while not os.path.exists(args.stop):
        time.sleep(0.02)
    check(acl.mdl.unload(model_id), "unload")
    check(acl.rt.destroy_stream(stream), "destroy_stream")
    check(acl.rt.reset_device(0), "reset_device")
    check(acl.finalize(), "acl.finalize")
    return 0


if __name__ == "__main__":
    sys.exit(main())
