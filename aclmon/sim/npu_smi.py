"""``python -m aclmon.sim.npu_smi``: npu-smi for the simulated host.

Prints what the real tool prints, in the layout of the product the sim config's
SoC stands for (aclmon.sim.machine): the ``npu-smi info`` table of an Atlas A2
(npu-smi 25.5.1), an Atlas A3 with two dies per card (26.1.0.b087), a 310P Duo
(24.1.0.1) or a 310B board (23.0.0, no process section), with the sim jobs that
hold the devices as its processes. Also ``info -m`` and ``info -t TYPE -i CARD
[-c CHIP]`` for usages, common, power, temp, memory, proc-mem and health, and the
usage message real npu-smi prints when ``-i`` is missing.

The column widths, headers and separators are those of public captures (see
docs/reference/npu_smi_dcmi.md); tests render the captured values and compare
byte for byte. Point aclmon at it with ``ACLMON_NPU_SMI="python -m aclmon.sim.npu_smi"``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

from aclmon.sim.config import SimConfigError, load_config
from aclmon.sim.driver import read_jobs
from aclmon.sim.machine import ChipState, MachineView, machine_view


@dataclass(frozen=True)
class TableLayout:
    """One product's ``npu-smi info`` table, measured on a capture."""

    version: str
    width: int
    #: column of "Version:" in the banner line.
    version_at: int
    #: inner widths of the three device cells (ids | health, bus | metrics).
    cells: tuple[int, int, int]
    #: widths of the two ids of the first cell (NPU + name; chip + second id).
    ids: tuple[int, int]
    #: widths of power and temperature (hugepages take the rest of the cell).
    row1: tuple[int, int]
    #: widths of AI Core and memory (HBM takes the rest, where there is HBM).
    row2: tuple[int, int]
    #: width of the "used" figure of the hugepages pair ("0    / 0" or "7210  / 7210").
    hugepages_used: int
    header1: str
    header2: str
    #: what separates two chips of one card: a rule across the box, or by cells.
    die_rule: str
    process_header: str
    #: inner widths of the process cells (ids | pid | name | memory [| container pid]).
    process_cells: tuple[int, ...]
    process_ids: tuple[int, int]
    #: the layout prints a process section (the 310B capture has none).
    processes: bool
    #: how a power the board does not report is printed.
    no_power: str
    has_hbm: bool
    second_id: str


_LAYOUT_310P = TableLayout(
    version="24.1.0.1", width=106, version_at=51, cells=(31, 17, 54), ids=(8, 22),
    row1=(13, 18), row2=(13, 40), hugepages_used=6,
    header1="| NPU     Name                  | Health          | Power(W)     Temp(C)           Hugepages-Usage(page) |",
    header2="| Chip    Device                | Bus-Id          | AICore(%)    Memory-Usage(MB)                        |",
    die_rule="cells",
    process_header="| NPU     Chip                  | Process id      | Process name             | Process memory(MB)        |",
    process_cells=(31, 17, 26, 27), process_ids=(8, 22), processes=True, no_power="NA",
    has_hbm=False, second_id="Device",
)  # fmt: skip

LAYOUTS = {
    "a2": TableLayout(
        version="25.5.1", width=98, version_at=35, cells=(27, 15, 52), ids=(6, 20),
        row1=(12, 18), row2=(12, 18), hugepages_used=5,
        header1="| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|",
        header2="| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |",
        die_rule="cells",
        process_header="| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |",
        process_cells=(27, 15, 26, 25), process_ids=(8, 18), processes=True, no_power="NA",
        has_hbm=True, second_id="",
    ),
    "a3": TableLayout(
        version="26.1.0.b087", width=116, version_at=46, cells=(27, 15, 70), ids=(6, 20),
        row1=(21, 24), row2=(21, 24), hugepages_used=5,
        header1="| NPU   Name                | Health        | Power(W)             Temp(C)                 Hugepages-Usage(page)   |",
        header2="| Chip  Phy-ID              | Bus-Id        | AICore(%)            Memory-Usage(MB)        HBM-Usage(MB)           |",
        die_rule="full",
        process_header="| NPU     Chip              | Process id    | Process name       | Process memory(MB)    | Process id in container |",
        process_cells=(27, 15, 20, 23, 25), process_ids=(8, 18), processes=True, no_power="-",
        has_hbm=True, second_id="Phy-ID",
    ),
    "310p": _LAYOUT_310P,
    # the 310B's table is the 310P's, with its own version and no process section
    "310b": replace(
        _LAYOUT_310P, version="23.0.0", process_header="", process_cells=(), processes=False
    ),
}  # fmt: skip

