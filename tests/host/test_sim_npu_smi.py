"""The simulated npu-smi prints the real layouts: captured values render byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hostcaptures import capture
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.events.host import DeviceReading
from aclmon.host.npusmi_text import parse_chip_values, parse_info, parse_mapping
from aclmon.sim.config import SimConfig
from aclmon.sim.driver import DeviceUse, JobRecord
from aclmon.sim.machine import ChipState, MachineView, ProcessState, chip_kind, machine_view
from aclmon.sim.npu_smi import (
    LAYOUTS,
    TableProcess,
    TableRow,
    render_card,
    render_mapping,
    render_table,
    table_processes,
    table_rows,
)


def _rows(devices: tuple[DeviceReading, ...], layout: str) -> list[TableRow]:
    second = LAYOUTS[layout].second_id
    rows = []
    for d in devices:
        assert d.temp_c is not None and d.aicore_pct is not None and d.health and d.name
        assert d.hugepages_used is not None and d.hugepages_total is not None
        assert d.memory_used_mb is not None and d.memory_total_mb is not None
        hbm = None
        if d.hbm_used_mb is not None and d.hbm_total_mb is not None:
            hbm = (d.hbm_used_mb, d.hbm_total_mb)
        rows.append(
            TableRow(
                npu_id=d.npu_id,
                chip_id=d.chip_id,
                second_id={"Phy-ID": d.phy_id, "Device": d.logic_id}.get(second),
                name=d.name,
                health=d.health,
                power_w=d.power_w,
                temp_c=d.temp_c,
                hugepages=(d.hugepages_used, d.hugepages_total),
                aicore_pct=d.aicore_pct,
                memory_mb=(d.memory_used_mb, d.memory_total_mb),
                hbm_mb=hbm,
                bus_id=d.bus_id,
            )
        )
    return rows


@pytest.mark.parametrize(
    ("layout", "name", "strip_trailing"),
    [
        ("a2", "info_910b3_25.5.1.txt", False),
        ("a3", "info_a3_26.1.0.b087.txt", False),
        ("310p", "info_310p3_24.1.0.1.txt", False),
        ("310b", "info_310b4_23.0.0.txt", True),  # the capture has a space after every line
    ],
)
def test_each_layout_renders_its_capture_byte_for_byte(
    layout: str, name: str, strip_trailing: bool
) -> None:
    text = capture(name)
    table = parse_info(text)
    processes = [
        TableProcess(p.npu_id, p.chip_id, p.pid, p.name or "", p.memory_mb or 0)
        for p in table.processes or ()
    ]
    rendered = render_table(LAYOUTS[layout], _rows(table.devices, layout), processes)
    if strip_trailing:
        text = "".join(line.rstrip() + "\n" for line in text.splitlines())
    assert rendered == text if text.endswith("\n") else rendered == text + "\n"


def _chip_910b3() -> ChipState:
    """The 910B3 of the nvitop captures (card 0), as the sim machine would hold it."""
    return ChipState(
        npu_id=0, chip_id=0, logic_id=0, phy_id=0, name="910B3", health="OK",
        bus=(0, 0xC1, 0, 0), power_w=99.4, temp_c=33, aicore_pct=0, vector_pct=0, aicpu_pct=0,
        ctrlcpu_pct=7, npu_util_pct=0, bandwidth_pct=0, hbm_used_mb=59189, hbm_total_mb=65536,
        memory_used_mb=0, memory_total_mb=0, hugepages_used=0, hugepages_total=0,
        aicore_mhz=800, aicore_max_mhz=1800, hbm_mhz=1600,
    )  # fmt: skip


def test_usages_power_temp_and_proc_mem_render_their_captures() -> None:
    chip = _chip_910b3()
    kind = chip_kind("Ascend910B3")
    process = ProcessState(0, 0, 3233241, "VLLMWorker_TP", 55844 << 20)
    view = MachineView(kind=kind, chips=(chip,), processes=(process,))
    # The captured usages says 90 % of HBM in use: 59189 of 65536 MB.
    assert render_card(view, "usages", 0, None, 20) == capture("usages_910b3_25.5.1.txt")
    assert render_card(view, "power", 0, None, 20) == capture("power_910b3_25.5.1.txt")
    assert render_card(view, "proc-mem", 0, None, 20) == capture("proc-mem_910b3_25.5.1.txt")
    cooler = replace(chip, temp_c=33)
    temp = render_card(replace(view, chips=(cooler,)), "temp", 0, None, 20)
    assert temp == capture("temp_910b3_25.5.1.txt")
    common = render_card(replace(view, chips=(replace(chip, power_w=99.7),)), "common", 0, None, 20)
    assert common == capture("common_910b3_25.5.1.txt")


def test_mapping_renders_its_capture() -> None:
    kind = chip_kind("Ascend910B3")
    chips = tuple(replace(_chip_910b3(), npu_id=n, logic_id=n, phy_id=n) for n in range(8))
    assert render_mapping(MachineView(kind, chips, ())) == capture("mapping_910b3_25.5.1.txt")


rows = st.builds(
    lambda npu, die, power, temp, used, hbm_used: (npu, die, power, temp, used, hbm_used),
    st.integers(0, 2000),
    st.integers(0, 1),
    st.one_of(st.none(), st.floats(0, 999.9).map(lambda w: round(w, 1))),
    st.integers(0, 120),
    st.integers(0, 99999),
    st.integers(0, 99999),
)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(LAYOUTS)), st.lists(rows, min_size=1, max_size=6))
def test_whatever_the_sim_prints_the_parser_reads_back(layout: str, values: list[tuple]) -> None:
    spec = LAYOUTS[layout]
    table_rows_in = [
        TableRow(
            npu_id=npu, chip_id=die, second_id=None if not spec.second_id else npu * 2 + die,
            name="Chip", health="OK", power_w=power, temp_c=temp, hugepages=(used, used),
            aicore_pct=temp % 101, memory_mb=(used, 99999), bus_id=None,
            hbm_mb=(hbm_used, 99999) if spec.has_hbm else None,
        )
        for npu, die, power, temp, used, hbm_used in values
    ]  # fmt: skip
    read = parse_info(render_table(spec, table_rows_in, []))
    assert read.warnings == ()
    assert _rows(read.devices, layout) == table_rows_in


def test_the_machine_lists_sim_jobs_on_the_chips_they_hold() -> None:
    config = SimConfig(device_count=4, soc_name="Ascend910_9391")
    jobs = [
        JobRecord(pid=101, name="train", devices=(DeviceUse(1, 3 << 30, 40, 10, 0),)),
        JobRecord(pid=102, name="serve", devices=(DeviceUse(1, 1 << 30, 30, 0, 5),)),
        JobRecord(pid=103, name="ghost", devices=(DeviceUse(9, 1 << 30, 0, 0, 0),)),
    ]
    view = machine_view(config, jobs)
    die = view.chip(0, 1)
    assert die is not None and die.power_w is None  # A3: the card's power is on die 0
    assert die.aicore_pct == 70 and die.vector_pct == 10 and die.aicpu_pct == 5
    assert die.hbm_used_mb == (2 << 10) + (4 << 10)  # the driver's 2 GiB + both jobs
    assert [(p.npu_id, p.chip_id, p.pid, p.memory_mb) for p in view.processes] == [
        (0, 1, 101, 3 << 10),
        (0, 1, 102, 1 << 10),
    ]
    table = parse_info(render_table(LAYOUTS["a3"], table_rows(view), table_processes(view)))
    assert [(d.npu_id, d.chip_id, d.phy_id) for d in table.devices] == [
        (0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3),
    ]  # fmt: skip
    assert [(p.pid, p.name, p.memory_mb) for p in table.processes or ()] == [
        (101, "train", 3072),
        (102, "serve", 1024),
    ]


def _npu_smi(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aclmon.sim.npu_smi", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("soc", ["Ascend910B3", "Ascend910_9391", "Ascend310P3", "Ascend310B4"])
def test_the_command_answers_info_m_and_t_as_npu_smi_does(soc: str, tmp_path: Path) -> None:
    env = {**os.environ, "ACLMON_SIM_CONFIG": f'{{"soc_name": "{soc}", "devices": 4}}'}
    env["ACLMON_SIM_DRIVER_DIR"] = str(tmp_path)
    table = parse_info(_npu_smi(["info"], env).stdout)
    kind = chip_kind(soc)
    assert len(table.devices) == 4 and table.warnings == ()
    assert {d.name for d in table.devices} == {kind.name}
    assert (table.processes is None) == (kind.layout == "310b")
    mapping = parse_mapping(_npu_smi(["info", "-m"], env).stdout)
    assert sorted(r.logic_id for r in mapping if r.logic_id is not None) == [0, 1, 2, 3]
    card = table.devices[-1].npu_id
    usages = parse_chip_values(_npu_smi(["info", "-t", "usages", "-i", str(card)], env).stdout)
    assert sorted(usages) == sorted(d.chip_id for d in table.devices if d.npu_id == card)
    missing = _npu_smi(["info", "-t", "usages"], env)
    assert missing.returncode != 0
    assert missing.stdout.startswith("This command must input card id.\n\nUsage: npu-smi info")
    assert _npu_smi(["info", "-t", "usages", "-i", "99"], env).returncode != 0
