"""Parsers for npu-smi's text: the ``npu-smi info`` table, ``-t TYPE`` key/value
blocks and the ``-m`` mapping. Pure functions, no I/O.

The table is read by its ``|`` cells, never by character offsets: widths and
header wording change with the driver and the product (docs/reference/npu_smi_dcmi.md
lists the layouts). Values are named by the header above them, so a layout
without an HBM column (310P, 310B) or with ``NPU Util(%)`` instead of
``AICore(%)`` (Ascend 950) reads as what it is. ``NA``, ``-`` and empty cells are
unknown (``None``), never 0. Process rows are only read after the ``Process id``
header, so they cannot turn into phantom devices.

Anything that is not a table (a usage message, a limiter's log lines before it,
a shell prompt after it) is skipped; a value that does not read is dropped with a
warning; only output with no table at all is an error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from aclmon.errors import AclmonError
from aclmon.events.host import DeviceReading, ProcessReading

_BANNER = re.compile(r"^\|\s*npu-smi\s+(\S+)\s+Version:\s*(\S+)")
#: "0    / 0", "37397/ 65536", "NA / NA": one value pair, whatever the spacing.
_PAIR = re.compile(r"(\S+?)\s*/\s*(\S+)")
_HEADER_SPLIT = re.compile(r"\s{2,}")
_NO_PROCESS = re.compile(r"No running processes found in NPU", re.IGNORECASE)
_KEY_VALUE = re.compile(r"^\s*(\S.*?)\s+:\s?(.*?)\s*$")
_PROC_MEM = re.compile(
    r"Process id:\s*(\d+)\s+Process name:\s*(.*?)\s+Process memory\(MB\):\s*(\S+)"
)
_UNKNOWN = frozenset({"", "NA", "N/A", "-", "--"})
#: at most this many warnings are kept per parse (hostile output cannot grow them).
MAX_WARNINGS = 20

#: metric header -> DeviceReading field (a pair header names two fields).
_ROW1_FIELDS: dict[str, tuple[str, ...]] = {
    "Power(W)": ("power_w",),
    "Temp(C)": ("temp_c",),
    "Hugepages-Usage(page)": ("hugepages_used", "hugepages_total"),
}
_ROW2_FIELDS: dict[str, tuple[str, ...]] = {
    "AICore(%)": ("aicore_pct",),
    "NPU Util(%)": ("npu_util_pct",),
    "Memory-Usage(MB)": ("memory_used_mb", "memory_total_mb"),
    "HBM-Usage(MB)": ("hbm_used_mb", "hbm_total_mb"),
}
_FLOAT_FIELDS = frozenset({"power_w"})

#: ``-t usages`` / ``-t common`` key -> DeviceReading field.
USAGE_FIELDS: dict[str, str] = {
    "Aicore Usage Rate(%)": "aicore_pct",
    "Aivector Usage Rate(%)": "vector_pct",
    "Aicpu Usage Rate(%)": "aicpu_pct",
    "Ctrlcpu Usage Rate(%)": "ctrlcpu_pct",
    "NPU Utilization(%)": "npu_util_pct",
    "HBM Bandwidth Usage Rate(%)": "memory_bandwidth_pct",
    "Memory Bandwidth Usage Rate(%)": "memory_bandwidth_pct",
}


class NpuSmiFormatError(AclmonError):
    """npu-smi printed something that holds no table (names what it printed)."""


@dataclass(frozen=True)
class InfoTable:
    """What one ``npu-smi info`` printed."""

    tool_version: str
    driver_version: str
    devices: tuple[DeviceReading, ...]
    #: None when this layout has no process section (310B prints none).
    processes: tuple[ProcessReading, ...] | None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class MappedChip:
    """One row of ``npu-smi info -m``."""

    npu_id: int
    chip_id: int
    #: None for the MCU rows (``-``).
    logic_id: int | None
    name: str


@dataclass
class _Warnings:
    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        if len(self.items) < MAX_WARNINGS and text not in self.items:
            self.items.append(text)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:120]
    return "(nothing)"


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [cell.strip() for cell in body.split("|")]


def _float(token: str) -> float:
    number = float(token)
    if not math.isfinite(number):
        raise ValueError(f"{token!r} is not a finite number")
    return number


def _int(token: str) -> int | None:
    """A whole number, or None for an unknown mark (ValueError for anything else)."""
    if token in _UNKNOWN:
        return None
    try:
        return int(token)
    except ValueError:
        return int(_float(token))


def _value(token: str, name: str) -> int | float | None:
    if token in _UNKNOWN:
        return None
    return _float(token) if name in _FLOAT_FIELDS else _int(token)


def _metric_values(
    cell: str, headers: list[str], table: dict[str, tuple[str, ...]]
) -> dict[str, int | float | None]:
    """Values of one metrics cell named by the header above it (ValueError if they do not fit)."""
    tokens = _PAIR.sub(r"\1/\2", cell).split()
    if len(tokens) != len(headers):
        raise ValueError(f"{len(tokens)} values under {len(headers)} headers")
    values: dict[str, int | float | None] = {}
    for header, token in zip(headers, tokens, strict=True):
        names = table.get(header, ())
        if len(names) == 2:
            used, sep, total = token.partition("/")
            if not sep:
                raise ValueError(f"{token!r} under {header} is not used/total")
            values[names[0]] = _value(used, names[0])
            values[names[1]] = _value(total, names[1])
        elif names:
            values[names[0]] = _value(token, names[0])
    return values


@dataclass
class _Layout:
    """What the header lines say about the rows under them."""

    row1_headers: list[str]
    row2_headers: list[str] = field(default_factory=list)
    #: "Phy-ID", "Device" or "" (the second id of row 2).
    second_id: str = ""
    #: Ascend 950: NPU ID and Name are separate cells and there is no chip column.
    split_name: bool = False


def parse_info(text: str) -> InfoTable:
    """Read ``npu-smi info`` output (any layout in docs/reference/npu_smi_dcmi.md)."""
    lines = text.splitlines()
    banner_at = next((i for i, line in enumerate(lines) if _BANNER.match(line.strip())), None)
    if banner_at is None:
        raise NpuSmiFormatError(f"no npu-smi info table in the output: {_first_line(text)!r}")
    banner = _BANNER.match(lines[banner_at].strip())
    assert banner is not None
    warnings = _Warnings()
    layout: _Layout | None = None
    expecting_header2 = False
    in_processes = False
    process_columns: dict[str, int] = {}
    process_has_chip = True
    devices: list[DeviceReading] = []
    processes: list[ProcessReading] | None = None
    row1: tuple[int, list[str]] | None = None

    for number, raw in enumerate(lines[banner_at + 1 :], start=banner_at + 2):
        line = raw.strip()
        if line.startswith("+"):
            if row1 is not None:
                warnings.add(f"line {row1[0]}: a device row without its second line")
                row1 = None
            continue
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        if any(cell.startswith("Process id") for cell in cells):
            in_processes, processes = True, []
            process_columns = _process_columns(cells)
            process_has_chip = "Chip" in cells[0]
            continue
        if in_processes:
            if processes is not None and not _NO_PROCESS.search(line):
                process = _process_row(cells, process_columns, process_has_chip)
                if process is None:
                    warnings.add(f"line {number}: not a process row: {line[:80]!r}")
                else:
                    processes.append(process)
            continue
        if "Health" in cells and cells[0].startswith("NPU"):
            layout = _Layout(
                row1_headers=_HEADER_SPLIT.split(cells[-1]),
                split_name=len(cells) >= 4 and cells[1] == "Name",
            )
            expecting_header2 = True
            continue
        if layout is None:
            continue
        if expecting_header2:
            layout.row2_headers = _HEADER_SPLIT.split(cells[-1])
            words = cells[0].split()
            layout.second_id = words[1] if len(words) > 1 else ""
            expecting_header2 = False
            continue
        if row1 is None:
            row1 = (number, cells)
            continue
        try:
            devices.append(_device(row1[1], cells, layout))
        except (ValueError, IndexError) as exc:
            warnings.add(f"line {row1[0]}: device row not read ({exc})")
        row1 = None

    if layout is None:
        raise NpuSmiFormatError("npu-smi info printed a banner but no device header")
    return InfoTable(
        tool_version=banner.group(1),
        driver_version=banner.group(2),
        devices=tuple(devices),
        processes=None if processes is None else tuple(processes),
        warnings=tuple(warnings.items),
    )


def _device(first: list[str], second: list[str], layout: _Layout) -> DeviceReading:
    if layout.split_name:
        npu_id = int(first[0])
        name: str | None = first[1] or None
        chip_id, second_id = 0, None
    else:
        words = first[0].split()
        npu_id = int(words[0])
        name = " ".join(words[1:]) or None
        chip_words = second[0].split()
        chip_id = int(chip_words[0])
        second_id = _int(chip_words[1]) if len(chip_words) > 1 else None
    values = _metric_values(first[-1], layout.row1_headers, _ROW1_FIELDS)
    values |= _metric_values(second[-1], layout.row2_headers, _ROW2_FIELDS)
    bus = second[-2]
    return DeviceReading(
        npu_id=npu_id,
        chip_id=chip_id,
        logic_id=second_id if layout.second_id == "Device" else None,
        phy_id=second_id if layout.second_id == "Phy-ID" else None,
        name=name,
        health=first[-2] or None,
        bus_id=None if bus in _UNKNOWN else bus,
        **values,  # type: ignore[arg-type]  # usage figures by field name, each int or None
    )


def _process_columns(cells: list[str]) -> dict[str, int]:
    columns: dict[str, int] = {}
    for index, cell in enumerate(cells):
        if cell == "Process id":
            columns["pid"] = index
        elif cell.startswith("Process id in container"):
            columns["container_pid"] = index
        elif cell.startswith("Process name"):
            columns["name"] = index
        elif cell.startswith("Process memory"):
            columns["memory"] = index
    return columns


def _process_row(
    cells: list[str], columns: dict[str, int], has_chip: bool
) -> ProcessReading | None:
    if "pid" not in columns or len(cells) <= max(columns.values()):
        return None
    try:
        ids = [int(word) for word in cells[0].split()]
        pid = int(cells[columns["pid"]])
        memory = _int(cells[columns["memory"]]) if "memory" in columns else None
        container = _int(cells[columns["container_pid"]]) if "container_pid" in columns else None
    except ValueError:
        return None
    if len(ids) != (2 if has_chip else 1):
        return None
    name = cells[columns["name"]] if "name" in columns else ""
    return ProcessReading(
        npu_id=ids[0],
        chip_id=ids[1] if has_chip else 0,
        pid=pid,
        name=name or None,
        memory_mb=memory,
        container_pid=container,
    )


# ---------------------------------------------------------------- -t TYPE -i CARD
def parse_key_values(text: str) -> list[dict[str, str]]:
    """``key : value`` lines in blocks (a blank line ends a block), in order."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        match = _KEY_VALUE.match(line)
        if match:
            current[match.group(1)] = match.group(2)
    if current:
        blocks.append(current)
    return blocks


