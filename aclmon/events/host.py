"""What the host source reports: plain, immutable readings of every chip and process.

A :class:`HostSnapshot` is one refresh of the whole host through one back end. A
field the back end could not read is ``None`` (``null`` in JSON): unknown is never
shown as 0. Snapshots are plain values: the ``HostNpuSample`` event carries
``to_plain()``, and the store and a replay bring it back with ``from_plain()``,
which treats its input as hostile (it comes off the wire or out of a file).

The model lives with the events, not in :mod:`aclmon.host`, because it is the
payload of an event: the store folds it and must not import the host source.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

#: which back end read the host: the driver library, the command-line tool, or
#: the simulator's own DCMI (``aclmon top --sim``, the demo).
SourceName = Literal["dcmi", "npu-smi", "sim"]

SOURCE_NAMES: tuple[str, ...] = typing.get_args(SourceName)

#: ``ok``: every call answered; ``partial``: some values could not be read (see
#: ``message``); ``timeout``: the tool did not answer in time; ``failed``: it answered
#: with an error or output that could not be read; ``unavailable``: no DCMI library and
#: no npu-smi on this host.
SnapshotState = Literal["ok", "partial", "timeout", "failed", "unavailable"]
SNAPSHOT_STATES: tuple[str, ...] = typing.get_args(SnapshotState)

#: the most chips and processes one snapshot may hold (a real host: 32 chips, a few
#: hundred processes); a snapshot past these is refused, not cut
MAX_CHIPS = 1024
MAX_PROCESSES = 16_384
#: warnings per snapshot, fault codes per chip
MAX_WARNINGS = 64
MAX_FAULT_CODES = 64


@dataclass(frozen=True)
class DeviceReading:
    """One chip (a die of a dual-die card is a chip of its own), as the back end saw it."""

    #: the card id npu-smi shows in its NPU column (not always 0..n-1).
    npu_id: int
    #: the chip's index on its card.
    chip_id: int
    #: the id ACL and torch use for this chip (``Chip Logic ID``).
    logic_id: int | None = None
    #: the box-wide die id of dual-die cards (``Phy-ID``).
    phy_id: int | None = None
    name: str | None = None
    #: ``OK``, ``Warning``, ``Alarm``, ``Critical`` or ``UNKNOWN``, as npu-smi prints them.
    health: str | None = None
    power_w: float | None = None
    temp_c: int | None = None
    aicore_pct: int | None = None
    aicpu_pct: int | None = None
    vector_pct: int | None = None
    ctrlcpu_pct: int | None = None
    #: whole-NPU utilisation (Ascend 950 shows only this).
    npu_util_pct: int | None = None
    memory_bandwidth_pct: int | None = None
    hbm_used_mb: int | None = None
    hbm_total_mb: int | None = None
    #: the chip's DDR (310P/310B: its only memory).
    memory_used_mb: int | None = None
    memory_total_mb: int | None = None
    hugepages_used: int | None = None
    hugepages_total: int | None = None
    bus_id: str | None = None
    aicore_mhz: int | None = None
    aicore_max_mhz: int | None = None
    #: ECC error counts since the last reboot.
    ecc_single_bit: int | None = None
    ecc_double_bit: int | None = None
    #: the chip's current fault codes (empty: none; None: not readable).
    fault_codes: tuple[int, ...] | None = None

    @property
    def key(self) -> tuple[int, int]:
        return self.npu_id, self.chip_id


@dataclass(frozen=True)
class ProcessReading:
    """One process holding memory on one chip (a process on two chips is two readings)."""

    npu_id: int
    chip_id: int
    pid: int
    #: the short name (Linux ``comm``, at most 15 bytes; tools cut it further).
    name: str | None = None
    memory_mb: int | None = None
    #: the pid inside the process's container, where the tool says.
    container_pid: int | None = None
    user: str | None = None
    #: the full command line, from ``/proc/<pid>`` (None: not visible from here).
    command: str | None = None


@dataclass(frozen=True)
class HostSnapshot:
    #: None when no back end could be opened.
    source: SourceName | None
    state: SnapshotState
    #: what went wrong, in a line (None when state is ``ok``).
    message: str | None = None
    devices: tuple[DeviceReading, ...] = ()
    #: None when the back end cannot list processes (no section in this npu-smi
    #: layout, or DCMI's process call needs root).
    processes: tuple[ProcessReading, ...] | None = ()
    #: npu-smi's version line, or the DCMI library's path.
    version: str | None = None
    #: wall time of the refresh (``time.time_ns``) and how long it took.
    taken_ns: int = 0
    refresh_ms: float = 0.0
    #: per-value problems seen in this refresh (deduplicated, bounded).
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_plain(self) -> dict[str, Any]:
        """JSON-ready dict: the ``aclmon top --once --json`` object."""
        plain = asdict(self)
        plain["devices"] = list(plain["devices"])
        for device in plain["devices"]:
            if device["fault_codes"] is not None:
                device["fault_codes"] = list(device["fault_codes"])
        if plain["processes"] is not None:
            plain["processes"] = list(plain["processes"])
        plain["warnings"] = list(self.warnings)
        return plain

    @classmethod
    def from_plain(cls, data: Any) -> HostSnapshot:
        """The inverse of :meth:`to_plain`. ``data`` may come from anyone (an event,
        a file): every field is checked against its type, and a wrong one raises
        ``ValueError`` naming it. Keys this version does not know are ignored."""
        if not isinstance(data, dict):
            raise ValueError("a host snapshot is an object")
        source = data.get("source")
        if source is not None and source not in SOURCE_NAMES:
            raise ValueError(f"source {source!r} is not one of {', '.join(SOURCE_NAMES)}")
        state = data.get("state")
        if state not in SNAPSHOT_STATES:
            raise ValueError(f"state {state!r} is not one of {', '.join(SNAPSHOT_STATES)}")
        devices = _items(data.get("devices", ()), "devices", MAX_CHIPS)
        raw_processes = data.get("processes")
        processes = (
            None
            if raw_processes is None
            else tuple(
                _reading(ProcessReading, item)
                for item in _items(raw_processes, "processes", MAX_PROCESSES)
            )
        )
        warnings = _items(data.get("warnings", ()), "warnings", MAX_WARNINGS)
        if not all(isinstance(w, str) for w in warnings):
            raise ValueError("warnings: not all text")
        return cls(
            source=source,
            state=state,
            message=_value("message", data.get("message"), str | None),
            devices=tuple(_reading(DeviceReading, item) for item in devices),
            processes=processes,
            version=_value("version", data.get("version"), str | None),
            taken_ns=_value("taken_ns", data.get("taken_ns", 0), int),
            refresh_ms=_value("refresh_ms", data.get("refresh_ms", 0.0), float),
            warnings=tuple(warnings),
        )

    def device(self, npu_id: int, chip_id: int) -> DeviceReading | None:
        for reading in self.devices:
            if reading.npu_id == npu_id and reading.chip_id == chip_id:
                return reading
        return None

    def processes_of(self, pid: int) -> tuple[ProcessReading, ...]:
        """Where one process is (``aclmon watch PID``): its reading on each chip."""
        return tuple(p for p in self.processes or () if p.pid == pid)


def _items(value: Any, what: str, limit: int) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{what}: not a list")
    if len(value) > limit:
        raise ValueError(f"{what}: {len(value)} items, more than {limit}")
    return tuple(value)


def _value(name: str, value: Any, annotation: Any) -> Any:
    """``value`` if it is of the annotated type (an int for a float; a list of ints
    for a tuple of them, as a tuple), else ``ValueError``."""
    options = typing.get_args(annotation) if typing.get_origin(annotation) in _UNIONS else ()
    if options:
        if value is None and type(None) in options:
            return None
        annotation = next(a for a in options if a is not type(None))
    if annotation is float and type(value) in (int, float) and math.isfinite(value):
        return float(value)
    if annotation in (int, str) and type(value) is annotation:
        return value
    if (
        typing.get_origin(annotation) is tuple
        and isinstance(value, (list, tuple))
        and len(value) <= MAX_FAULT_CODES
        and all(type(v) is int for v in value)
    ):
        return tuple(value)
    wanted = getattr(annotation, "__name__", str(annotation))
    raise ValueError(f"{name}: {type(value).__name__} {str(value)[:40]!r} where {wanted} belongs")


_UNIONS = (typing.Union, type(int | None))
_HINTS: dict[type, dict[str, Any]] = {}


def _reading(cls: type[Any], item: Any) -> Any:
    if not isinstance(item, dict):
        raise ValueError(f"{cls.__name__}: not an object")
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    values = {}
    for f in fields(cls):
        if f.name in item:
            values[f.name] = _value(f"{cls.__name__}.{f.name}", item[f.name], hints[f.name])
        elif f.default is dataclasses.MISSING:
            raise ValueError(f"{cls.__name__}: no {f.name}")
    return cls(**values)
