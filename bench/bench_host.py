"""What one refresh of the host source costs, through each back end, on 16 simulated chips.

The simulated host is 16 Atlas A2 chips (``Ascend910B3``) with four processes
holding memory on them. Each round, in a new order, refreshes it:

* ``dcmi``: through the DCMI back end over the simulator's DCMI (C function
  pointers, in this process): about 20 calls a chip plus ``/proc`` for each
  process. The simulator reads its driver records once per round beforehand
  (``sim_view_ms``, its own cost, not the host's);
* ``npu-smi``: through the npu-smi back end over ``python -m aclmon.sim.npu_smi``
  as ``--once`` asks: ``npu-smi info`` plus ``-t usages`` for each of the 16
  cards (``info -m`` is asked once per back end, before the rounds);
* ``npu-smi-rotate``: what a live view pays per refresh: the table and one card.

Every npu-smi run starts an interpreter; ``python_start_ms`` (``python -c pass``)
is that floor. Real npu-smi is a C program whose per-card calls are slower still
(seconds for eight cards, docs/reference/npu_smi_dcmi.md).

The screen figures the issue asks for, ``ui_stall_ms`` (worst frame of
``aclmon top`` while a refresh runs) and ``idle_cpu_pct`` (its share of a core
when idle), need the interactive screen; they are printed as ``null`` until it
exists and this script measures them.

    python bench/bench_host.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aclmon.host.dcmi import DcmiBackend
from aclmon.host.npusmi import NpuSmiBackend
from aclmon.sim.config import SimConfig
from aclmon.sim.dcmi import FakeDcmi
from aclmon.sim.driver import read_jobs
from aclmon.sim.machine import machine_view

CHIPS = 16
SOC = "Ascend910B3"


def _holders(directory: Path) -> list[subprocess.Popen[bytes]]:
    """Four live processes, each recorded as holding memory on some chips."""
    holders = [subprocess.Popen(["sleep", "600"]) for _ in range(4)]
    for index, holder in enumerate(holders):
        devices = [
            {"id": d, "memory": (4 + index) << 30, "cube": 30, "vector": 10, "aicpu": 1}
            for d in range(index, CHIPS, 4)
        ]
        record = {"pid": holder.pid, "name": f"train_rank{index}", "devices": devices}
        (directory / f"{holder.pid}.json").write_text(json.dumps(record))
    return holders


def _load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aclmon-bench-host-") as directory:
        os.environ["ACLMON_SIM_DRIVER_DIR"] = directory
        os.environ["ACLMON_SIM_CONFIG"] = json.dumps({"soc_name": SOC, "devices": CHIPS})
        holders = _holders(Path(directory))
        try:
            return _measure(max(3, args.rounds), Path(directory))
        finally:
            for holder in holders:
                holder.kill()
                holder.wait()


def _measure(rounds: int, directory: Path) -> int:
    config = SimConfig(device_count=CHIPS, soc_name=SOC)
    fake = FakeDcmi(config=config, cache_s=float("inf"))
    dcmi = DcmiBackend(fake, source="sim")
    command = [sys.executable, "-m", "aclmon.sim.npu_smi"]
    full = NpuSmiBackend(command, details="all")
    rotate = NpuSmiBackend(command, details="rotate")
    for backend in (dcmi, full, rotate):  # discovery and the -m mapping happen once
        first = backend.refresh()
        assert first.state == "ok" and len(first.devices) == CHIPS, first.message
        assert first.processes is not None and len(first.processes) == CHIPS  # 4 on 4 chips
    times: dict[str, list[float]] = {"dcmi": [], "npu-smi": [], "npu-smi-rotate": []}
    view_ms: list[float] = []
    start_ms: list[float] = []
    arms = {"dcmi": dcmi.refresh, "npu-smi": full.refresh, "npu-smi-rotate": rotate.refresh}
    order = list(arms)
    for _ in range(rounds):
        random.shuffle(order)
        t0 = time.perf_counter()
        machine_view(config, read_jobs(directory))
        view_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        start_ms.append((time.perf_counter() - t0) * 1000)
        for name in order:
            t0 = time.perf_counter()
            snapshot = arms[name]()
            times[name].append((time.perf_counter() - t0) * 1000)
            assert snapshot.state == "ok", snapshot.message
    refresh = {name: round(statistics.median(values), 2) for name, values in times.items()}
    figures = {
        "refresh_ms": refresh,
        "chips": CHIPS,
        "processes": 4,
        "process_readings": CHIPS,
        "sim_view_ms": round(statistics.median(view_ms), 2),
        "python_start_ms": round(statistics.median(start_ms), 2),
        "npu_smi_over_dcmi": round(refresh["npu-smi"] / refresh["dcmi"], 1),
        "ui_stall_ms": None,
        "idle_cpu_pct": None,
        "rounds": rounds,
        "load": _load(),
    }
    for name, value in refresh.items():
        print(f"{name:>15}: {value:9.2f} ms per refresh of {CHIPS} chips (median of {rounds})")
    print(f"{'python start':>15}: {figures['python_start_ms']:9.2f} ms (each npu-smi run pays it)")
    print(f"load average: {figures['load']}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
