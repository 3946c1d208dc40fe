"""The simulated host behind the DCMI calls: a stand-in for ``libdcmi.so``.

:class:`FakeDcmi` has every function of :data:`aclmon.dcmi_abi.FUNCTIONS` as a
real C function pointer (a ctypes callback with the C signature), so the host
source's DCMI back end runs exactly the code it runs against the driver's
library: the same argument types, struct layouts, out-pointers and return codes.
Nothing is compiled: the demo works on any machine that runs Python.

What it answers is the machine view (:mod:`aclmon.sim.machine`) the simulated
``npu-smi`` prints, re-read at most every ``cache_s`` seconds, so both back ends
report the same host.

To load it the way a real library is loaded (``ctypes.CDLL(path)``), build the
trampoline library: :func:`trampoline_source` is C that exports each ``dcmi_*``
symbol and forwards it to a pointer :meth:`FakeDcmi.bind` sets. It needs a C
compiler, so it is for tests of the loading path, not for the demo.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

from aclmon import dcmi_abi as abi
from aclmon.sim.config import SimConfig, load_config
from aclmon.sim.driver import read_jobs
from aclmon.sim.machine import ChipState, MachineView, machine_view

#: PCI ids the simulated cards report (Huawei's vendor id; 910B3's device id).
PCI_VENDOR_ID = 0x19E5
PCI_DEVICE_ID = 0xD802
HUGEPAGE_KB = 2048


def _zeroed(info: Any) -> Any:
    """The caller's out-structure with every byte zeroed, so that the fields this
    call does not set read 0."""
    target = info.contents
    ctypes.memset(ctypes.addressof(target), 0, ctypes.sizeof(target))
    return target


def _write_text(array: Any, text: str) -> None:
    data = text.encode()[: len(array) - 1]
    ctypes.memmove(ctypes.addressof(array), data, len(data))


class FakeDcmi:
    """Attributes named ``dcmi_*`` are C-callable functions answering for the sim host."""

    def __init__(
        self,
        view: Callable[[], MachineView] | None = None,
        *,
        config: SimConfig | None = None,
        cache_s: float = 0.5,
        hbm_in_kb: bool = False,
        delay_s: float = 0.0,
    ) -> None:
        self._config = load_config() if config is None else config
        self._read_view = view or (lambda: machine_view(self._config, read_jobs()))
        self._cache_s = cache_s
        self._view: MachineView | None = None
        self._view_at = 0.0
        #: answer HBM sizes in KB, as the driver's older call did (tests the host's guard).
        self.hbm_in_kb = hbm_in_kb
        #: seconds every call takes (tests a slow or hung driver).
        self.delay_s = delay_s
        self.calls = 0
        for name in abi.FUNCTIONS:
            implementation = getattr(self, "_" + name.removeprefix("dcmi_"))
            setattr(self, name, abi.prototype(name)(self._guarded(implementation)))

    def _guarded(self, implementation: Callable[..., int]) -> Callable[..., int]:
        def call(*args: Any) -> int:
            self.calls += 1
            if self.delay_s:
                time.sleep(self.delay_s)
            try:
                return implementation(*args)
            except Exception:  # an exception must never cross into C
                return abi.DCMI_ERR_CODE_INNER_ERR

        return call

    def bind(self, library: ctypes.CDLL) -> None:
        """Point a loaded trampoline library (:func:`trampoline_source`) at these functions."""
        bind = library.aclmon_fake_dcmi_bind
        bind.argtypes = (ctypes.c_char_p, ctypes.c_void_p)
        bind.restype = ctypes.c_int
        for name in abi.FUNCTIONS:
            pointer = ctypes.cast(getattr(self, name), ctypes.c_void_p)
            if bind(name.encode(), pointer) != 0:
                raise ValueError(f"the trampoline has no {name}")

    # ------------------------------------------------------------ the machine
    def view(self) -> MachineView:
        now = time.monotonic()
        if self._view is None or now - self._view_at >= self._cache_s:
            self._view, self._view_at = self._read_view(), now
        return self._view

    def _chip(self, card: int, device: int) -> ChipState | None:
        return self.view().chip(card, device)

    # ------------------------------------------------------------ topology
    def _init(self) -> int:
        return abi.DCMI_OK

    def _get_card_list(self, count: Any, cards: Any, length: int) -> int:
        ids = self.view().card_ids()[: max(0, length)]
        for index, card in enumerate(ids):
            cards[index] = card
        count[0] = len(ids)
        return abi.DCMI_OK

    def _get_device_num_in_card(self, card: int, count: Any) -> int:
        chips = self.view().chips_of(card)
        if not chips:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        count[0] = len(chips)
        return abi.DCMI_OK

    def _get_device_type(self, card: int, device: int, kind: Any) -> int:
        chips = self.view().chips_of(card)
        if not chips or not 0 <= device <= len(chips):
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        kind[0] = abi.NPU_TYPE if device < len(chips) else abi.MCU_TYPE
        return abi.DCMI_OK

    def _get_device_logic_id(self, logic: Any, card: int, device: int) -> int:
        chip = self._chip(card, device)
        if chip is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        logic[0] = chip.logic_id
        return abi.DCMI_OK

    def _get_device_phyid_from_logicid(self, logic: int, phy: Any) -> int:
        for chip in self.view().chips:
            if chip.logic_id == logic:
                phy[0] = chip.phy_id
                return abi.DCMI_OK
        return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID

    def _get_device_chip_info(self, card: int, device: int, info: Any) -> int:
        chip = self._chip(card, device)
        if chip is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        target = _zeroed(info)
        _write_text(target.chip_type, "Ascend")
        _write_text(target.chip_name, chip.name)
        _write_text(target.chip_ver, "V1")
        target.aicore_cnt = self._config.ai_core_count
        return abi.DCMI_OK

    def _get_device_pcie_info_v2(self, card: int, device: int, info: Any) -> int:
        chip = self._chip(card, device)
        if chip is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        if chip.bus is None:
            return abi.DCMI_ERR_CODE_NOT_SUPPORT
        target = info.contents
        target.venderid, target.deviceid = PCI_VENDOR_ID, PCI_DEVICE_ID
        target.subvenderid, target.subdeviceid = PCI_VENDOR_ID, 0x0100
        target.domain, target.bdf_busid, target.bdf_deviceid, target.bdf_funcid = chip.bus
        return abi.DCMI_OK

    # ------------------------------------------------------------ sensors
    def _answer(self, card: int, device: int, out: Any, value: int | None) -> int:
        if self._chip(card, device) is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        if value is None:
            return abi.DCMI_ERR_CODE_NOT_SUPPORT
        out[0] = value
        return abi.DCMI_OK

    def _value(self, card: int, device: int, read: Callable[[ChipState], int | None]) -> int | None:
        chip = self._chip(card, device)
        return None if chip is None else read(chip)

    def _get_device_health(self, card: int, device: int, health: Any) -> int:
        names = {name: code for code, name in abi.HEALTH_NAMES.items()}
        value = self._value(card, device, lambda c: names.get(c.health, abi.HEALTH_ABSENT))
        return self._answer(card, device, health, value)

    def _get_device_errorcode_v2(
        self, card: int, device: int, count: Any, codes: Any, length: int
    ) -> int:
        if self._chip(card, device) is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        count[0] = 0  # the simulated chips raise no alarms
        return abi.DCMI_OK

    def _get_device_temperature(self, card: int, device: int, temp: Any) -> int:
        return self._answer(card, device, temp, self._value(card, device, lambda c: c.temp_c))

    def _get_device_power_info(self, card: int, device: int, power: Any) -> int:
        def tenths(chip: ChipState) -> int | None:
            if chip.power_w is None:
                return None
            return round(chip.power_w * abi.POWER_UNITS_PER_WATT)

        return self._answer(card, device, power, self._value(card, device, tenths))

    def _get_device_frequency(self, card: int, device: int, kind: int, mhz: Any) -> int:
        readers: dict[int, Callable[[ChipState], int | None]] = {
            abi.DCMI_FREQ_AICORE_CURRENT: lambda c: c.aicore_mhz,
            abi.DCMI_FREQ_AICORE_MAX: lambda c: c.aicore_max_mhz,
        }
        reader = readers.get(kind, lambda c: None)
        return self._answer(card, device, mhz, self._value(card, device, reader))

    def _get_device_utilization_rate(self, card: int, device: int, kind: int, rate: Any) -> int:
        hbm = self.view().kind.has_hbm
        readers: dict[int, Callable[[ChipState], int | None]] = {
            abi.UTIL_AICORE: lambda c: c.aicore_pct,
            abi.UTIL_AICPU: lambda c: c.aicpu_pct,
            abi.UTIL_CTRLCPU: lambda c: c.ctrlcpu_pct,
            abi.UTIL_VECTORCORE: lambda c: c.vector_pct,
            abi.UTIL_NPU: lambda c: c.npu_util_pct,
            abi.UTIL_HBM_BANDWIDTH: lambda c: c.bandwidth_pct if hbm else None,
            abi.UTIL_MEMORY_BANDWIDTH: lambda c: 0 if hbm else c.bandwidth_pct,
        }
        reader = readers.get(kind, lambda c: None)
        return self._answer(card, device, rate, self._value(card, device, reader))

    # ------------------------------------------------------------ memory
    def _get_device_hbm_info(self, card: int, device: int, info: Any) -> int:
        chip = self._chip(card, device)
        if chip is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        if chip.hbm_total_mb is None or chip.hbm_used_mb is None:
            return abi.DCMI_ERR_CODE_NOT_SUPPORT
        scale = 1024 if self.hbm_in_kb else 1
        target = info.contents
        target.memory_size = chip.hbm_total_mb * scale
        target.memory_usage = chip.hbm_used_mb * scale
        target.freq, target.temp = chip.hbm_mhz, chip.temp_c - 2
        target.bandwith_util_rate = chip.bandwidth_pct
        return abi.DCMI_OK

    def _get_device_memory_info_v3(self, card: int, device: int, info: Any) -> int:
        chip = self._chip(card, device)
        if chip is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        target = _zeroed(info)
        target.memory_size = chip.memory_total_mb
        target.memory_available = chip.memory_total_mb - chip.memory_used_mb
        target.freq = 0 if self.view().kind.has_hbm else 3200
        target.hugepagesize = HUGEPAGE_KB
        target.hugepages_total = chip.hugepages_total
        target.hugepages_free = chip.hugepages_total - chip.hugepages_used
        target.utiliza = (
            chip.memory_used_mb * 100 // chip.memory_total_mb if chip.memory_total_mb else 0
        )
        return abi.DCMI_OK

    def _get_device_ecc_info(self, card: int, device: int, kind: int, info: Any) -> int:
        if self._chip(card, device) is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        target = _zeroed(info)
        target.enable_flag = 1
        return abi.DCMI_OK

    def _get_device_resource_info(self, card: int, device: int, entries: Any, count: Any) -> int:
        if self._chip(card, device) is None:
            return abi.DCMI_ERR_CODE_INVALID_DEVICE_ID
        held = [
            process
            for process in self.view().processes
            if (process.npu_id, process.chip_id) == (card, device)
        ][: abi.MAX_PROC_NUM]
        for index, process in enumerate(held):
            entries[index].proc_id = process.pid
            entries[index].proc_mem_usage = process.memory_bytes
        count[0] = len(held)
        return abi.DCMI_OK


# ---------------------------------------------------------------- trampoline
def _c_type(argtype: type) -> str:
    if argtype in (ctypes.c_int,):
        return "int"
    if argtype in (ctypes.c_uint,):
        return "unsigned int"
    return "void *"


def trampoline_source() -> str:
    """C for a ``libdcmi.so`` whose ``dcmi_*`` symbols forward to bound function pointers.

    Unbound calls answer DCMI_ERR_CODE_INNER_ERR. ``aclmon_fake_dcmi_bind(name,
    pointer)`` binds one; it returns -1 for a name the library does not have.
    """
    parts = ["#include <string.h>", ""]
    binds = []
    for name, argtypes in abi.FUNCTIONS.items():
        params = [f"{_c_type(t)} a{i}" for i, t in enumerate(argtypes)]
        args = ", ".join(f"a{i}" for i in range(len(argtypes)))
        signature = ", ".join(params) or "void"
        parts += [
            f"typedef int (*{name}_fn)({signature});",
            f"static {name}_fn {name}_ptr;",
            f"int {name}({signature}) {{",
            f"    return {name}_ptr ? {name}_ptr({args}) : {abi.DCMI_ERR_CODE_INNER_ERR};",
            "}",
            "",
        ]
        binds.append(
            f'    if (strcmp(name, "{name}") == 0) {{ {name}_ptr = ({name}_fn)fn; return 0; }}'
        )
    parts += [
        "int aclmon_fake_dcmi_bind(const char *name, void *fn) {",
        *binds,
        "    return -1;",
        "}",
        "",
    ]
    return "\n".join(parts)
