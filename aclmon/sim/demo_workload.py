"""The demo job: an ordinary pyACL inference program (``import acl``) for `aclmon demo`.

It is written against the pyACL API only, the way a real multi-device
inference service would be: per device two explicit contexts, a resident
cache of a few GiB, worker threads each with its own stream and a workspace
buffer whose size changes now and then, three models executing in a loop at a modest
rate (sleeps between iterations, so it never burns a core), an exception
callback that logs the failing operator, and recovery after a failed
synchronize (destroy and recreate the stream, carry on).

Run it through the simulator (``aclmon.sim.run_script(path, argv)``) or with
``python -m aclmon.sim.demo_workload``. When the simulator serves ``acl``, the
job asks it (through the documented environment variables, before
``acl.init``) for an AI Core exception every ~10-20 s and a real float16
overflow every ~15-30 s; its acl.json turns on overflow detection
(``dump_debug``) and dumps a few operators. It does not start profiling
itself, but works while someone else (the aclmon agent) profiles it. Each
worker marks its batches with msproftx: a push/pop range around every ten
requests and a mark every fifty. SIGTERM stops it as a service stops: the
workers finish, everything is released and it exits 0.

    demo_workload.py [--seconds N] [--devices N] [--first-device D] [--dump-path DIR] [--quiet]
                     [--steady]
"""

import argparse
import json
import math
import os
import random
import signal
import sys
import tempfile
import threading
import time

import numpy as np

try:
    import acl
except ImportError:  # no CANN on this machine: let the simulator serve ``acl``
    import aclmon.sim

    acl = aclmon.sim.install()

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_FLOAT16 = 1

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
#: (model file, worker threads per device, sleep range between iterations in s,
#: which of the device's two contexts the workers use)
WORKLOAD = (
    ("resnet_tiny.json", 1, (0.05, 0.20), 0),
    ("mlp_head.json", 1, (0.03, 0.12), 0),
    # a 12-layer BERT encoder: operator names as real jobs have them (and 157 of them
    # a run, so it runs less often than the others)
    ("bert_tiny.json", 1, (0.4, 1.2), 1),
)
CONTEXTS_PER_DEVICE = 2
GIB = 1 << 30
SIM_FAULTS = [
    {
        "kind": "aicore_exception",
        "op": "layer1/conv2",
        "model": "resnet_tiny",
        "every_s": 10,
        "jitter_s": 10,
    },
    {
        "kind": "overflow",
        "op": "bert/encoder/layer_11/attention/self/Mul",
        "model": "bert_tiny",
        "every_s": 15,
        "jitter_s": 15,
    },
    # two operators whose names differ only in the layer
    {
        "kind": "aicore_exception",
        "op": "bert/encoder/layer_1/attention/self/query/MatMul",
        "model": "bert_tiny",
        "every_s": 20,
        "jitter_s": 20,
    },
    {
        "kind": "aicore_exception",
        "op": "bert/encoder/layer_11/attention/self/query/MatMul",
        "model": "bert_tiny",
        "every_s": 25,
        "jitter_s": 20,
    },
]
#: modelled operator time x20 so the devices look busy at a few iterations/s.
SIM_CONFIG = {"cost_scale": 20.0}

_log_lock = threading.Lock()
_quiet = False


def log(message):
    if not _quiet:
        with _log_lock:
            print(f"[demo {time.strftime('%H:%M:%S')}] {message}", flush=True)


def check(ret, what):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def exception_callback(info):
    """Log the failing operator, as the pyACL AI Core troubleshooting guide shows."""
    device = acl.rt.get_device_id_from_exception_info(info)
    stream_id = acl.rt.get_stream_id_from_exception_info(info)
    task_id = acl.rt.get_task_id_from_exception_info(info)
    code = acl.rt.get_error_code_from_exception_info(info)
    op_name, in_desc, n_in, out_desc, n_out, ret = acl.mdl.create_and_get_op_desc(
        device, stream_id, task_id, 256
    )
    if ret == ACL_SUCCESS:
        acl.destroy_tensor_desc(in_desc)
        acl.destroy_tensor_desc(out_desc)
    log(
        f"exception callback: device {device} stream {stream_id} task {task_id} "
        f"error {code} operator {op_name or '?'} ({n_in} inputs, {n_out} outputs)"
    )


