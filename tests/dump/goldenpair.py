"""Golden pairs made by the simulator: the same model run twice on the same inputs,
once with a ``perturb`` fault at a known operator (aclmon.sim, docs/sim.md).

Runs in this process: each run installs the sim as ``acl``, executes
``resnet_tiny`` once with an acl.json that dumps it (the sim tests' own
``run_models``: same random inputs every run), and finalizes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from sim.test_dumps import run_models

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
    debug: bool = False,
) -> Path:
    """One execution of ``model`` with its dumps under ``out/dump`` (returned);
    ``debug`` turns overflow detection on (``dump_debug``: Opdebug records)."""
    out.mkdir(parents=True, exist_ok=True)
    dump = {"dump_list": [{"model_name": model}], "dump_mode": dump_mode, "dump_data": dump_data}
    if debug:
        dump["dump_debug"] = "on"
    sim_config.reset_configuration()
    sim_config.configure(time_scale=0.0, faults=faults)
    acl = aclmon.sim.install()
    try:
        path = os.path.join(aclmon.sim.MODELS_DIR, f"{model}.json")
        return Path(run_models(acl, out, {model: path}, dump, names=(model,)))
    finally:
        acl.finalize()
        sim_config.reset_configuration()


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
