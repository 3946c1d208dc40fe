"""The npu-smi parsers on real captures: every field of every chip and process.

Each expected reading is a whole DeviceReading/ProcessReading, so a field the
parser fills wrongly, or fills where the layout has nothing (that must stay
None), fails the comparison.
"""

from __future__ import annotations

import contextlib

import pytest
from hostcaptures import all_captures, capture
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.events.host import DeviceReading, ProcessReading
from aclmon.host.npusmi_text import (
    NpuSmiFormatError,
    parse_chip_values,
    parse_info,
    parse_key_values,
    parse_mapping,
    usage_values,
    with_logic_ids,
)


def a2_chip(npu: int, name: str, power: float, temp: int, bus: str, hbm: int) -> DeviceReading:
    """An Atlas A2 chip: one per card, HBM only (the DDR column reads 0 / 0)."""
    return DeviceReading(
        npu_id=npu, chip_id=0, name=name, health="OK", power_w=power, temp_c=temp,
        aicore_pct=0, hbm_used_mb=hbm, hbm_total_mb=65536, memory_used_mb=0,
        memory_total_mb=0, hugepages_used=0, hugepages_total=0, bus_id=bus,
    )  # fmt: skip


def process(npu: int, chip: int, pid: int, name: str | None, mb: int) -> ProcessReading:
    return ProcessReading(npu_id=npu, chip_id=chip, pid=pid, name=name, memory_mb=mb)


def test_910b3_25_5_1_eight_cards_and_their_processes() -> None:
    table = parse_info(capture("info_910b3_25.5.1.txt"))
    assert (table.tool_version, table.driver_version, table.warnings) == ("25.5.1", "25.5.1", ())
    assert table.devices == (
        a2_chip(0, "910B3", 99.4, 34, "0000:C1:00.0", 59189),
        a2_chip(1, "910B3", 91.1, 32, "0000:C2:00.0", 59184),
        a2_chip(2, "910B3", 86.9, 33, "0000:81:00.0", 59186),
        a2_chip(3, "910B3", 93.2, 35, "0000:82:00.0", 59186),
        a2_chip(4, "910B3", 88.7, 37, "0000:01:00.0", 59932),
        a2_chip(5, "910B3", 91.5, 37, "0000:02:00.0", 59944),
        a2_chip(6, "910B3", 94.9, 37, "0000:41:00.0", 59021),
        a2_chip(7, "910B3", 90.1, 39, "0000:42:00.0", 19319),
    )
    assert table.processes == (
        process(0, 0, 3233241, "VLLMWorker_TP", 55844),
        process(1, 0, 3233701, "VLLMWorker_TP", 55840),
        process(2, 0, 3234962, "VLLMWorker_TP", 55842),
        process(3, 0, 3235553, "VLLMWorker_TP", 55842),
        process(4, 0, 3232170, "VLLMEngineCor", 56588),
        process(5, 0, 3231929, "VLLMEngineCor", 56600),
        process(6, 0, 2895155, "VLLMEngineCor", 55671),
        process(7, 0, 1886762, "VLLMEngineCor", 15975),
    )


def test_910b3_in_a_container_reads_an_unnamed_process_as_unknown_name() -> None:
    table = parse_info(capture("info_910b3_25.2.0_container.txt"))
    assert table.tool_version == "25.2.0"
    hbm = [3408, 3408, 41052, 3390, 3403, 3400, 3401, 3400]
    power = [97.9, 89.5, 92.3, 92.4, 95.6, 97.2, 91.0, 95.4]
    temp = [34, 32, 32, 32, 37, 38, 36, 37]
    buses = ["C1", "C2", "81", "82", "01", "02", "41", "42"]
    assert table.devices == tuple(
        a2_chip(n, "910B3", power[n], temp[n], f"0000:{buses[n]}:00.0", hbm[n]) for n in range(8)
    )
    # "No running processes found in NPU n" rows are no processes; the one row has no name.
    assert table.processes == (process(2, 0, 1333928, None, 37709),)


