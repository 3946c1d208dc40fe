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

Then the screen, on the same 16 chips:

* ``ui_stall_ms``: the worst stall of ``aclmon top``'s UI loop while a refresh
  runs, per back end (the real ``TopApp`` headless at 160x48 over a real
  ``HostFeed`` reading once a second): a 5 ms timer on the loop measures how late
  it fires, so the figure holds everything the loop did meanwhile (folding the
  sample, redrawing the chips and processes). ``ui_stall_baseline_ms`` is the
  same app fed the same readings without a back end behind them (what Textual
  and the view cost by themselves), measured in the same run; the ratios beside
  it. Target: < 50 ms.
* ``idle_cpu_pct``: the share of one core the real ``aclmon top --sim`` process
  (in a pseudo-terminal, its own defaults: the host read every 2 s) uses over
  ``--idle-seconds`` when nothing happens but its readings; beside it
  ``idle_cpu_every_1s_pct`` with ``--every 1``. Target: < 2 %.

    python bench/bench_host.py [--rounds 7] [--seconds 10] [--idle-seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import json
import os
import pty
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

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
    parser.add_argument("--seconds", type=float, default=10.0, help="per screen measurement")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aclmon-bench-host-") as directory:
        os.environ["ACLMON_SIM_DRIVER_DIR"] = directory
        os.environ["ACLMON_SIM_CONFIG"] = json.dumps({"soc_name": SOC, "devices": CHIPS})
        holders = _holders(Path(directory))
        try:
            figures = _measure(max(3, args.rounds), Path(directory))
            figures.update(_screen(args.seconds, args.idle_seconds))
            figures["load"] = _load()
            print(f"load average: {figures['load']}")
            print(json.dumps(figures))
            return 0
        finally:
            for holder in holders:
                holder.kill()
                holder.wait()


def _measure(rounds: int, directory: Path) -> dict[str, Any]:
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
        "rounds": rounds,
        "refresh_load": _load(),
    }
    for name, value in refresh.items():
        print(f"{name:>15}: {value:9.2f} ms per refresh of {CHIPS} chips (median of {rounds})")
    print(f"{'python start':>15}: {figures['python_start_ms']:9.2f} ms (each npu-smi run pays it)")
    print(f"load average: {figures['refresh_load']}")
    return figures


# ---------------------------------------------------------------- the screen
def _sim_dcmi() -> Any:
    return DcmiBackend(FakeDcmi(config=SimConfig(device_count=CHIPS, soc_name=SOC)), source="sim")


def _sim_npu_smi() -> Any:
    return NpuSmiBackend([sys.executable, "-m", "aclmon.sim.npu_smi"], details="rotate")


class _Replayed:
    """A feed reader that hands out readings already taken, one a second, with no
    back end behind them: the baseline of what the app and the view cost."""

    def __init__(self, samples: list[Any]) -> None:
        self.samples = samples
        self.start = time.monotonic()
        self.given = 0

    def take(self) -> list[Any]:
        due = min(len(self.samples), 1 + int(time.monotonic() - self.start))
        out, self.given = self.samples[self.given : due], due
        return out

    def status(self) -> Any:
        from aclmon.host.source import HostStatus

        return HostStatus("ok", None, 0.0)


async def _loop_lags(
    open_backend: Callable[[], Any] | None, samples: list[Any], seconds: float
) -> tuple[list[float], list[float], int]:
    """(every lag, the lags while a refresh ran, readings folded) of TopApp's loop."""
    from aclmon.host.feed import HostFeed
    from aclmon.store import Store
    from aclmon.tui.top import TopApp

    store = Store()
    feed = None if open_backend is None else HostFeed(open_backend, interval=1.0)
    reader: Any = _Replayed(samples) if feed is None else feed.reader()
    app = TopApp(reader, store, interval=0.25)
    if feed is not None:
        feed.start()
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    during: list[float] = []
    try:
        async with app.run_test(size=(160, 48)):
            while store.state.host_npus.samples == 0:
                await asyncio.sleep(0.05)
            end = loop.time() + seconds
            while loop.time() < end:
                busy = feed is not None and feed.source.refreshing
                t0 = loop.time()
                await asyncio.sleep(0.005)
                lag = (loop.time() - t0 - 0.005) * 1000
                lags.append(lag)
                if busy or (feed is not None and feed.source.refreshing):
                    during.append(lag)
            if feed is not None:
                samples.extend(feed.reader().take())
    finally:
        if feed is not None:
            feed.close()
    return lags, during, store.state.host_npus.samples


def _top_idle_cpu(seconds: float, *options: str) -> float:
    """Share of a core the real ``aclmon top --sim`` uses, in a 160x48 pseudo-terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    child = subprocess.Popen(
        [sys.executable, "-m", "aclmon", "top", "--sim", *options],
        stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            seen.extend(data[-4096:])

    threading.Thread(target=drain, daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        while b"chips" not in seen and time.monotonic() < deadline:
            time.sleep(0.1)
        if b"chips" not in seen:
            raise SystemExit("bench_host: aclmon top --sim did not show its chips")
        time.sleep(2.0)  # let start-up work settle
        process = psutil.Process(child.pid)
        before, t0 = process.cpu_times(), time.perf_counter()
        time.sleep(seconds)
        after, wall = process.cpu_times(), time.perf_counter() - t0
        used = (after.user - before.user) + (after.system - before.system)
        return used / wall * 100
    finally:
        os.write(master, b"q")
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        os.close(master)


def _screen(seconds: float, idle_seconds: float) -> dict[str, Any]:
    samples: list[Any] = []
    worst: dict[str, float] = {}
    overall: dict[str, float] = {}
    for name, opener in (("dcmi", _sim_dcmi), ("npu-smi-rotate", _sim_npu_smi)):
        lags, during, folded = asyncio.run(_loop_lags(opener, samples, seconds))
        worst[name] = round(max(during, default=0.0), 1)
        overall[name] = round(max(lags), 1)
        print(f"{name:>15}: worst UI stall {worst[name]:6.1f} ms while a refresh ran"
              f" ({len(during)} probes, {folded} readings; worst overall {overall[name]:.1f} ms)")  # fmt: skip
    lags, _during, folded = asyncio.run(_loop_lags(None, samples, seconds))
    baseline = round(max(lags), 1)
    print(f"{'baseline':>15}: worst UI stall {baseline:6.1f} ms, the same readings without a"
          f" back end ({folded} readings)")  # fmt: skip
    idle = round(_top_idle_cpu(idle_seconds), 2)
    print(f"{'idle CPU':>15}: {idle:6.2f} % of a core (aclmon top --sim, {idle_seconds:g} s)")
    every_second = round(_top_idle_cpu(idle_seconds, "--every", "1"), 2)
    print(f"{'':>15}  {every_second:6.2f} % reading the host every second (--every 1)")
    return {
        "ui_stall_ms": worst,
        "ui_stall_overall_ms": overall,
        "ui_stall_baseline_ms": baseline,
        "ui_stall_over_baseline": {
            k: round(v / baseline, 2) if baseline else None for k, v in worst.items()
        },
        "idle_cpu_pct": idle,
        "idle_cpu_every_1s_pct": every_second,
        "screen_seconds": seconds,
    }


if __name__ == "__main__":
    sys.exit(main())
