"""Golden pairs made by the simulator: the same model run twice on the same inputs,
once with a ``perturb`` fault at a known operator (aclmon.sim, docs/sim.md).

Runs in this process: each run installs the sim as ``acl``, executes
``resnet_tiny`` once with an acl.json that dumps it, and finalizes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

import aclmon.sim
from aclmon.sim import config as sim_config

PERTURBED_OP = "layer1/conv2"


def sim_run(
    out: Path,
    faults: list[dict[str, Any]],
    *,
    dump_mode: str = "all",
    dump_data: str = "tensor",
    model: str = "resnet_tiny",
) -> Path:
    """One execution of ``model`` with its dumps under ``out/dump`` (returned)."""
    out.mkdir(parents=True, exist_ok=True)
    dump = {
        "dump_path": os.fspath(out / "dump"),
        "dump_list": [{"model_name": model}],
        "dump_mode": dump_mode,
        "dump_data": dump_data,
    }
    config = out / "acl.json"
    config.write_text(json.dumps({"dump": dump}))
    sim_config.reset_configuration()
    sim_config.configure(time_scale=0.0, faults=faults)
    acl = aclmon.sim.install()
    try:
        assert acl.init(os.fspath(config)) == 0
        assert acl.rt.set_device(0) == 0
        path = os.path.join(aclmon.sim.MODELS_DIR, f"{model}.json")
        model_id, ret = acl.mdl.load_from_file(path)
        assert ret == 0
        desc = acl.mdl.create_desc()
        acl.mdl.get_desc(desc, model_id)
        inputs, outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
        for i in range(acl.mdl.get_num_inputs(desc)):
            size = acl.mdl.get_input_size_by_index(desc, i)
            ptr, _ = acl.rt.malloc(size, 0)
            host = np.random.default_rng(i).normal(0, 1, size // 2).astype(np.float16)
            acl.rt.memcpy(ptr, size, acl.util.numpy_to_ptr(host), size, 1)
            acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(ptr, size))
        for i in range(acl.mdl.get_num_outputs(desc)):
            size = acl.mdl.get_output_size_by_index(desc, i)
            ptr, _ = acl.rt.malloc(size, 0)
            acl.mdl.add_dataset_buffer(outputs, acl.create_data_buffer(ptr, size))
        assert acl.mdl.execute(model_id, inputs, outputs) == 0
    finally:
        acl.finalize()
        sim_config.reset_configuration()
    return out / "dump"


def golden_pair(
    base: Path, *, op: str = PERTURBED_OP, error: float = 0.2, **run: Any
) -> tuple[Path, Path]:
    """(perturbed dump dir, clean dump dir)."""
    clean = sim_run(base / "clean", [], **run)
    perturbed = sim_run(base / "perturbed", [{"kind": "perturb", "op": op, "error": error}], **run)
    return perturbed, clean


def npy_golden(dump_dir: Path, out: Path) -> Path:
    """The operator outputs of a dump directory as msaccucmp's golden ``.npy`` files
    (``{op}.{output}.{timestamp}.npy``, logical layout): a framework run's stand-in."""
    from aclmon.dump.compare.matching import dump_tensors, index_dump_directory

    out.mkdir(parents=True, exist_ok=True)
    for op in index_dump_directory(os.fspath(dump_dir)).ops:
        _inputs, outputs, name = dump_tensors(op.path)
        for tensor in outputs:
            stem = name.replace("/", "_").replace(".", "_")
            np.save(out / f"{stem}.{tensor.index}.{op.timestamp}.npy", tensor.load())
    return out
