"""What the host source reports: plain, immutable readings of every chip and process.

A :class:`HostSnapshot` is one refresh of the whole host through one back end. A
field the back end could not read is ``None`` (``null`` in JSON): unknown is never
shown as 0. Snapshots are plain values, so a store can fold them, an event can
carry ``to_plain()`` and a recording can bring them back with ``from_plain()``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

#: which back end read the host: the driver library, the command-line tool, or
#: the simulator's own DCMI (``aclmon top --sim``, the demo).
SourceName = Literal["dcmi", "npu-smi", "sim"]

#: ``ok``: every call answered; ``partial``: some values could not be read (see
#: ``message``); ``timeout``: the tool did not answer in time; ``failed``: it answered
#: with an error or output that could not be read; ``unavailable``: no DCMI library and
#: no npu-smi on this host.
SnapshotState = Literal["ok", "partial", "timeout", "failed", "unavailable"]


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
    def from_plain(cls, data: dict[str, Any]) -> HostSnapshot:
        """The inverse of :meth:`to_plain` (a recording or event carrying a snapshot)."""
        devices = tuple(_reading(DeviceReading, item) for item in data.get("devices", ()))
        raw_processes = data.get("processes")
        processes = (
            None
            if raw_processes is None
            else tuple(_reading(ProcessReading, item) for item in raw_processes)
        )
        return cls(
            source=data["source"],
            state=data["state"],
            message=data.get("message"),
            devices=devices,
            processes=processes,
            version=data.get("version"),
            taken_ns=int(data.get("taken_ns", 0)),
            refresh_ms=float(data.get("refresh_ms", 0.0)),
            warnings=tuple(data.get("warnings", ())),
        )

    def device(self, npu_id: int, chip_id: int) -> DeviceReading | None:
        for reading in self.devices:
            if reading.npu_id == npu_id and reading.chip_id == chip_id:
                return reading
        return None

    def processes_of(self, pid: int) -> tuple[ProcessReading, ...]:
        """Where one process is (``aclmon watch PID``): its reading on each chip."""
        return tuple(p for p in self.processes or () if p.pid == pid)


def _reading(cls: type[Any], item: dict[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
    values = {k: v for k, v in item.items() if k in known}
    if values.get("fault_codes") is not None:
        values["fault_codes"] = tuple(values["fault_codes"])
    return cls(**values)