def test_910b2c_with_trailing_spaces_and_a_dashed_last_rule() -> None:
    table = parse_info(capture("info_910b2c_23.0.2.1.txt"))
    assert table.tool_version == "23.0.2.1"
    assert table.devices == (
        a2_chip(0, "910B2C", 88.6, 51, "0000:5A:00.0", 20701),
        a2_chip(1, "910B2C", 99.6, 50, "0000:19:00.0", 20687),
    )
    assert table.processes == (process(0, 0, 124528, "python3.8", 17400),)


def a3_die(npu: int, die: int, power: float | None, temp: int, bus: str, hbm: int) -> DeviceReading:
    """An Atlas A3 die: two per card, Phy-ID counted across the box."""
    return DeviceReading(
        npu_id=npu, chip_id=die, phy_id=2 * npu + die, name="Ascend910", health="OK",
        power_w=power, temp_c=temp, aicore_pct=0, hbm_used_mb=hbm, hbm_total_mb=65536,
        memory_used_mb=0, memory_total_mb=0, hugepages_used=0, hugepages_total=0,
        bus_id=f"0000:{bus}:00.0",
    )  # fmt: skip


def test_a3_26_1_sixteen_dies_second_die_power_unknown_and_container_pids() -> None:
    table = parse_info(capture("info_a3_26.1.0.b087.txt"))
    assert (table.tool_version, table.warnings) == ("26.1.0.b087", ())
    cards = [
        (175.9, 33, "9D", 37397, 30, "9F", 37054),
        (176.0, 33, "99", 37302, 32, "9B", 37066),
        (158.5, 32, "95", 37282, 30, "97", 37065),
        (170.6, 32, "91", 37311, 31, "93", 37058),
        (177.2, 33, "8D", 37302, 31, "8F", 37066),
        (176.5, 33, "89", 37302, 33, "8B", 37065),
        (159.8, 32, "85", 37295, 31, "87", 37055),
        (178.6, 31, "81", 37311, 32, "83", 37054),
    ]
    expected = []
    for npu, (power, temp0, bus0, hbm0, temp1, bus1, hbm1) in enumerate(cards):
        # Die 1 prints "-" for power: the card's power is on die 0. Unknown, not 0.
        expected += [
            a3_die(npu, 0, power, temp0, bus0, hbm0),
            a3_die(npu, 1, None, temp1, bus1, hbm1),
        ]
    assert table.devices == tuple(expected)
    pids = [
        (3224097, 34309, 3246544, 34229), (3268834, 34229, 3291129, 34229),
        (3305013, 34209, 3309226, 34229), (3313361, 34229, 3317914, 34229),
        (3322118, 34229, 3326625, 34229), (3345245, 34229, 3363635, 34229),
        (3381076, 34209, 3398615, 34229), (3415355, 34229, 3431925, 34229),
    ]  # fmt: skip
    # The fifth column, "Process id in container", is NA on the host: unknown.
    assert table.processes == tuple(
        process(npu, chip, pid, "VLLMWorker_DP", mb)
        for npu, (pid0, mb0, pid1, mb1) in enumerate(pids)
        for chip, (pid, mb) in enumerate(((pid0, mb0), (pid1, mb1)))
    )


def test_a3_25_2_no_processes_on_one_card_a_process_on_the_next() -> None:
    table = parse_info(capture("info_a3_25.2.0.txt"))
    assert table.devices == (
        a3_die(0, 0, 162.8, 37, "9C", 3133),
        a3_die(0, 1, None, 37, "9E", 2876),
        a3_die(1, 0, 167.1, 38, "37", 3116),
        a3_die(1, 1, None, 38, "39", 10568),
    )
    assert table.processes == (process(1, 1, 990711, "python", 7746),)


def p310(
    npu: int, chip: int, temp: int, pages: int, bus: str, used: int, total: int
) -> DeviceReading:
    """A 310P chip: no HBM column, power NA, the second id is the ACL device id."""
    return DeviceReading(
        npu_id=npu, chip_id=chip, logic_id=None, name="310P3", health="OK", power_w=None,
        temp_c=temp, aicore_pct=0, memory_used_mb=used, memory_total_mb=total,
        hugepages_used=pages, hugepages_total=pages, bus_id=bus,
    )  # fmt: skip


