"""The DCMI back end: the host read through the driver's ``libdcmi.so`` with ctypes.

One ``dcmi_init``; the cards, their chips and what does not change (name, ACL
device id, die id, PCIe address) are read once; every refresh then asks each
chip for health, temperature, power, utilisation, HBM and DDR, frequency, ECC,
current fault codes and processes. A call the library lacks (older drivers) or
answers with "not supported" leaves its field unknown; any other error does too,
and is named in the snapshot's warnings.

The back end takes any object with the DCMI functions as attributes: a loaded
``ctypes.CDLL`` on a real host, the simulator's :class:`aclmon.sim.dcmi.FakeDcmi`
elsewhere. Where the library is: ``ACLMON_DCMI_LIBRARY``, the driver's install
directories, ``LD_LIBRARY_PATH``, then the linker cache.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aclmon import dcmi_abi as abi
from aclmon.errors import AclmonError
from aclmon.events.host import DeviceReading, HostSnapshot, ProcessReading, SourceName
from aclmon.host.npusmi_text import MAX_WARNINGS
from aclmon.host.processes import complete

DCMI_ENV = "ACLMON_DCMI_LIBRARY"
LIBRARY_NAME = "libdcmi.so"
INSTALL_DIRS = (
    "/usr/local/dcmi",
    "/usr/local/Ascend/driver/lib64",
    "/usr/local/Ascend/driver/lib64/driver",
    "/usr/local/Ascend/driver/lib64/common",
)
MIB = 1 << 20
#: above this many "MB" of HBM the library must be counting KB (an old driver):
#: no chip has a terabyte of HBM.
_HBM_MB_LIMIT = 1 << 20


class DcmiUnavailable(AclmonError):
    """No usable DCMI library here (not installed, not loadable, or dcmi_init failed)."""


def find_dcmi_library(env: Mapping[str, str] | None = None) -> str | None:
    """The path of libdcmi.so on this host, or None."""
    env = os.environ if env is None else env
    configured = env.get(DCMI_ENV, "").strip()
    if configured:
        return configured
    dirs = [*INSTALL_DIRS, *env.get("LD_LIBRARY_PATH", "").split(os.pathsep)]
    for directory in dirs:
        candidate = os.path.join(directory, LIBRARY_NAME) if directory else ""
        if candidate and os.path.isfile(candidate):
            return candidate
    return ctypes.util.find_library("dcmi")


class DcmiLibrary:
    """The DCMI calls with their C signatures; a missing symbol answers "not supported"."""

    def __init__(self, library: Any) -> None:
        self._functions: dict[str, Any] = {}
        for name, argtypes in abi.FUNCTIONS.items():
            try:
                function = getattr(library, name)
            except AttributeError:
                continue
            function.argtypes = argtypes
            function.restype = ctypes.c_int
            self._functions[name] = function

    def call(self, name: str, *args: Any) -> int:
        function = self._functions.get(name)
        if function is None:
            return abi.DCMI_ERR_CODE_NOT_SUPPORT
        return int(function(*args))


@dataclass(frozen=True)
class _Chip:
    """What is read once per chip."""

    card: int
    device: int
    name: str | None
    logic_id: int | None
    phy_id: int | None
    bus_id: str | None


class _Calls:
    """One refresh's calls: values on success, None otherwise, problems collected."""

    def __init__(self, library: DcmiLibrary) -> None:
        self.library = library
        self.warnings: list[str] = []

    def ok(self, name: str, where: str, *args: Any) -> bool:
        code = self.library.call(name, *args)
        if code == abi.DCMI_OK:
            return True
        if code != abi.DCMI_ERR_CODE_NOT_SUPPORT and len(self.warnings) < MAX_WARNINGS:
            text = f"{name}({where}): {abi.error_text(code)}"
            if text not in self.warnings:
                self.warnings.append(text)
        return False

    def int_out(self, name: str, where: str, *args: Any) -> int | None:
        value = ctypes.c_int()
        return value.value if self.ok(name, where, *args, ctypes.byref(value)) else None

    def uint_out(self, name: str, where: str, *args: Any) -> int | None:
        value = ctypes.c_uint()
        return value.value if self.ok(name, where, *args, ctypes.byref(value)) else None


