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
import time
from dataclasses import dataclass
from pathlib import Path

from aclmon.store import Store

ROOT = Path(__file__).resolve().parents[2]
SIM_JOB = ROOT / "tests" / "agent" / "sim_job.py"
GATED_JOB = Path(__file__).with_name("gated_job.py")

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


def _write_job_files(directory: Path) -> tuple[Path, Path, Path]:
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
    return model, acl_json, dumps


def _sim_job_args(directory: Path, iterations: int) -> list[str]:
    model, acl_json = directory / "model.json", directory / "acl.json"
    return [
        str(SIM_JOB),
        str(model),
        str(acl_json),
        "--iterations",
        str(iterations),
        "--pause",
        "0.15",
    ]


def _command(directory: Path, recording: Path, job: list[str]) -> list[str]:
    return [
        sys.executable, "-m", "aclmon", "run", "--sim", "--record", str(recording),
        "--interval", "0.05", "--listen", str(directory / "agent.sock"), *job,
    ]  # fmt: skip


def _env(log_dir: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, ACLMON_SIM_FAULTS=json.dumps(FAULTS))
    if log_dir is not None:  # the job's CANN logs beside its recording and dumps
        env["ASCEND_PROCESS_LOG_PATH"] = str(log_dir)
    return env


def record_session(directory: Path, iterations: int = 10) -> Session:
    _, _, dumps = _write_job_files(directory)
    recording = directory / "session.aclmrec"
    command = _command(directory, recording, _sim_job_args(directory, iterations))
    # cwd: anything the job or its agent writes relative to it stays in the test's directory.
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=_env(), cwd=directory
    )
    if result.returncode != 0:
        raise RuntimeError(f"sim job failed ({result.returncode}):\n{result.stderr[-2000:]}")
    (directory / "agent.sock").unlink(missing_ok=True)
    return Session(directory, recording, dumps)


def wait_for_socket(process: subprocess.Popen, socket_path: Path, timeout: float = 30) -> float:
    """Waits until the job's agent listens on ``socket_path``; returns the deadline
    (``time.monotonic()``) the caller may go on waiting against."""
    deadline = time.monotonic() + timeout
    while not socket_path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the agent did not start listening")
        time.sleep(0.02)
    return deadline


def watch_live_and_record(
    directory: Path,
    iterations: int = 10,
    *,
    demo_seconds: float = 0.0,
    log_dir: Path | None = None,
) -> tuple[Store, Session]:
    """Run the job while a live viewer's store follows it over the bus, as
    ``aclmon attach`` does; the job waits (gated_job.py) until the viewer is
    connected. With ``demo_seconds`` the job is the demo workload (``aclmon
    demo``'s job) for that long, else the small sim job; with ``log_dir`` the
    job's CANN logs go there."""
    from aclmon.bus import Subscriber
    from aclmon.sim import DEMO_WORKLOAD

    _, _, dumps = _write_job_files(directory)
    recording = directory / "session.aclmrec"
    gate = directory / "go"
    socket_path = directory / "agent.sock"
    if demo_seconds:
        job = [DEMO_WORKLOAD, "--seconds", str(demo_seconds), "--devices", "2"]
        job += ["--dump-path", str(dumps), "--quiet"]
    else:
        job = _sim_job_args(directory, iterations)
    command = _command(directory, recording, [str(GATED_JOB), str(gate), *job])
    live = Store()
    process = subprocess.Popen(
        command,
        env=_env(log_dir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=directory,
    )
    subscriber = None
    try:
        deadline = wait_for_socket(process, socket_path)
        subscriber = Subscriber(str(socket_path), readonly=True)
        subscriber.start()
        while subscriber.state != "connected":
            if time.monotonic() > deadline:
                raise RuntimeError(f"live viewer could not connect ({subscriber.state})")
            live.apply_many(subscriber.poll(10_000, 0.05))
        gate.touch()
        while process.poll() is None:
            live.apply_many(subscriber.poll(10_000, 0.05))
        # The last frames may still be in flight when the job exits: read on
        # until the agent's end of the connection is gone, then until quiet.
        gone = time.monotonic() + 10
        while subscriber.state == "connected" and time.monotonic() < gone:
            live.apply_many(subscriber.poll(10_000, 0.05))
        quiet = 0
        while quiet < 5:
            batch = subscriber.poll(10_000, 0.05)
            live.apply_many(batch)
            quiet = 0 if batch else quiet + 1
    finally:
        if subscriber is not None:
            subscriber.close()
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()
    if process.returncode != 0:
        raise RuntimeError(f"sim job failed ({process.returncode})")
    return live, Session(directory, recording, dumps)