def test_310p3_duo_without_hbm_power_na_and_npu_ids_from_one() -> None:
    table = parse_info(capture("info_310p3_24.1.0.1.txt"))
    assert table.tool_version == "24.1.0.1"
    expected = [
        p310(1, 0, 62, 7210, "0000:01:00.0", 16302, 44280),
        p310(1, 1, 62, 7210, "0000:01:00.0", 15543, 43693),
        p310(2, 0, 61, 17057, "0000:02:00.0", 35563, 44280),
        p310(2, 1, 61, 16823, "0000:02:00.0", 35204, 43693),
    ]
    assert table.devices == tuple(
        DeviceReading(**{**d.__dict__, "logic_id": n}) for n, d in enumerate(expected)
    )
    assert table.processes == (
        process(1, 0, 3277562, "mindie_llm_back", 14513),
        process(1, 1, 3277565, "mindie_llm_back", 14513),
        process(2, 0, 3034986, "mindie_llm_back", 34207),
        process(2, 1, 3034989, "mindie_llm_back", 33740),
    )


def test_310p3_in_a_container_with_a_virtual_npu_id_and_a_prompt_before_the_table() -> None:
    table = parse_info(capture("info_310p3_24.1.rc2_container.txt"))
    assert table.tool_version == "24.1.rc2"
    assert table.devices == (
        DeviceReading(
            **{**p310(1792, 0, 36, 0, "0000:07:00.0", 1821, 44280).__dict__, "logic_id": 0}
        ),
        DeviceReading(
            **{**p310(1792, 1, 36, 0, "0000:07:00.0", 1041, 43693).__dict__, "logic_id": 1}
        ),
    )
    assert table.processes == ()


def test_310b4_without_hbm_bus_id_na_alarm_and_no_process_section() -> None:
    table = parse_info(capture("info_310b4_23.0.0.txt"))
    assert table.tool_version == "23.0.0"
    assert table.devices == (
        DeviceReading(
            npu_id=0, chip_id=0, logic_id=0, name="310B4", health="Alarm", power_w=0.0,
            temp_c=65, aicore_pct=0, memory_used_mb=3628, memory_total_mb=15609,
            hugepages_used=15, hugepages_total=15, bus_id=None,
        ),
    )  # fmt: skip
    # No section at all: processes are unknown here, not "none".
    assert table.processes is None


def test_ascend_950_separate_id_cells_npu_util_and_chipless_processes() -> None:
    table = parse_info(capture("info_a5_26.2.0.b007.txt"))
    rows = [(451.3, 39, 5086), (447.2, 38, 4761), (452.5, 37, 4759), (449.8, 35, 4757),
            (448.7, 38, 4763), (446.9, 40, 4760), (455.5, 42, 4759), (450.4, 38, 4762)]  # fmt: skip
    assert table.devices == tuple(
        DeviceReading(
            npu_id=n, chip_id=0, name="Ascend950DT", health="OK", power_w=power, temp_c=temp,
            npu_util_pct=0, hbm_used_mb=hbm, hbm_total_mb=98304, memory_used_mb=0,
            memory_total_mb=0, hugepages_used=0, hugepages_total=0, bus_id=None,
        )
        for n, (power, temp, hbm) in enumerate(rows)
    )  # fmt: skip
    assert table.processes == (process(0, 0, 3252331, "udma_d2h_demo", 341),)


def test_every_capture_reads_without_warnings() -> None:
    for name in all_captures("info_"):
        assert parse_info(capture(name)).warnings == (), name


# ---------------------------------------------------------------- -t TYPE, -m
def test_usages_of_a_910b3_card() -> None:
    chips = parse_chip_values(capture("usages_910b3_25.5.1.txt"))
    assert list(chips) == [0]
    assert usage_values(chips[0]) == {
        "aicore_pct": 0, "vector_pct": 0, "aicpu_pct": 0, "ctrlcpu_pct": 7,
        "npu_util_pct": 0, "memory_bandwidth_pct": 0,
    }  # fmt: skip
    assert chips[0]["HBM Capacity(MB)"] == "65536"
    assert chips[0]["HBM Usage Rate(%)"] == "90"


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("common_910b3_25.5.1.txt", "Aicore curFreq(MHZ)", "800"),
        ("common_910b3_25.5.1.txt", "NPU Real-time Power(W)", "99.7"),
        ("power_910b3_25.5.1.txt", "NPU Real-time Power(W)", "99.4"),
        ("temp_910b3_25.5.1.txt", "NPU Temperature (C)", "33"),
        ("memory_910b3_25.5.1.txt", "HBM Manufacturer ID", "0x57"),
    ],
)
def test_card_types_give_the_chip_block_not_the_mcu(name: str, key: str, value: str) -> None:
    chips = parse_chip_values(capture(name))
    assert list(chips) == [0]
    assert chips[0][key] == value