#: what npu-smi 26.1 prints for a usage error (captured on an Atlas A3).
USAGE = """Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]

Commands:
       watch          Show all device's status in scrolling format
       proc           Show device's matrix process status in scrolling format
       -h, --help     Show this help text and exit
       -m             Show all device's mapping information
       -l             Show all device's topology information
       -t type        Show information for type
                      type: board, flash, memory, usages, sensors, temp, power, volt, mac-addr,
                            common, health, product, ecc, ip, sys-time, i2c_check, work-mode,
                            ecc-enable, p2p-enable, ssh-enable, license, customized-info, device-share,
                            device-share-cfg-recover, nve-level, aicpu-config, pcie-err, mcu-monitor,
                            err-count, boot-area, vnpu-mode, info-vnpu, vnpu-svm, cpu-num-cfg,
                            first-power-on-date, proc-mem, phyid-remap, vnpu-cfg-recover, key-manage,
                            template-info, pkcs-enable, p2p-mem-cfg, pwm-mode, pwm-duty-ratio,
                            boot-select, topo, hccs, sio-info, spod-info, tls-csr-get, tls-cert,
                            tls-cert-period, rootkey, hccs-bw, cpu-freq-up, sys-log-info, hccs-credit,
                            custom-op-secverify-enable, custom-op-secverify-mode, op-timeout,
                            custom-op-secverify-cert, multi-die-policy, multi-die-policy-cfg-recover,
                            bf16-saturation-mode, int-saturation-mode.

Options:
       -i %d          Card ID
       -c %d          Chip ID
       -p %d          Chip Physical ID"""


@dataclass(frozen=True)
class TableRow:
    """One chip's two lines, as values (None: not reported)."""

    npu_id: int
    chip_id: int
    second_id: int | None
    name: str
    health: str
    power_w: float | None
    temp_c: int
    hugepages: tuple[int, int]
    aicore_pct: int
    memory_mb: tuple[int, int]
    hbm_mb: tuple[int, int] | None
    bus_id: str | None


@dataclass(frozen=True)
class TableProcess:
    npu_id: int
    chip_id: int
    pid: int
    name: str
    memory_mb: int


# ---------------------------------------------------------------- npu-smi info
def _rule(layout: TableLayout, char: str) -> str:
    return "+" + "+".join(char * width for width in layout.cells) + "+"


def _pair(used: int, total: int, width: int = 5) -> str:
    return f"{used:<{width}}/ {total}"


