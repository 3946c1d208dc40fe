"""A dump directory as a BERT-shaped job leaves it: the simulator runs its
12-layer ``bert_tiny`` model for several steps with overflow detection on and
exception dumps asked for, told (fault rules) to overflow layer 11's query
MatMul (each step it gets to) and its key MatMul (every second time), and to
raise AI Core exceptions in the query MatMuls of layers 1 and 11, operators
whose names differ only in the layer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

import aclmon.sim
from aclmon.sim import config as sim_config
from aclmon.sim import runtime as sim_runtime

MODEL = "bert_tiny"
STEPS = 6
LAYER_1 = "bert/encoder/layer_1/attention/self/query/MatMul"
LAYER_11 = "bert/encoder/layer_11/attention/self/query/MatMul"
KEY_11 = "bert/encoder/layer_11/attention/self/key/MatMul"
FAULTS = [
    # query and key read the same input: both overflow in a step, neither hides the other
    {"kind": "overflow", "op": LAYER_11, "model": MODEL},
    {"kind": "overflow", "op": KEY_11, "model": MODEL, "every": 2},
    {"kind": "aicore_exception", "op": LAYER_1, "model": MODEL, "nth": 2},
    {"kind": "aicore_exception", "op": LAYER_11, "model": MODEL, "nth": 5},
]  # fmt: skip


def bert_dump_dir(root: Path) -> Path:
    """Run the job in this process; the dump directory it leaves under ``root``."""
    dump_dir = root / "dump"
    config = root / "acl.json"
    dump = {"dump_path": os.fspath(dump_dir), "dump_debug": "on",
            "dump_scene": "aic_err_brief_dump"}  # fmt: skip
    config.write_text(json.dumps({"dump": dump}))
    sim_config.reset_configuration()
    sim_config.configure(time_scale=0.0, faults=FAULTS)
    acl = aclmon.sim.install()
    try:
        assert acl.init(os.fspath(config)) == 0
        acl.rt.set_device(0)
        model_id, ret = acl.mdl.load_from_file(os.path.join(aclmon.sim.MODELS_DIR, f"{MODEL}.json"))
        assert ret == 0
        desc = acl.mdl.create_desc()
        acl.mdl.get_desc(desc, model_id)
        inputs, outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
        size = acl.mdl.get_input_size_by_index(desc, 0)
        device_in, _ = acl.rt.malloc(size, 0)
        host = np.random.default_rng(0).normal(0, 1, size // 2).astype(np.float16)
        acl.rt.memcpy(device_in, size, acl.util.numpy_to_ptr(host), size, 1)
        acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(device_in, size))
        size = acl.mdl.get_output_size_by_index(desc, 0)
        device_out, _ = acl.rt.malloc(size, 0)
        acl.mdl.add_dataset_buffer(outputs, acl.create_data_buffer(device_out, size))
        for _ in range(STEPS):
            stream, _ = acl.rt.create_stream()
            acl.mdl.execute_async(model_id, inputs, outputs, stream)
            acl.rt.synchronize_stream(stream)  # fails after an exception: a new stream
            acl.rt.destroy_stream(stream)
    finally:
        if sim_runtime.runtime() is not None:
            acl.finalize()
        sim_config.reset_configuration()
    return dump_dir
