"""The simulated host as its driver sees it: cards, chips, their sensors, processes.

Built from the sim config (device count, SoC, memory size) and the records the
sim jobs publish (:mod:`aclmon.sim.driver`). Both the simulated ``npu-smi`` and
the simulated DCMI read a :class:`MachineView`, so the two back ends of the host
source see the same host.

The SoC decides the product and its layout: ``Ascend910B*`` one chip per card
(Atlas A2), ``Ascend910_93*`` two dies per card (Atlas A3), ``Ascend310P*`` two
chips per card without HBM (Atlas 300I Duo), ``Ascend310B*`` an Atlas 200I A2
board (no HBM, no PCIe bus id). Power and temperature follow utilisation, with a
fixed offset per chip so a box does not look cloned; they do not drift with time,
so two readings of an idle machine agree.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from aclmon.sim.config import SimConfig
from aclmon.sim.driver import JobRecord, driver_reserved_bytes

MIB = 1 << 20


@dataclass(frozen=True)
class ChipKind:
    """What a product looks like to npu-smi and DCMI."""

    #: the sim npu-smi table layout (aclmon.sim.npu_smi.LAYOUTS).
    layout: str
    #: the Name column of npu-smi info (for "Ascend910B*" SoCs: the SoC name minus "Ascend").
    name: str
    chips_per_card: int
    has_hbm: bool
    #: watts at rest and at full load; None: the board does not report power (310P).
    idle_power_w: float | None
    full_power_w: float
    #: only die 0 reports power, for the whole card (A3).
    card_power_on_die0: bool
    idle_temp_c: int
    aicore_max_mhz: int
    aicore_idle_mhz: int
    hbm_mhz: int
    #: PCIe bus numbers by card, or by die where each die has its own (A3); None: no
    #: PCIe (the board is the host).
    buses: tuple[int, ...] | None
    bus_per_die: bool
    hugepages: int
    #: npu-smi info -t usages reports vector and whole-NPU use (not the 310 family).
    has_vector: bool


_A2_BUSES = (0xC1, 0xC2, 0x81, 0x82, 0x01, 0x02, 0x41, 0x42)
_A3_BUSES = (
    0x9D,
    0x9F,
    0x99,
    0x9B,
    0x95,
    0x97,
    0x91,
    0x93,
    0x8D,
    0x8F,
    0x89,
    0x8B,
    0x85,
    0x87,
    0x81,
    0x83,
)


def chip_kind(soc_name: str) -> ChipKind:
    """The product a sim config's ``soc_name`` stands for."""
    short = soc_name.removeprefix("Ascend") or soc_name
    if soc_name.startswith("Ascend910_93"):
        return ChipKind(
            layout="a3", name="Ascend910", chips_per_card=2, has_hbm=True,
            idle_power_w=165.0, full_power_w=610.0, card_power_on_die0=True,
            idle_temp_c=31, aicore_max_mhz=1800, aicore_idle_mhz=800, hbm_mhz=1600,
            buses=_A3_BUSES, bus_per_die=True, hugepages=0, has_vector=True,
        )  # fmt: skip
    if soc_name.startswith("Ascend310P"):
        return ChipKind(
            layout="310p", name=short, chips_per_card=2, has_hbm=False,
            idle_power_w=None, full_power_w=0.0, card_power_on_die0=False,
            idle_temp_c=40, aicore_max_mhz=1080, aicore_idle_mhz=1080, hbm_mhz=0,
            buses=(0x01, 0x02, 0x03, 0x04, 0x81, 0x82, 0x83, 0x84), bus_per_die=False, hugepages=0,
            has_vector=False,
        )  # fmt: skip
    if soc_name.startswith("Ascend310B"):
        return ChipKind(
            layout="310b", name=short, chips_per_card=1, has_hbm=False,
            idle_power_w=7.7, full_power_w=20.0, card_power_on_die0=False,
            idle_temp_c=54, aicore_max_mhz=1000, aicore_idle_mhz=1000, hbm_mhz=0,
            buses=None, bus_per_die=False, hugepages=15, has_vector=False,
        )  # fmt: skip
    return ChipKind(
        layout="a2", name=short, chips_per_card=1, has_hbm=True,
        idle_power_w=90.0, full_power_w=310.0, card_power_on_die0=False,
        idle_temp_c=32, aicore_max_mhz=1800, aicore_idle_mhz=800, hbm_mhz=1600,
        buses=_A2_BUSES, bus_per_die=False, hugepages=0, has_vector=True,
    )  # fmt: skip


@dataclass(frozen=True)
class ChipState:
    """One chip now. ``None`` is what the product does not report."""

    npu_id: int
    chip_id: int
    logic_id: int
    phy_id: int
    name: str
    health: str
    bus: tuple[int, int, int, int] | None
    power_w: float | None
    temp_c: int
    aicore_pct: int
    vector_pct: int | None
    aicpu_pct: int
    ctrlcpu_pct: int
    npu_util_pct: int | None
    bandwidth_pct: int
    hbm_used_mb: int | None
    hbm_total_mb: int | None
    #: the DDR: 0 / 0 on HBM products; the only memory of the 310 family.
    memory_used_mb: int
    memory_total_mb: int
    hugepages_used: int
    hugepages_total: int
    aicore_mhz: int
    aicore_max_mhz: int
    hbm_mhz: int

    @property
    def bus_id(self) -> str | None:
        if self.bus is None:
            return None
        domain, bus, device, function = self.bus
        return f"{domain:04X}:{bus:02X}:{device:02X}.{function:X}"


@dataclass(frozen=True)
class ProcessState:
    npu_id: int
    chip_id: int
    pid: int
    name: str
    memory_bytes: int

    @property
    def memory_mb(self) -> int:
        return self.memory_bytes // MIB


