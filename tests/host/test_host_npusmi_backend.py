"""The npu-smi back end: found, run with a deadline, read; a hung or failing tool is a state."""

from __future__ import annotations

import os
import shlex
import stat
import sys
import time
from pathlib import Path

import pytest
from hostcaptures import capture

from aclmon.host.npusmi import NpuSmiBackend, find_npu_smi
from aclmon.host.source import HostUnavailable, open_backend
from aclmon.host.tool import ToolError, ToolTimeout, run_tool

SIM_NPU_SMI = [sys.executable, "-m", "aclmon.sim.npu_smi"]


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return [str(path)]


def test_npu_smi_is_found_from_the_env_path_or_where_containers_mount_it(tmp_path: Path) -> None:
    command = f"{sys.executable} -m aclmon.sim.npu_smi"
    assert find_npu_smi({"ACLMON_NPU_SMI": command}) == shlex.split(command)
    script(tmp_path, "npu-smi", "true")
    assert find_npu_smi({"PATH": str(tmp_path)}) == [str(tmp_path / "npu-smi")]
    with pytest.raises(HostUnavailable, match="no npu-smi on PATH"):
        open_backend("npu-smi", env={"PATH": str(tmp_path / "empty")})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child of the tool may linger a moment as a zombie until init reaps it.
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "zombie" not in status.read_text()


def test_a_tool_that_hangs_is_killed_with_its_children_at_its_deadline(tmp_path: Path) -> None:
    # What a vNPU library mismatch does: a line, then nothing, forever.
    pids = tmp_path / "pids"
    body = f"echo $$ > {pids}; echo 'Initialize SchedulerClient...'; sleep 60 & echo $! >> {pids}; wait"
    with pytest.raises(ToolTimeout, match=r"did not answer in 0\.5 s"):
        run_tool(script(tmp_path, "hang", body), 0.5)
    for pid in map(int, pids.read_text().split()):
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)


def test_a_tool_that_fails_or_floods_gives_one_message(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="exited 3: permission denied"):
        run_tool(script(tmp_path, "fail", "echo 'permission denied'; exit 3"), 5)
    with pytest.raises(ToolError, match="printed more than 1 MiB"):
        run_tool(script(tmp_path, "flood", "yes npu"), 5, max_output=1 << 20)
    with pytest.raises(ToolError, match="cannot run"):
        run_tool([str(tmp_path / "missing")], 5)


def test_the_sim_npu_smi_through_the_back_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACLMON_SIM_CONFIG", '{"soc_name": "Ascend910B3", "devices": 4}')
    backend = NpuSmiBackend(SIM_NPU_SMI, details="all")
    snapshot = backend.refresh()
    assert (snapshot.source, snapshot.state, snapshot.warnings) == ("npu-smi", "ok", ())
    assert snapshot.version == "npu-smi 25.5.1, driver 25.5.1"
    assert [d.logic_id for d in snapshot.devices] == [0, 1, 2, 3]  # from npu-smi info -m
    assert all(d.ctrlcpu_pct is not None for d in snapshot.devices)  # from -t usages
    assert snapshot.processes == ()
    assert snapshot.refresh_ms > 0


class Recorder:
    """Answers from captures and records what was asked."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.asked: list[list[str]] = []

    def __call__(self, command: list[str], timeout: float) -> str:
        self.asked.append(command[1:])
        if command[1:] == ["info"]:
            return capture(self.table)
        if command[1:] == ["info", "-m"]:
            return capture("mapping_910b3_25.5.1.txt")
        return capture("usages_910b3_25.5.1.txt").replace(
            "NPU ID                         : 0", f"NPU ID : {command[-1]}"
        )


def test_a_live_view_asks_one_card_per_refresh_in_turn() -> None:
    recorder = Recorder("info_910b3_25.5.1.txt")
    backend = NpuSmiBackend(["npu-smi"], details="rotate", runner=recorder)
    first = backend.refresh()
    for _ in range(7):
        backend.refresh()
    usages = [args[-1] for args in recorder.asked if "usages" in args]
    assert usages == [str(n) for n in range(8)]
    assert recorder.asked.count(["info", "-m"]) == 1  # the mapping does not change
    assert first.devices[0].ctrlcpu_pct == 7 and first.devices[1].ctrlcpu_pct is None
    # The processes are the captured ones, with what /proc says of them (nothing: not here).
    assert first.processes is not None and len(first.processes) == 8


def test_a_hung_or_failing_tool_is_a_state_not_a_stall(tmp_path: Path) -> None:
    hung = NpuSmiBackend(script(tmp_path, "hang", "sleep 60"), timeout=0.3)
    snapshot = hung.refresh()
    assert snapshot.state == "timeout" and "did not answer in 0.3 s" in (snapshot.message or "")
    assert snapshot.devices == () and snapshot.processes is None
    failing = NpuSmiBackend(script(tmp_path, "usage", "echo 'This command must input card id.'"))
    snapshot = failing.refresh()
    assert snapshot.state == "failed"
    assert "no npu-smi info table in the output: 'This command must input card id.'" in (
        snapshot.message or ""
    )


def test_a_slow_card_stops_the_per_card_calls_of_that_refresh(tmp_path: Path) -> None:
    class SlowCards(Recorder):
        def __call__(self, command: list[str], timeout: float) -> str:
            if "usages" in command:
                self.asked.append(command[1:])
                raise ToolTimeout("npu-smi info -t usages did not answer in 5 s")
            return super().__call__(command, timeout)

    recorder = SlowCards("info_a3_26.1.0.b087.txt")
    snapshot = NpuSmiBackend(["npu-smi"], details="all", runner=recorder).refresh()
    assert snapshot.state == "partial" and len(snapshot.devices) == 16
    assert sum("usages" in args for args in recorder.asked) == 1


def test_the_310b_layout_reports_no_processes_rather_than_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACLMON_SIM_CONFIG", '{"soc_name": "Ascend310B4", "devices": 1}')
    snapshot = NpuSmiBackend(SIM_NPU_SMI, details="none").refresh()
    assert snapshot.state == "ok" and snapshot.processes is None
    assert snapshot.to_plain()["processes"] is None
