"""A real recording of the demo job (``aclmon demo``'s workload under the agent)
with live operator timings on, and faults every few seconds, for the export tests.

The job waits (``tests/replay/gated_job.py``) until a viewer has connected, which
then starts live operator timings as soon as the job has initialised, so the recording holds every kind the timeline
shows: executions, synchronizes, operator timings, msproftx ranges and marks on
the workers' threads, AI Core exceptions, overflow dumps and samples.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from session import wait_for_socket

from aclmon import events as ev
from aclmon.acl_constants import ACL_AICORE_PIPE_UTILIZATION

ROOT = Path(__file__).resolve().parents[2]
GATED_JOB = ROOT / "tests" / "replay" / "gated_job.py"
#: the demo's own faults, sooner (the demo asks for one every 10-30 s)
FAULTS = [
    {"kind": "aicore_exception", "op": "layer1/conv2", "model": "resnet_tiny", "every_s": 1.5},
    {
        "kind": "overflow",
        "op": "bert/encoder/layer_11/attention/self/Mul",
        "model": "bert_tiny",
        "every_s": 2,
    },
]


@dataclass(frozen=True)
class DemoSession:
    recording: Path
    dumps: Path


def record_demo(directory: Path, seconds: float = 5.0, devices: int = 2) -> DemoSession:
    from aclmon.bus import Subscriber
    from aclmon.sim import DEMO_WORKLOAD

    directory.mkdir(parents=True, exist_ok=True)
    recording, dumps = directory / "demo.aclmrec", directory / "dumps"
    gate, socket_path = directory / "go", directory / "agent.sock"
    command = [
        sys.executable, "-m", "aclmon", "run", "--sim", "--record", str(recording),
        "--interval", "0.2", "--listen", str(socket_path),
        str(GATED_JOB), str(gate), DEMO_WORKLOAD, "--seconds", str(seconds),
        "--devices", str(devices), "--dump-path", str(dumps), "--quiet",
    ]  # fmt: skip
    env = dict(os.environ, ACLMON_SIM_FAULTS=json.dumps(FAULTS))
    process = subprocess.Popen(
        command, env=env, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    subscriber = None
    try:
        deadline = wait_for_socket(process, socket_path)
        subscriber = Subscriber(str(socket_path)).start()
        if not subscriber.wait_connected(30):
            raise RuntimeError(f"cannot connect ({subscriber.state})")
        reply = subscriber.send_command(
            ev.SetProfilingConfig, 0, ACL_AICORE_PIPE_UTILIZATION, (), 0, timeout=10
        )
        assert reply.code == 0, reply.message
        gate.touch()
        # Live timings need acl.init: ask again until the job has made it.
        while (reply := subscriber.send_command(ev.StartProfiling, timeout=10)).code != 0:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"live timings did not start: {reply.message}")
            time.sleep(0.05)
        stderr = process.communicate(timeout=seconds + 60)[1]
    finally:
        if subscriber is not None:
            subscriber.close()
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    if process.returncode != 0:
        raise RuntimeError(f"demo job failed ({process.returncode}):\n{stderr[-2000:]!r}")
    return DemoSession(recording, dumps)