@dataclass(frozen=True)
class MachineView:
    kind: ChipKind
    chips: tuple[ChipState, ...]
    processes: tuple[ProcessState, ...]

    def card_ids(self) -> list[int]:
        return sorted({chip.npu_id for chip in self.chips})

    def chips_of(self, npu_id: int) -> list[ChipState]:
        return [chip for chip in self.chips if chip.npu_id == npu_id]

    def chip(self, npu_id: int, chip_id: int) -> ChipState | None:
        for chip in self.chips:
            if chip.npu_id == npu_id and chip.chip_id == chip_id:
                return chip
        return None


def _load(uses: list[tuple[int, int, int]]) -> tuple[int, int, int]:
    """Summed (cube, vector, aicpu) percent of the processes on one chip, capped at 100."""
    cube, vector, aicpu = (min(100, sum(use[i] for use in uses)) for i in range(3))
    return cube, vector, aicpu


def machine_view(config: SimConfig, jobs: list[JobRecord]) -> MachineView:
    """The host now: ``config`` says what hardware, ``jobs`` who uses it."""
    kind = chip_kind(config.soc_name)
    count = config.device_count
    memory: dict[int, int] = {}
    load: dict[int, list[tuple[int, int, int]]] = {}
    holders: dict[int, int] = {}
    per_process: list[tuple[int, JobRecord, int]] = []
    for job in jobs:
        for use in job.devices:
            if use.device_id >= count:
                continue
            memory[use.device_id] = memory.get(use.device_id, 0) + use.memory_bytes
            load.setdefault(use.device_id, []).append((use.cube_pct, use.vector_pct, use.aicpu_pct))
            holders[use.device_id] = holders.get(use.device_id, 0) + 1
            per_process.append((use.device_id, job, use.memory_bytes))
    chips = []
    for device in range(count):
        cube, vector, aicpu = _load(load.get(device, []))
        busy = max(cube, vector)
        chips.append(_chip(kind, config, device, cube, vector, aicpu, busy, memory, holders))
    if kind.card_power_on_die0:
        chips = _card_power(chips, kind)
    processes = tuple(
        sorted(
            (
                ProcessState(
                    npu_id=device // kind.chips_per_card,
                    chip_id=device % kind.chips_per_card,
                    pid=job.pid,
                    name=job.name,
                    memory_bytes=used,
                )
                for device, job, used in per_process
            ),
            key=lambda p: (p.npu_id, p.chip_id, p.pid),
        )
    )
    return MachineView(kind=kind, chips=tuple(chips), processes=processes)


def _chip(
    kind: ChipKind,
    config: SimConfig,
    device: int,
    cube: int,
    vector: int,
    aicpu: int,
    busy: int,
    memory: dict[int, int],
    holders: dict[int, int],
) -> ChipState:
    npu_id, chip_id = divmod(device, kind.chips_per_card)
    # A fixed spread per chip (-6..+6), so eight chips do not read alike.
    spread = (device * 37) % 13 - 6
    power = None
    if kind.idle_power_w is not None:
        range_w = kind.full_power_w - kind.idle_power_w
        power = round(kind.idle_power_w + range_w * busy / 100 + spread * 0.7, 1)
    used = memory.get(device, 0)
    total_mb = config.hbm_bytes // MIB
    used_mb = min(total_mb, (driver_reserved_bytes(config.hbm_bytes) + used) // MIB)
    bus = None
    if kind.buses is not None:
        slot = device if kind.bus_per_die else npu_id
        number = kind.buses[slot] if slot < len(kind.buses) else (0x10 + slot) & 0xFF
        bus = (0, number, 0, 0)
    return ChipState(
        npu_id=npu_id,
        chip_id=chip_id,
        logic_id=device,
        phy_id=device,
        name=kind.name,
        health="OK",
        bus=bus,
        power_w=power,
        temp_c=kind.idle_temp_c + (device * 5) % 7 + busy * 3 // 10,
        aicore_pct=cube,
        vector_pct=vector if kind.has_vector else None,
        aicpu_pct=aicpu,
        ctrlcpu_pct=min(100, 3 + 2 * holders.get(device, 0)),
        npu_util_pct=busy if kind.has_vector else None,
        bandwidth_pct=min(100, (cube + vector) // 3),
        hbm_used_mb=used_mb if kind.has_hbm else None,
        hbm_total_mb=total_mb if kind.has_hbm else None,
        memory_used_mb=0 if kind.has_hbm else used_mb,
        memory_total_mb=0 if kind.has_hbm else total_mb,
        hugepages_used=kind.hugepages,
        hugepages_total=kind.hugepages,
        aicore_mhz=kind.aicore_max_mhz if busy else kind.aicore_idle_mhz,
        aicore_max_mhz=kind.aicore_max_mhz,
        hbm_mhz=kind.hbm_mhz,
    )


def _card_power(chips: list[ChipState], kind: ChipKind) -> list[ChipState]:
    """Dual-die cards: die 0 reports the card's power (both dies' load), die 1 none."""
    assert kind.idle_power_w is not None
    result = []
    for chip in chips:
        if chip.chip_id != 0:
            result.append(replace(chip, power_w=None))
            continue
        dies = [c for c in chips if c.npu_id == chip.npu_id]
        busy = sum(max(c.aicore_pct, c.vector_pct or 0) for c in dies) / len(dies)
        spread = (chip.npu_id * 37) % 13 - 6
        range_w = kind.full_power_w - kind.idle_power_w
        result.append(
            replace(chip, power_w=round(kind.idle_power_w + range_w * busy / 100 + spread, 1))
        )
    return result
