"""``aclmon top --once --json``: the simulated host through npu-smi and through DCMI.

A sim job holds memory on some chips; ``aclmon top`` reads the host once through
the simulated npu-smi (found through ACLMON_NPU_SMI, as a real one would be on
PATH) and once through the simulated DCMI. Both must report the same chips and
the same processes, field for field, except what only DCMI can tell.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aclmon.cli import main
from aclmon.sim.driver import read_jobs

#: what DCMI reads and the npu-smi back end does not ask for (npu-smi says None).
DCMI_ONLY = (
    "phy_id",
    "aicore_mhz",
    "aicore_max_mhz",
    "ecc_single_bit",
    "ecc_double_bit",
    "fault_codes",
)
SPEC_DEVICE_KEYS = {"npu_id", "chip_id", "name", "health", "power_w", "temp_c", "aicore_pct",
                    "hbm_used_mb", "hbm_total_mb"}  # fmt: skip
SPEC_PROCESS_KEYS = {"npu_id", "chip_id", "pid", "name", "memory_mb"}

JOB = """
import sys, time
import aclmon.sim
acl = aclmon.sim.install()
acl.init()
for device in map(int, sys.argv[1:]):
    acl.rt.set_device(device)
    acl.rt.malloc((300 + 100 * device) << 20, 0)
print("ready", flush=True)
time.sleep(300)
"""


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Configures the simulated host; ``start(devices)`` runs a sim job holding them."""
    monkeypatch.setenv("ACLMON_SIM_DRIVER_DIR", str(tmp_path))
    monkeypatch.setenv("ACLMON_NPU_SMI", f"{sys.executable} -m aclmon.sim.npu_smi")
    monkeypatch.delenv("ACLMON_DCMI_LIBRARY", raising=False)
    jobs: list[subprocess.Popen[str]] = []

    class Host:
        def configure(self, soc: str, devices: int) -> None:
            config = json.dumps({"soc_name": soc, "devices": devices, "time_scale": 0})
            monkeypatch.setenv("ACLMON_SIM_CONFIG", config)

        def start(self, devices: list[int]) -> int:
            job = subprocess.Popen(
                [sys.executable, "-c", JOB, *map(str, devices)], stdout=subprocess.PIPE, text=True
            )
            jobs.append(job)
            assert job.stdout is not None and job.stdout.readline() == "ready\n"
            deadline = time.monotonic() + 30
            # Until its record shows every chip with its memory (it is rewritten twice a second).
            while time.monotonic() < deadline:
                records = [r for r in read_jobs(tmp_path) if r.pid == job.pid]
                if records and len([u for u in records[0].devices if u.memory_bytes]) == len(
                    devices
                ):
                    return job.pid
                time.sleep(0.05)
            raise AssertionError("the sim job's driver record did not appear")

    yield Host()
    for job in jobs:
        job.kill()
        job.wait()


def top(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["top", "--once", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("soc", "count", "held", "cards"),
    [
        ("Ascend910B3", 4, [0, 3], [0, 3]),
        ("Ascend910_9391", 4, [1, 2], [0, 1]),  # two dies a card: devices 1, 2 are on cards 0, 1
        ("Ascend310P3", 4, [0, 1], [0, 0]),  # two chips a card
        ("Ascend310B4", 1, [0], [0]),
    ],
)
def test_npu_smi_and_dcmi_report_the_same_host(
    host: Any,
    capsys: pytest.CaptureFixture[str],
    soc: str,
    count: int,
    held: list[int],
    cards: list[int],
) -> None:
    host.configure(soc, count)
    pid = host.start(held)
    code, via_smi = top(capsys, "--backend", "npu-smi")
    assert code == 0 and (via_smi["source"], via_smi["state"]) == ("npu-smi", "ok")
    code, via_dcmi = top(capsys, "--sim")
    assert code == 0 and (via_dcmi["source"], via_dcmi["state"]) == ("sim", "ok")

    assert len(via_smi["devices"]) == count
    for smi, dcmi in zip(via_smi["devices"], via_dcmi["devices"], strict=True):
        assert smi.keys() >= SPEC_DEVICE_KEYS
        for key in DCMI_ONLY:
            assert smi[key] in (None, dcmi[key]), key
            smi.pop(key), dcmi.pop(key)
        assert smi == dcmi

    assert via_dcmi["processes"] is not None
    assert [(p["npu_id"], p["pid"]) for p in via_dcmi["processes"]] == [(n, pid) for n in cards]
    assert [p["memory_mb"] for p in via_dcmi["processes"]] == [300 + 100 * d for d in held]
    if via_smi["processes"] is None:
        assert soc == "Ascend310B4"  # its npu-smi table has no process section
    else:
        assert via_smi["processes"][0].keys() >= SPEC_PROCESS_KEYS
        assert via_smi["processes"] == via_dcmi["processes"]


def test_unknown_values_are_null_in_the_json(host: Any, capsys: pytest.CaptureFixture[str]) -> None:
    host.configure("Ascend310P3", 2)
    _, via_smi = top(capsys, "--backend", "npu-smi")
    chip = via_smi["devices"][0]
    assert chip["power_w"] is None and chip["hbm_used_mb"] is None and chip["hbm_total_mb"] is None
    assert chip["memory_total_mb"] == 64 << 10 and chip["temp_c"] is not None


def test_the_text_form_and_the_errors(
    host: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    host.configure("Ascend910_9391", 2)
    host.start([1])
    assert main(["top", "--once", "--sim"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("2 NPU chips via sim (ok)")
    assert "Ascend910" in text and " - " in text  # die 1's power: unknown
    assert "python" in text
    monkeypatch.delenv("ACLMON_NPU_SMI")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["top", "--once", "--json"]) == 1
    unavailable = json.loads(capsys.readouterr().out)
    assert (unavailable["source"], unavailable["state"]) == (None, "unavailable")
    assert main(["top", "--json"]) == 1
    assert "--json goes with --once" in capsys.readouterr().err


@pytest.mark.slow
def test_the_screen_in_a_terminal_shows_the_sim_job_and_quits_on_q(host: Any) -> None:
    """``aclmon top --sim`` as a user runs it: a real terminal (a pty), the real
    command; the sim job's process is on screen, q leaves with status 0."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import termios

    host.configure("Ascend910B3", 4)
    pid = host.start([1, 2])
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    child = subprocess.Popen(
        [sys.executable, "-m", "aclmon", "top", "--sim"],
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        env=dict(os.environ, TERM="xterm-256color"),
    )  # fmt: skip
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while str(pid).encode() not in seen and time.monotonic() < deadline:
            ready, _w, _x = select.select([master], [], [], 0.5)
            if ready:
                seen += os.read(master, 65536)
        assert b"4 chips" in seen and str(pid).encode() in seen
        os.write(master, b"q")
        assert child.wait(30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
