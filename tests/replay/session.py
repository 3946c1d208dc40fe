"""A real recorded session: the sim job under ``aclmon run --sim --record``.

One explicit stream runs a three-operator float16 model; the simulator is told
(fault rules) to overflow ``add1`` on the 3rd execution and raise an AI Core
exception in ``relu1`` on the 6th, with overflow detection on and ``add1``
dumped every step. The result is a recording plus the dump directory the job
left behind, exactly what a user has after the fact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIM_JOB = ROOT / "tests" / "agent" / "sim_job.py"

MODEL = {
    "name": "tiny",
    "inputs": [{"name": "x", "dtype": "float16", "format": "ND", "shape": [4, 8]}],
    "weights": [{"name": "w", "dtype": "float16", "format": "ND", "shape": [8, 8]}],
    "ops": [
        {"name": "mm1", "type": "MatMul", "inputs": ["x", "w"],
         "outputs": [{"name": "y", "dtype": "float16", "format": "ND", "shape": [4, 8]}]},
        {"name": "add1", "type": "Add", "inputs": ["y", "y"],
         "outputs": [{"name": "z", "dtype": "float16", "format": "ND", "shape": [4, 8]}]},
        {"name": "relu1", "type": "Relu", "inputs": ["z"],
         "outputs": [{"name": "out", "dtype": "float16", "format": "ND", "shape": [4, 8]}]},
    ],
    "outputs": ["out"],
}  # fmt: skip

FAULTS = [
    {"kind": "overflow", "op": "add1", "model": "tiny", "nth": 3},
    {"kind": "aicore_exception", "op": "relu1", "model": "tiny", "nth": 6},
]


@dataclass(frozen=True)
class Session:
    directory: Path  # holds both the recording and the dump directory
    recording: Path
    dumps: Path


def record_session(directory: Path, iterations: int = 10) -> Session:
    directory.mkdir(parents=True, exist_ok=True)
    model = directory / "model.json"
    model.write_text(json.dumps(MODEL))
    dumps = directory / "dumps"
    acl_json = directory / "acl.json"
    acl_json.write_text(
        json.dumps(
            {
                "dump": {
                    "dump_path": str(dumps),
                    "dump_debug": "on",
                    "dump_list": [{"model_name": "tiny", "layer": ["add1"]}],
                }
            }
        )
    )
    recording = directory / "session.aclmrec"
    env = dict(os.environ, ACLMON_SIM_FAULTS=json.dumps(FAULTS))
    command = [
        sys.executable, "-m", "aclmon", "run", "--sim", "--record", str(recording),
        "--interval", "0.05", "--listen", str(directory / "agent.sock"),
        str(SIM_JOB), str(model), str(acl_json), "--iterations", str(iterations),
        "--pause", "0.15",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"sim job failed ({result.returncode}):\n{result.stderr[-2000:]}")
    (directory / "agent.sock").unlink(missing_ok=True)
    return Session(directory, recording, dumps)