def parse_chip_values(text: str) -> dict[int, dict[str, str]]:
    """``npu-smi info -t usages|common|power|temp|memory|health -i N``: chip id -> its keys.

    A chip's block is the block that holds its ``Chip ID`` (first or last, as the
    type prints it); the card block (``NPU ID``, ``Chip Count``) and the MCU's block
    (``Chip Name``) are not chips.
    """
    blocks = parse_key_values(text)
    if not any("NPU ID" in block for block in blocks):
        raise NpuSmiFormatError(f"no NPU ID in the output: {_first_line(text)!r}")
    chips: dict[int, dict[str, str]] = {}
    for block in blocks:
        chip = block.get("Chip ID")
        if chip is None or "Chip Name" in block:
            continue
        try:
            chips[int(chip)] = block
        except ValueError:
            continue
    return chips


def usage_values(block: dict[str, str]) -> dict[str, int | None]:
    """The DeviceReading fields a ``-t usages`` chip block gives."""
    values: dict[str, int | None] = {}
    for key, name in USAGE_FIELDS.items():
        if key in block and not (name in values and values[name] is not None):
            try:
                values[name] = _int(block[key].strip())
            except ValueError:
                values[name] = None
    return values


def parse_mapping(text: str) -> list[MappedChip]:
    """``npu-smi info -m``: each row's NPU ID, Chip ID, Chip Logic ID (``-`` for the MCU)
    and Chip Name, found by the header's names (Ascend 950 adds columns; a layout
    without a chip column has one chip per NPU)."""
    rows: list[MappedChip] = []
    columns: list[str] | None = None
    for line in text.splitlines():
        if "Chip Logic ID" in line:
            columns = _HEADER_SPLIT.split(line.strip())
            continue
        words = _HEADER_SPLIT.split(line.strip())
        if columns is None or len(words) != len(columns):
            continue
        row = dict(zip(columns, words, strict=True))
        try:
            rows.append(
                MappedChip(
                    npu_id=int(row["NPU ID"]),
                    chip_id=int(row.get("Chip ID", "0")),
                    logic_id=_int(row["Chip Logic ID"]),
                    name=row.get("Chip Name", ""),
                )
            )
        except (KeyError, ValueError):
            continue
    if columns is None:
        raise NpuSmiFormatError(f"no mapping table in the output: {_first_line(text)!r}")
    return rows


def with_logic_ids(
    devices: tuple[DeviceReading, ...], mapping: list[MappedChip]
) -> tuple[DeviceReading, ...]:
    """Devices with ``logic_id`` filled from ``-m`` where the table did not give it."""
    logic = {(row.npu_id, row.chip_id): row.logic_id for row in mapping}
    return tuple(
        device
        if device.logic_id is not None
        else replace(device, logic_id=logic.get((device.npu_id, device.chip_id)))
        for device in devices
    )
