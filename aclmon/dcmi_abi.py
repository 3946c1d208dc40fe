"""The DCMI C interface (``libdcmi.so``) as ctypes sees it: structs, signatures, codes.

Shared by the caller (:mod:`aclmon.host.dcmi`, which loads the real library) and
the callee the simulator offers in its place (:mod:`aclmon.sim.dcmi`), so both
agree on every byte. Names follow ``dcmi_interface_api.h`` (Apache-2.0, shipped
with Ascend's npu-exporter and the open-source CANN driver); only the calls a
monitor needs are declared. Every call returns ``0`` or a negative code. See
docs/reference/npu_smi_dcmi.md.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int, c_uint, c_ulong, c_ulonglong

MAX_CHIP_NAME_LEN = 32
#: the library supports at most 64 cards (MAX_CARD_NUM).
MAX_CARD_NUM = 64
#: dcmi_get_device_resource_info fills at most this many process entries.
MAX_PROC_NUM = 32
#: the fault-code list length the exporter passes to dcmi_get_device_errorcode_v2.
MAX_ERROR_CODES = 128

DCMI_OK = 0
DCMI_ERROR_CODE_BASE = -8000
DCMI_ERR_CODE_INVALID_PARAMETER = DCMI_ERROR_CODE_BASE - 1
DCMI_ERR_CODE_OPER_NOT_PERMITTED = DCMI_ERROR_CODE_BASE - 2
DCMI_ERR_CODE_INNER_ERR = DCMI_ERROR_CODE_BASE - 5
DCMI_ERR_CODE_TIME_OUT = DCMI_ERROR_CODE_BASE - 6
DCMI_ERR_CODE_INVALID_DEVICE_ID = DCMI_ERROR_CODE_BASE - 7
DCMI_ERR_CODE_DEVICE_NOT_EXIST = DCMI_ERROR_CODE_BASE - 8
DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER = DCMI_ERROR_CODE_BASE - 13
DCMI_ERR_CODE_NOT_SUPPORT = DCMI_ERROR_CODE_BASE - 255

ERROR_NAMES = {
    DCMI_ERR_CODE_INVALID_PARAMETER: "invalid parameter",
    DCMI_ERR_CODE_OPER_NOT_PERMITTED: "operation not permitted",
    DCMI_ERROR_CODE_BASE - 3: "memory operation failed",
    DCMI_ERROR_CODE_BASE - 4: "secure function failed",
    DCMI_ERR_CODE_INNER_ERR: "inner error",
    DCMI_ERR_CODE_TIME_OUT: "timed out",
    DCMI_ERR_CODE_INVALID_DEVICE_ID: "invalid device id",
    DCMI_ERR_CODE_DEVICE_NOT_EXIST: "device does not exist",
    DCMI_ERROR_CODE_BASE - 9: "ioctl failed",
    DCMI_ERROR_CODE_BASE - 10: "send message failed",
    DCMI_ERROR_CODE_BASE - 11: "receive message failed",
    DCMI_ERROR_CODE_BASE - 12: "not ready",
    DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER: "not supported in a container",
    DCMI_ERR_CODE_NOT_SUPPORT: "not supported",
}

# enum dcmi_unit_type
NPU_TYPE = 0
MCU_TYPE = 1
CPU_TYPE = 2

# dcmi_get_device_health: the most severe alarm of the chip.
HEALTH_NAMES = {0: "OK", 1: "Warning", 2: "Alarm", 3: "Critical"}
HEALTH_ABSENT = 0xFFFFFFFF

# enum dcmi_freq_type
DCMI_FREQ_AICORE_CURRENT = 7
DCMI_FREQ_AICORE_MAX = 9

# input_type of dcmi_get_device_utilization_rate
UTIL_MEMORY = 1
UTIL_AICORE = 2
UTIL_AICPU = 3
UTIL_CTRLCPU = 4
UTIL_MEMORY_BANDWIDTH = 5
UTIL_HBM = 6
UTIL_HBM_BANDWIDTH = 10
UTIL_VECTORCORE = 12
UTIL_NPU = 13

# enum dcmi_device_type (dcmi_get_device_ecc_info)
DCMI_DEVICE_TYPE_DDR = 0
DCMI_DEVICE_TYPE_HBM = 2

#: dcmi_get_device_power_info reports tenths of a watt.
POWER_UNITS_PER_WATT = 10


def error_text(code: int) -> str:
    """``-8255 (not supported)``: a return code as a person reads it."""
    name = ERROR_NAMES.get(code)
    return f"{code} ({name})" if name else str(code)


class DcmiChipInfo(ctypes.Structure):
    _fields_ = [
        ("chip_type", ctypes.c_ubyte * MAX_CHIP_NAME_LEN),
        ("chip_name", ctypes.c_ubyte * MAX_CHIP_NAME_LEN),
        ("chip_ver", ctypes.c_ubyte * MAX_CHIP_NAME_LEN),
        ("aicore_cnt", c_uint),
    ]


class DcmiPcieInfoAll(ctypes.Structure):
    _fields_ = [
        ("venderid", c_uint),
        ("subvenderid", c_uint),
        ("deviceid", c_uint),
        ("subdeviceid", c_uint),
        ("domain", c_int),
        ("bdf_busid", c_uint),
        ("bdf_deviceid", c_uint),
        ("bdf_funcid", c_uint),
        ("reserve", ctypes.c_ubyte * 32),
    ]


class DcmiHbmInfo(ctypes.Structure):
    """Sizes in MB from dcmi_get_device_hbm_info (the driver divides its KB figure by
    1024 before returning; the older dcmi_get_hbm_info returned KB)."""

    _fields_ = [
        ("memory_size", c_ulonglong),
        ("freq", c_uint),
        ("memory_usage", c_ulonglong),
        ("temp", c_int),
        ("bandwith_util_rate", c_uint),
    ]


class DcmiMemoryInfo(ctypes.Structure):
    """``struct dcmi_get_memory_info_stru`` (dcmi_get_device_memory_info_v3): the DDR."""

    _fields_ = [
        ("memory_size", c_ulonglong),
        ("memory_available", c_ulonglong),
        ("freq", c_uint),
        ("hugepagesize", c_ulong),
        ("hugepages_total", c_ulong),
        ("hugepages_free", c_ulong),
        ("utiliza", c_uint),
        ("reserve", ctypes.c_ubyte * 60),
    ]


class DcmiEccInfo(ctypes.Structure):
    _fields_ = [
        ("enable_flag", c_int),
        ("single_bit_error_cnt", c_uint),
        ("double_bit_error_cnt", c_uint),
        ("total_single_bit_error_cnt", c_uint),
        ("total_double_bit_error_cnt", c_uint),
        ("single_bit_isolated_pages_cnt", c_uint),
        ("double_bit_isolated_pages_cnt", c_uint),
    ]


class DcmiProcMemInfo(ctypes.Structure):
    """One process on a chip: host pid and its device memory in bytes."""

    _fields_ = [
        ("proc_id", c_int),
        ("proc_mem_usage", c_ulong),
    ]


P_INT = POINTER(c_int)
P_UINT = POINTER(c_uint)

#: name -> argument types; every call returns ``int``.
FUNCTIONS: dict[str, tuple[type, ...]] = {
    "dcmi_init": (),
    "dcmi_get_card_list": (P_INT, P_INT, c_int),
    "dcmi_get_device_num_in_card": (c_int, P_INT),
    "dcmi_get_device_type": (c_int, c_int, P_INT),
    "dcmi_get_device_logic_id": (P_INT, c_int, c_int),
    "dcmi_get_device_phyid_from_logicid": (c_uint, P_UINT),
    "dcmi_get_device_chip_info": (c_int, c_int, POINTER(DcmiChipInfo)),
    "dcmi_get_device_pcie_info_v2": (c_int, c_int, POINTER(DcmiPcieInfoAll)),
    "dcmi_get_device_health": (c_int, c_int, P_UINT),
    "dcmi_get_device_errorcode_v2": (c_int, c_int, P_INT, P_UINT, c_uint),
    "dcmi_get_device_temperature": (c_int, c_int, P_INT),
    "dcmi_get_device_power_info": (c_int, c_int, P_INT),
    "dcmi_get_device_frequency": (c_int, c_int, c_int, P_UINT),
    "dcmi_get_device_utilization_rate": (c_int, c_int, c_int, P_UINT),
    "dcmi_get_device_hbm_info": (c_int, c_int, POINTER(DcmiHbmInfo)),
    "dcmi_get_device_memory_info_v3": (c_int, c_int, POINTER(DcmiMemoryInfo)),
    "dcmi_get_device_ecc_info": (c_int, c_int, c_int, POINTER(DcmiEccInfo)),
    "dcmi_get_device_resource_info": (c_int, c_int, POINTER(DcmiProcMemInfo), P_INT),
}


def prototype(name: str) -> type[ctypes._CFunctionType]:
    """The C function type of ``name`` (``int name(args...)``, cdecl)."""
    return ctypes.CFUNCTYPE(c_int, *FUNCTIONS[name])