class DcmiBackend:
    """Reads the host through DCMI; one :meth:`refresh` is one snapshot."""

    def __init__(self, library: Any, *, source: SourceName = "dcmi", version: str | None = None):
        self.source: SourceName = source
        self.version = version
        self._library = DcmiLibrary(library)
        code = self._library.call("dcmi_init")
        if code != abi.DCMI_OK:
            raise DcmiUnavailable(f"dcmi_init failed: {abi.error_text(code)}")
        self._chips: list[_Chip] | None = None

    @classmethod
    def load(cls, path: str) -> DcmiBackend:
        try:
            library = ctypes.CDLL(path)
        except OSError as exc:
            raise DcmiUnavailable(f"cannot load {path}: {exc}") from None
        return cls(library, version=path)

    def close(self) -> None:
        """DCMI has no call to end a session; the library stays loaded."""

    # ------------------------------------------------------------ topology
    def _discover(self, calls: _Calls) -> list[_Chip]:
        count = ctypes.c_int()
        card_ids = (ctypes.c_int * abi.MAX_CARD_NUM)()
        if not calls.ok("dcmi_get_card_list", "", ctypes.byref(count), card_ids, abi.MAX_CARD_NUM):
            return []
        chips = []
        for card in list(card_ids)[: max(0, min(count.value, abi.MAX_CARD_NUM))]:
            where = f"card {card}"
            in_card = calls.int_out("dcmi_get_device_num_in_card", where, card) or 0
            for device in range(in_card):
                kind = calls.int_out(
                    "dcmi_get_device_type", f"{where}, chip {device}", card, device
                )
                if kind is not None and kind != abi.NPU_TYPE:
                    continue
                chips.append(self._chip(calls, card, device))
        return chips

    def _chip(self, calls: _Calls, card: int, device: int) -> _Chip:
        where = f"card {card}, chip {device}"
        info = abi.DcmiChipInfo()
        name = None
        if calls.ok("dcmi_get_device_chip_info", where, card, device, ctypes.byref(info)):
            name = bytes(info.chip_name).split(b"\0", 1)[0].decode("ascii", "replace") or None
        logic = ctypes.c_int()
        logic_id = None
        if calls.ok("dcmi_get_device_logic_id", where, ctypes.byref(logic), card, device):
            logic_id = logic.value
        phy_id = None
        if logic_id is not None:
            phy_id = calls.uint_out("dcmi_get_device_phyid_from_logicid", where, logic_id)
        pcie = abi.DcmiPcieInfoAll()
        bus_id = None
        if calls.ok("dcmi_get_device_pcie_info_v2", where, card, device, ctypes.byref(pcie)):
            bus_id = (
                f"{pcie.domain & 0xFFFF:04X}:{pcie.bdf_busid & 0xFF:02X}:"
                f"{pcie.bdf_deviceid & 0x1F:02X}.{pcie.bdf_funcid & 0x7:X}"
            )
        return _Chip(card, device, name, logic_id, phy_id, bus_id)

    # ------------------------------------------------------------ refresh
    def refresh(self) -> HostSnapshot:
        started = time.monotonic()
        taken_ns = time.time_ns()
        calls = _Calls(self._library)
        if self._chips is None:
            chips = self._discover(calls)
            if not chips and calls.warnings:
                return HostSnapshot(
                    source=self.source,
                    state="failed",
                    message=calls.warnings[0],
                    processes=None,
                    version=self.version,
                    taken_ns=taken_ns,
                    refresh_ms=(time.monotonic() - started) * 1000,
                    warnings=tuple(calls.warnings),
                )
            self._chips = chips
        devices = []
        processes: list[ProcessReading] | None = []
        for chip in self._chips:
            devices.append(self._reading(calls, chip))
            found = self._processes(calls, chip)
            processes = None if found is None or processes is None else [*processes, *found]
        return HostSnapshot(
            source=self.source,
            state="partial" if calls.warnings else "ok",
            message=calls.warnings[0] if calls.warnings else None,
            devices=tuple(devices),
            processes=None if processes is None else complete(processes),
            version=self.version,
            taken_ns=taken_ns,
            refresh_ms=(time.monotonic() - started) * 1000,
            warnings=tuple(calls.warnings),
        )

    def _reading(self, calls: _Calls, chip: _Chip) -> DeviceReading:
        card, device = chip.card, chip.device
        where = f"card {card}, chip {device}"
        health = calls.uint_out("dcmi_get_device_health", where, card, device)
        power = calls.int_out("dcmi_get_device_power_info", where, card, device)
        temp = calls.int_out("dcmi_get_device_temperature", where, card, device)

        def rate(kind: int) -> int | None:
            return calls.uint_out("dcmi_get_device_utilization_rate", where, card, device, kind)

        def mhz(kind: int) -> int | None:
            return calls.uint_out("dcmi_get_device_frequency", where, card, device, kind)

        hbm = abi.DcmiHbmInfo()
        hbm_used = hbm_total = None
        hbm_read = calls.ok("dcmi_get_device_hbm_info", where, card, device, ctypes.byref(hbm))
        if hbm_read and hbm.memory_size > 0:
            scale = 1024 if hbm.memory_size > _HBM_MB_LIMIT else 1
            hbm_total, hbm_used = hbm.memory_size // scale, hbm.memory_usage // scale
        memory = abi.DcmiMemoryInfo()
        memory_used = memory_total = hugepages_used = hugepages_total = None
        if calls.ok("dcmi_get_device_memory_info_v3", where, card, device, ctypes.byref(memory)):
            memory_total = memory.memory_size
            memory_used = max(0, memory.memory_size - memory.memory_available)
            hugepages_total = memory.hugepages_total
            hugepages_used = max(0, memory.hugepages_total - memory.hugepages_free)
        ecc = abi.DcmiEccInfo()
        ecc_kind = abi.DCMI_DEVICE_TYPE_HBM if hbm_total else abi.DCMI_DEVICE_TYPE_DDR
        ecc_single = ecc_double = None
        if calls.ok("dcmi_get_device_ecc_info", where, card, device, ecc_kind, ctypes.byref(ecc)):
            ecc_single, ecc_double = ecc.single_bit_error_cnt, ecc.double_bit_error_cnt
        codes = (ctypes.c_uint * abi.MAX_ERROR_CODES)()
        code_count = ctypes.c_int()
        fault_codes = None
        if calls.ok(
            "dcmi_get_device_errorcode_v2",
            where,
            card,
            device,
            ctypes.byref(code_count),
            codes,
            abi.MAX_ERROR_CODES,
        ):
            fault_codes = tuple(codes[: max(0, min(code_count.value, abi.MAX_ERROR_CODES))])
        bandwidth = abi.UTIL_HBM_BANDWIDTH if hbm_total else abi.UTIL_MEMORY_BANDWIDTH
        return DeviceReading(
            npu_id=card,
            chip_id=device,
            logic_id=chip.logic_id,
            phy_id=chip.phy_id,
            name=chip.name,
            health=None if health is None else abi.HEALTH_NAMES.get(health, "UNKNOWN"),
            power_w=None if power is None else round(power / abi.POWER_UNITS_PER_WATT, 1),
            temp_c=temp,
            aicore_pct=rate(abi.UTIL_AICORE),
            aicpu_pct=rate(abi.UTIL_AICPU),
            vector_pct=rate(abi.UTIL_VECTORCORE),
            ctrlcpu_pct=rate(abi.UTIL_CTRLCPU),
            npu_util_pct=rate(abi.UTIL_NPU),
            memory_bandwidth_pct=rate(bandwidth),
            hbm_used_mb=hbm_used,
            hbm_total_mb=hbm_total,
            memory_used_mb=memory_used,
            memory_total_mb=memory_total,
            hugepages_used=hugepages_used,
            hugepages_total=hugepages_total,
            bus_id=chip.bus_id,
            aicore_mhz=mhz(abi.DCMI_FREQ_AICORE_CURRENT),
            aicore_max_mhz=mhz(abi.DCMI_FREQ_AICORE_MAX),
            ecc_single_bit=ecc_single,
            ecc_double_bit=ecc_double,
            fault_codes=fault_codes,
        )

    def _processes(self, calls: _Calls, chip: _Chip) -> list[ProcessReading] | None:
        entries = (abi.DcmiProcMemInfo * abi.MAX_PROC_NUM)()
        count = ctypes.c_int()
        where = f"card {chip.card}, chip {chip.device}"
        if not calls.ok(
            "dcmi_get_device_resource_info",
            where,
            chip.card,
            chip.device,
            entries,
            ctypes.byref(count),
        ):
            return None
        return [
            ProcessReading(
                npu_id=chip.card,
                chip_id=chip.device,
                pid=entry.proc_id,
                memory_mb=entry.proc_mem_usage // MIB,
            )
            for entry in entries[: max(0, min(count.value, abi.MAX_PROC_NUM))]
        ]