class LoadedModel:
    """A model on one device with its input/output buffers."""

    def __init__(self, path, seed):
        self.model_id, ret = acl.mdl.load_from_file(path)
        check(ret, f"load {os.path.basename(path)}")
        self.desc = acl.mdl.create_desc()
        check(acl.mdl.get_desc(self.desc, self.model_id), "get_desc")
        self.name = os.path.basename(path).rsplit(".", 1)[0]
        self.rng = np.random.default_rng(seed)
        self.inputs = self._dataset(
            acl.mdl.get_num_inputs(self.desc), acl.mdl.get_input_size_by_index
        )
        self.outputs = self._dataset(
            acl.mdl.get_num_outputs(self.desc), acl.mdl.get_output_size_by_index
        )

    def _dataset(self, count, size_of):
        dataset = acl.mdl.create_dataset()
        for i in range(count):
            size = size_of(self.desc, i)
            ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
            check(ret, "malloc")
            _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(ptr, size))
            check(ret, "add_dataset_buffer")
        return dataset

    def feed(self):
        """Fresh input data for this iteration (host -> device)."""
        for i in range(acl.mdl.get_dataset_num_buffers(self.inputs)):
            buf = acl.mdl.get_dataset_buffer(self.inputs, i)
            size = acl.get_data_buffer_size_v2(buf)
            host = self.rng.normal(0, 1, size // 2).astype(np.float16)
            check(
                acl.rt.memcpy(
                    acl.get_data_buffer_addr(buf),
                    size,
                    acl.util.numpy_to_ptr(host),
                    size,
                    ACL_MEMCPY_HOST_TO_DEVICE,
                ),
                "memcpy H2D",
            )

    def output_is_finite(self):
        buf = acl.mdl.get_dataset_buffer(self.outputs, 0)
        size = acl.get_data_buffer_size_v2(buf)
        host = np.empty(size, dtype=np.uint8)
        check(
            acl.rt.memcpy(
                acl.util.numpy_to_ptr(host),
                size,
                acl.get_data_buffer_addr(buf),
                size,
                ACL_MEMCPY_DEVICE_TO_HOST,
            ),
            "memcpy D2H",
        )
        dtype = (
            np.float16 if acl.mdl.get_output_data_type(self.desc, 0) == ACL_FLOAT16 else np.float32
        )
        return bool(np.isfinite(host.view(dtype)).all())

    def release(self):
        for dataset in (self.inputs, self.outputs):
            for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
                buf = acl.mdl.get_dataset_buffer(dataset, i)
                acl.rt.free(acl.get_data_buffer_addr(buf))
                acl.destroy_data_buffer(buf)
            acl.mdl.destroy_dataset(dataset)
        acl.mdl.unload(self.model_id)
        acl.mdl.destroy_desc(self.desc)


def swell(device_id, steady=False):
    """The factor on a worker's pause: a slow swell and ebb of the request rate,
    different per device, so the utilization a monitor shows keeps moving; 1.0
    (a constant rate) with ``--steady``, for a measurement that needs the same
    load from one second to the next."""
    if steady:
        return 1.0
    return 1.0 + 0.8 * math.sin(time.monotonic() / 6.0 + device_id)


def worker(device_id, context, model, pause, stop, stats, steady=False):
    check(acl.rt.set_context(context), "set_context")
    stream, ret = acl.rt.create_stream()
    check(ret, "create_stream")
    rng = random.Random(device_id * 100 + model.model_id)
    scratch = 0  # a workspace whose size follows the "batch", so HBM use moves
    iteration = 0
    stamp = acl.prof.create_stamp()
    label = f"{model.name} dev{device_id}: 10 requests"
    acl.prof.set_stamp_trace_message(stamp, label, len(label))
    while not stop.is_set():
        iteration += 1
        if iteration % 10 == 1:
            acl.prof.push(stamp)
        if iteration % 25 == 1:
            if scratch:
                acl.rt.free(scratch)
            scratch, ret = acl.rt.malloc(rng.randint(1, 16) * GIB // 4, ACL_MEM_MALLOC_HUGE_FIRST)
            if ret != ACL_SUCCESS:
                scratch = 0
        model.feed()
        ret = acl.mdl.execute_async(model.model_id, model.inputs, model.outputs, stream)
        if ret == ACL_SUCCESS:
            ret = acl.rt.synchronize_stream(stream)
        if ret != ACL_SUCCESS:
            stats["errors"] += 1
            log(
                f"device {device_id} {model.name} iteration {iteration}: ret={ret}; "
                "recreating the stream and carrying on"
            )
            acl.rt.destroy_stream(stream)
            stream, ret = acl.rt.create_stream()
            check(ret, "create_stream")
        elif iteration % 5 == 0 and not model.output_is_finite():
            stats["overflows"] += 1
            log(
                f"device {device_id} {model.name} iteration {iteration}: inf/nan in the output "
                "(float16 overflow; see the Opdebug dump)"
            )
        stats["iterations"] += 1
        if iteration % 10 == 0:
            acl.prof.pop()
        if iteration % 50 == 0:
            acl.prof.mark_ex(f"{model.name} dev{device_id}: {iteration} requests", stream)
        stop.wait(rng.uniform(*pause) * swell(device_id, steady))
    if iteration % 10:
        acl.prof.pop()
    acl.prof.destroy_stamp(stamp)
    acl.rt.synchronize_stream(stream)
    acl.rt.destroy_stream(stream)
    if scratch:
        acl.rt.free(scratch)


def main(argv=None):
    global _quiet
    parser = argparse.ArgumentParser(description="aclmon demo pyACL workload")
    parser.add_argument("--seconds", type=float, default=0.0, help="stop after N s (0 = until ^C)")
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument(
        "--first-device", type=int, default=0, help="use devices from this one on (one per rank)"
    )
    parser.add_argument("--dump-path", default=os.environ.get("ACLMON_DEMO_DUMP_PATH"))
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument(
        "--steady", action="store_true", help="a constant request rate (no swell), for benches"
    )
    args = parser.parse_args(argv)
    _quiet = args.quiet
    dump_path = args.dump_path or tempfile.mkdtemp(prefix="aclmon-demo-dump-")
    os.makedirs(dump_path, exist_ok=True)

    if getattr(acl, "__aclmon_sim__", False):
        os.environ.setdefault("ACLMON_SIM_FAULTS", json.dumps(SIM_FAULTS))
        os.environ.setdefault("ACLMON_SIM_CONFIG", json.dumps(SIM_CONFIG))
    config_path = os.path.join(dump_path, "acl.json")
    with open(config_path, "w") as f:
        json.dump(
            {
                "dump": {
                    "dump_path": dump_path,
                    "dump_debug": "on",
                    "dump_scene": "aic_err_brief_dump",
                    "dump_mode": "all",
                    "dump_list": [
                        {"model_name": "mlp_head", "layer": ["dense1/matmul", "softmax"]}
                    ],
                    "dump_step": "0|50|100|200|400|800|1600",
                }
            },
            f,
        )
    check(acl.init(config_path), "acl.init")
    check(acl.rt.set_exception_info_callback(exception_callback), "set_exception_info_callback")
    count, ret = acl.rt.get_device_count()
    check(ret, "get_device_count")
    devices = list(range(args.first_device, min(args.first_device + args.devices, count)))
    log(f"{acl.get_soc_name()}: {len(devices)} of {count} devices, dumps in {dump_path}")

    stop = threading.Event()
    stats = {"iterations": 0, "errors": 0, "overflows": 0}
    threads, models, contexts = [], [], []
    caches = []
    for device_id in devices:
        check(acl.rt.set_device(device_id), "set_device")
        # A resident cache (e.g. KV / embedding tables) of a few GiB per device.
        cache, ret = acl.rt.malloc((4 + 3 * device_id % 17) * GIB, ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "malloc cache")
        caches.append(cache)
        device_contexts = []
        for _ in range(CONTEXTS_PER_DEVICE):
            context, ret = acl.rt.create_context(device_id)
            check(ret, "create_context")
            contexts.append((device_id, context))
            device_contexts.append(context)
        for index, (file_name, workers, pause, ctx_index) in enumerate(WORKLOAD):
            context = device_contexts[ctx_index]
            check(acl.rt.set_context(context), "set_context")
            model = LoadedModel(os.path.join(MODELS_DIR, file_name), seed=device_id * 10 + index)
            models.append(model)
            for _ in range(workers):
                thread = threading.Thread(
                    target=worker,
                    args=(device_id, context, model, pause, stop, stats, args.steady),
                    name=f"demo-dev{device_id}-{model.name}",
                    daemon=True,
                )
                threads.append(thread)
    if threading.current_thread() is threading.main_thread():
        # stopped as a service is: the workers finish their batch, the job exits 0
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    for thread in threads:
        thread.start()
    started = time.monotonic()
    try:
        while not stop.is_set():
            if args.seconds and time.monotonic() - started >= args.seconds:
                break
            stop.wait(1.0)
    except KeyboardInterrupt:
        log("interrupted")
    if stop.is_set():
        log("stopping: asked to (SIGTERM)")
    stop.set()
    for thread in threads:
        thread.join()
    for model in models:
        model.release()
    for cache in caches:
        acl.rt.free(cache)
    for _, context in contexts:
        acl.rt.destroy_context(context)
    for device_id in devices:
        acl.rt.reset_device(device_id)
    acl.rt.set_exception_info_callback(None)
    check(acl.finalize(), "acl.finalize")
    log(
        f"done: {stats['iterations']} iterations, {stats['errors']} failed synchronizes, "
        f"{stats['overflows']} overflowed outputs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