def render_table(layout: TableLayout, rows: list[TableRow], processes: list[TableProcess]) -> str:
    """The ``npu-smi info`` text for these chips and processes."""
    version = layout.version
    lines = [
        "+" + "-" * (layout.width - 2) + "+",
        "| "
        + f"npu-smi {version}".ljust(layout.version_at - 2)
        + f"Version: {version}".ljust(layout.width - layout.version_at - 1)
        + "|",
        _rule(layout, "-"),
        layout.header1,
        layout.header2,
        _rule(layout, "="),
    ]
    ids, (_, health_w, metrics_w) = layout.ids, layout.cells
    for index, row in enumerate(rows):
        power = layout.no_power if row.power_w is None else f"{row.power_w:.1f}"
        hugepages = _pair(*row.hugepages, layout.hugepages_used)
        lines.append(
            f"| {row.npu_id!s:<{ids[0]}}{row.name:<{ids[1]}}| {row.health:<{health_w - 1}}| "
            f"{power:<{layout.row1[0]}}{row.temp_c:<{layout.row1[1]}}"
            f"{hugepages:<{metrics_w - 1 - sum(layout.row1)}}|"
        )
        second = "" if row.second_id is None else str(row.second_id)
        metrics = f"{row.aicore_pct:<{layout.row2[0]}}"
        if row.hbm_mb is None:
            metrics += f"{_pair(*row.memory_mb):<{metrics_w - 1 - layout.row2[0]}}"
        else:
            metrics += f"{_pair(*row.memory_mb):<{layout.row2[1]}}"
            metrics += f"{_pair(*row.hbm_mb):<{metrics_w - 1 - sum(layout.row2)}}"
        lines.append(
            f"| {row.chip_id!s:<{ids[0]}}{second:<{ids[1]}}"
            f"| {row.bus_id or 'NA':<{health_w - 1}}| {metrics}|"
        )
        last_of_card = index + 1 == len(rows) or rows[index + 1].npu_id != row.npu_id
        if last_of_card:
            lines.append(_rule(layout, "="))
        elif layout.die_rule == "full":
            lines.append("+" + "-" * (layout.width - 2) + "+")
        else:
            lines.append(_rule(layout, "-"))
    if layout.processes:
        lines += [_rule(layout, "-"), layout.process_header, _rule(layout, "=")]
        for card in dict.fromkeys(row.npu_id for row in rows):
            held = [p for p in processes if p.npu_id == card]
            if not held:
                text = f"No running processes found in NPU {card}"
                lines.append(f"| {text:<{layout.width - 3}}|")
            for process in held:
                lines.append(_process_line(layout, process))
            lines.append(_rule(layout, "="))
    return "\n".join(lines) + "\n"


def _process_line(layout: TableLayout, process: TableProcess) -> str:
    cells = layout.process_cells
    values = [
        f"{process.npu_id!s:<{layout.process_ids[0]}}{process.chip_id!s:<{layout.process_ids[1]}}",
        str(process.pid),
        process.name,
        str(process.memory_mb),
    ]
    if len(cells) == 5:
        values.append("NA")  # the process runs on this host: no container pid
    return (
        "".join(f"| {value:<{width - 1}}" for value, width in zip(values, cells, strict=True)) + "|"
    )


def table_rows(view: MachineView) -> list[TableRow]:
    layout = LAYOUTS[view.kind.layout]
    rows = []
    for chip in view.chips:
        second = {"Phy-ID": chip.phy_id, "Device": chip.logic_id}.get(layout.second_id)
        rows.append(
            TableRow(
                npu_id=chip.npu_id,
                chip_id=chip.chip_id,
                second_id=second,
                name=chip.name,
                health=chip.health,
                power_w=chip.power_w,
                temp_c=chip.temp_c,
                hugepages=(chip.hugepages_used, chip.hugepages_total),
                aicore_pct=chip.aicore_pct,
                memory_mb=(chip.memory_used_mb, chip.memory_total_mb),
                hbm_mb=None
                if chip.hbm_total_mb is None or chip.hbm_used_mb is None
                else (chip.hbm_used_mb, chip.hbm_total_mb),
                bus_id=chip.bus_id,
            )
        )
    return rows


def table_processes(view: MachineView) -> list[TableProcess]:
    return [
        TableProcess(p.npu_id, p.chip_id, p.pid, p.name[:15], p.memory_mb) for p in view.processes
    ]