def test_key_values_keep_blocks_apart() -> None:
    blocks = parse_key_values(capture("temp_910b3_25.5.1.txt"))
    assert blocks == [
        {"NPU ID": "0", "Chip Count": "1"},
        {"NPU Temperature (C)": "33", "Chip ID": "0"},
        {"LM75A_TE (C)": "31", "LM75B_TE (C)": "33", "Chip Name": "MCU"},
    ]


def test_proc_mem_lines_are_not_key_values() -> None:
    blocks = parse_key_values(capture("proc-mem_910b3_25.5.1.txt"))
    assert blocks == [{"NPU ID": "0", "Chip Count": "1"}, {"Chip ID": "0"}]


def test_the_usage_message_npu_smi_prints_without_a_card_is_an_error() -> None:
    text = capture("usages-without-card_a3_26.1.0.b087.txt")
    with pytest.raises(NpuSmiFormatError, match="This command must input card id"):
        parse_chip_values(text)
    with pytest.raises(NpuSmiFormatError, match="no npu-smi info table"):
        parse_info(text)


def test_mapping_gives_acl_device_ids_and_skips_nothing() -> None:
    rows = parse_mapping(capture("mapping_910b3_25.5.1.txt"))
    assert [(r.npu_id, r.chip_id, r.logic_id, r.name) for r in rows[:2]] == [
        (0, 0, 0, "Ascend 910B3"),
        (0, 1, None, "Mcu"),
    ]
    assert [r.logic_id for r in rows if r.chip_id == 0] == list(range(8))
    devices = with_logic_ids(parse_info(capture("info_910b3_25.5.1.txt")).devices, rows)
    assert [d.logic_id for d in devices] == list(range(8))


def test_mapping_is_read_by_its_header_names() -> None:
    # Ascend 950 adds Slot ID and Chip Phy-ID and has no chip column (its -m layout as the
    # reference describes it: the columns are found by name, not by position).
    text = (
        "\tNPU ID    Slot ID    Chip Logic ID    Chip Phy-ID    Chip Name\n"
        "\t0         1          0                4              Ascend 950DT\n"
        "\t1         2          -                5              Mcu\n"
    )
    assert [(r.npu_id, r.chip_id, r.logic_id, r.name) for r in parse_mapping(text)] == [
        (0, 0, 0, "Ascend 950DT"),
        (1, 0, None, "Mcu"),
    ]


# ---------------------------------------------------------------- hostile input
def _mutations(text: str) -> st.SearchStrategy[str]:
    lines = text.splitlines()
    dropped = st.integers(0, len(lines) - 1).map(lambda i: "\n".join(lines[:i] + lines[i + 1 :]))
    cut = st.integers(0, len(text)).map(lambda n: text[:n])
    replaced = st.tuples(st.integers(0, max(0, len(text) - 1)), st.text(max_size=3)).map(
        lambda t: text[: t[0]] + t[1] + text[t[0] + 1 :]
    )
    return st.one_of(dropped, cut, replaced)


CORPUS = [capture(name) for name in all_captures("info_")]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CORPUS).flatmap(_mutations))
def test_damaged_tables_read_or_fail_with_one_clear_error(text: str) -> None:
    try:
        table = parse_info(text)
    except NpuSmiFormatError as exc:
        assert str(exc)
        return
    # What it read is plain values; a row it could not read is a bounded warning.
    for device in table.devices:
        assert all(
            v is None or isinstance(v, (int, float, str))
            for v in device.__dict__.values()
            if not isinstance(v, tuple)
        )
    assert len(table.warnings) <= 20


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_reads_or_fails_with_one_clear_error(text: str) -> None:
    for parse in (parse_info, parse_chip_values, parse_mapping):
        with contextlib.suppress(NpuSmiFormatError):
            parse(text)