# ---------------------------------------------------------------- info -m
def render_mapping(view: MachineView) -> str:
    lines = ["\t" + f"{'NPU ID':<31}{'Chip ID':<31}{'Chip Logic ID':<31}{'Chip Name':<30}"]
    name = "Ascend " + view.kind.name.removeprefix("Ascend")
    for card in view.card_ids():
        chips = view.chips_of(card)
        for chip in chips:
            lines.append(f"\t{chip.npu_id:<31}{chip.chip_id:<31}{chip.logic_id:<31}{name}")
        if view.kind.layout != "310b":
            lines.append(f"\t{card:<31}{len(chips):<31}{'-':<31}{'Mcu':<30}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- info -t TYPE
def _kv(key: str, value: object) -> str:
    return f"\t{key:<31}: {value}\n"


def _rate(used: int | None, total: int | None) -> int:
    return used * 100 // total if used is not None and total else 0


def _usages(view: MachineView, chip: ChipState) -> str:
    if view.kind.has_hbm:
        return (
            _kv("DDR Capacity(MB)", chip.memory_total_mb)
            + _kv("DDR Usage Rate(%)", _rate(chip.memory_used_mb, chip.memory_total_mb))
            + _kv("DDR Hugepages Total(page)", chip.hugepages_total)
            + _kv("DDR Hugepages Usage Rate(%)", _rate(chip.hugepages_used, chip.hugepages_total))
            + _kv("HBM Capacity(MB)", chip.hbm_total_mb)
            + _kv("HBM Usage Rate(%)", _rate(chip.hbm_used_mb, chip.hbm_total_mb))
            + _kv("Aicore Usage Rate(%)", chip.aicore_pct)
            + _kv("Aivector Usage Rate(%)", chip.vector_pct)
            + _kv("Aicpu Usage Rate(%)", chip.aicpu_pct)
            + _kv("Ctrlcpu Usage Rate(%)", chip.ctrlcpu_pct)
            + _kv("DDR Bandwidth Usage Rate(%)", 0)
            + _kv("HBM Bandwidth Usage Rate(%)", chip.bandwidth_pct)
            + _kv("NPU Utilization(%)", chip.npu_util_pct)
            + _kv("Aicube Usage Rate(%)", chip.aicore_pct)
            + _kv("Chip ID", chip.chip_id)
        )
    return (
        _kv("Chip ID", chip.chip_id)
        + _kv("Memory Capacity(MB)", chip.memory_total_mb)
        + _kv("Memory Usage Rate(%)", _rate(chip.memory_used_mb, chip.memory_total_mb))
        + _kv("Hugepages Total(page)", chip.hugepages_total)
        + _kv("Hugepages Usage Rate(%)", _rate(chip.hugepages_used, chip.hugepages_total))
        + _kv("Aicore Usage Rate(%)", chip.aicore_pct)
        + _kv("Aicpu Usage Rate(%)", chip.aicpu_pct)
        + _kv("Ctrlcpu Usage Rate(%)", chip.ctrlcpu_pct)
        + _kv("Memory Bandwidth Usage Rate(%)", chip.bandwidth_pct)
    )


def _power(view: MachineView, chip: ChipState) -> str:
    power = "NA" if chip.power_w is None else f"{chip.power_w:.1f}"
    return _kv("NPU Real-time Power(W)", power) + _kv("Chip ID", chip.chip_id)


def _temp(view: MachineView, chip: ChipState) -> str:
    return _kv("NPU Temperature (C)", chip.temp_c) + _kv("Chip ID", chip.chip_id)


def _memory(view: MachineView, chip: ChipState) -> str:
    return (
        _kv("DDR Capacity(MB)", chip.memory_total_mb)
        + _kv("DDR Clock Speed(MHz)", 0 if view.kind.has_hbm else 3200)
        + _kv("HBM Capacity(MB)", chip.hbm_total_mb or 0)
        + _kv("HBM Clock Speed(MHz)", chip.hbm_mhz)
        + _kv("HBM Temperature(C)", chip.temp_c - 2 if view.kind.has_hbm else 0)
        + _kv("HBM Manufacturer ID", "0x57" if view.kind.has_hbm else "NA")
        + _kv("Chip ID", chip.chip_id)
    )


def _common(view: MachineView, chip: ChipState, aicore_count: int) -> str:
    power = "NA" if chip.power_w is None else f"{chip.power_w:.1f}"
    return (
        _kv("Chip ID", chip.chip_id)
        + _kv("Memory Usage Rate(%)", _rate(chip.memory_used_mb, chip.memory_total_mb))
        + _kv("HBM Usage Rate(%)", _rate(chip.hbm_used_mb, chip.hbm_total_mb))
        + _kv("Aicore Usage Rate(%)", chip.aicore_pct)
        + _kv("Aicore Freq(MHZ)", chip.aicore_max_mhz)
        + _kv("Aicore curFreq(MHZ)", chip.aicore_mhz)
        + _kv("Aicore Count", aicore_count)
        + _kv("Temperature(C)", chip.temp_c)
        + _kv("NPU Real-time Power(W)", power)
    )


def _proc_mem(view: MachineView, chip: ChipState) -> str:
    text = ""
    for process in view.processes:
        if (process.npu_id, process.chip_id) == (chip.npu_id, chip.chip_id):
            text += (
                f"\tProcess id:{process.pid} Process name:{process.name[:15]}     "
                f"Process memory(MB):{process.memory_mb}\n"
            )
    return text + _kv("Chip ID", chip.chip_id)


def _health(view: MachineView, chip: ChipState) -> str:
    return _kv("Chip ID", chip.chip_id) + _kv("Health", chip.health)


def render_card(
    view: MachineView, kind: str, card: int, chip_id: int | None, aicore_count: int
) -> str | None:
    """``npu-smi info -t KIND -i CARD [-c CHIP]``; None for a type the sim does not print."""
    printers: dict[str, Callable[[MachineView, ChipState], str]] = {
        "usages": _usages,
        "power": _power,
        "temp": _temp,
        "memory": _memory,
        "proc-mem": _proc_mem,
        "health": _health,
        "common": lambda v, c: _common(v, c, aicore_count),
    }
    printer = printers.get(kind)
    if printer is None:
        return None
    chips = view.chips_of(card)
    text = _kv("NPU ID", card) + _kv("Chip Count", len(chips)) + "\n"
    for chip in chips:
        if chip_id is None or chip.chip_id == chip_id:
            text += printer(view, chip) + "\n"
    if kind == "temp" and chip_id is None and view.kind.layout != "310b":
        coolest = min(chip.temp_c for chip in chips)
        text += _kv("LM75A_TE (C)", coolest - 2) + _kv("LM75B_TE (C)", coolest)
        text += _kv("Chip Name", "MCU") + "\n"
    if kind == "common" and chip_id is None and view.kind.layout != "310b":
        text += _kv("Chip Name", "mcu") + _kv("Temperature(C)", min(c.temp_c for c in chips) - 2)
    return text


# ---------------------------------------------------------------- the command
def _option(args: list[str], flag: str) -> str | None:
    if flag in args:
        index = args.index(flag)
        return args[index + 1] if index + 1 < len(args) else ""
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "info" or "-h" in args or "--help" in args:
        print(USAGE)
        return 0 if args and ("-h" in args or "--help" in args) else 1
    try:
        config = load_config()
    except SimConfigError as exc:
        print(f"npu-smi (simulated): {exc}")
        return 1
    view = machine_view(config, read_jobs())
    rest = args[1:]
    if not rest:
        layout = LAYOUTS[view.kind.layout]
        sys.stdout.write(render_table(layout, table_rows(view), table_processes(view)))
        return 0
    if rest == ["-m"]:
        sys.stdout.write(render_mapping(view))
        return 0
    kind, card, chip = _option(rest, "-t"), _option(rest, "-i"), _option(rest, "-c")
    if kind and card is None:
        print("This command must input card id.\n")
        print(USAGE)
        return 1
    if not kind or not card or not card.isdigit() or (chip is not None and not chip.isdigit()):
        print(USAGE)
        return 1
    if int(card) not in view.card_ids():
        print(f"Card id {card} does not exist.")
        return 1
    text = render_card(
        view, kind, int(card), None if chip is None else int(chip), config.ai_core_count
    )
    if text is None:
        print(f"The type {kind} is not simulated.")
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
