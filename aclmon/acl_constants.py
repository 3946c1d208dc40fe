"""ACL enums and error codes, named exactly as in the CANN headers.

The one place they are defined (docs/reference/pyacl_api.md §1–§4). The sim,
the agent, the store and the TUI all import from here. The *dump protobuf*
dtype/format enums are a different numbering and live in ``aclmon.dump``;
never mix the two.

Each name is written once: the tables (:data:`ERRORS`, :data:`DATA_TYPE_NAMES`,
:data:`FORMAT_NAMES`, :data:`PROF_FLAGS`, :data:`AICORE_METRICS`) take their names
from the constants declared in their section, and an error's meaning (a metric's
acl.json name) stands beside its number.
"""

from __future__ import annotations


def declared_since(
    namespace: dict[str, object], mark: int, end: int | None = None
) -> dict[str, int]:
    """name -> value of the public int constants of a module (its ``globals()``)
    declared since ``mark`` (the number of its globals then; up to ``end``, another
    such number), in declaration order: a table built from them takes each name from
    the constant itself, so the name is written once."""
    return {
        name: value
        for name, value in list(namespace.items())[mark:end]
        if not name.startswith("_") and type(value) is int
    }


class EnumNames(dict[int, str]):
    """One C enum's names by value, from the constants a module declared between two
    marks (see :func:`declared_since`). :meth:`short` is the display name: without
    ``prefixes`` (removed in turn), and ``unknown.format(value)`` for a number the
    enum does not have."""

    def __init__(
        self,
        namespace: dict[str, object],
        mark: int,
        end: int | None = None,
        *,
        prefixes: tuple[str, ...] = (),
        unknown: str,
    ) -> None:
        super().__init__(
            (value, name) for name, value in declared_since(namespace, mark, end).items()
        )
        self.prefixes = prefixes
        self.unknown = unknown

    def short(self, value: int) -> str:
        name = self.get(value)
        if name is None:
            return self.unknown.format(value)
        for prefix in self.prefixes:
            name = name.removeprefix(prefix)
        return name


_MEANINGS: dict[int, str] = {}
_JSON_NAMES: dict[int, str] = {}


def _error(code: int, meaning: str) -> int:
    """An error code, with what it means in words (for :data:`ERRORS`)."""
    _MEANINGS[code] = meaning
    return code


def _metric(value: int, json_name: str) -> int:
    """An aclprofAicoreMetrics value, with its name in acl.json (for :data:`AICORE_METRICS`)."""
    _JSON_NAMES[value] = json_name
    return value


# ---------------------------------------------------------------- error codes
_mark = len(globals())
ACL_SUCCESS = _error(0, "success")
ACL_ERROR_INVALID_PARAM = _error(100000, "parameter check failed")
ACL_ERROR_UNINITIALIZE = _error(100001, "acl.init has not been called")
ACL_ERROR_REPEAT_INITIALIZE = _error(100002, "already initialized")
ACL_ERROR_INVALID_FILE = _error(100003, "invalid file")
ACL_ERROR_PARSE_FILE = _error(100006, "the file could not be parsed")
ACL_ERROR_INVALID_DUMP_CONFIG = _error(100009, "invalid dump config")
ACL_ERROR_INVALID_PROFILING_CONFIG = _error(100010, "invalid profiling config")
ACL_ERROR_INVALID_MODEL_ID = _error(100011, "invalid model id")
ACL_ERROR_OP_TYPE_NOT_MATCH = _error(100020, "operator type does not match")
ACL_ERROR_OP_INPUT_NOT_MATCH = _error(100021, "operator input does not match")
ACL_ERROR_OP_OUTPUT_NOT_MATCH = _error(100022, "operator output does not match")
ACL_ERROR_OP_ATTR_NOT_MATCH = _error(100023, "operator attribute does not match")
ACL_ERROR_OP_NOT_FOUND = _error(100024, "operator not found")
ACL_ERROR_OP_LOAD_FAILED = _error(100025, "single-operator load failed")
ACL_ERROR_UNSUPPORTED_DATA_TYPE = _error(100026, "unsupported data type")
ACL_ERROR_KERNEL_NOT_FOUND = _error(100029, "operator kernel not registered")
ACL_ERROR_REPEAT_SUBSCRIBE = _error(100033, "already subscribed")
ACL_ERROR_REPEAT_FINALIZE = _error(100037, "already finalized")
ACL_ERROR_PROF_ALREADY_RUN = _error(
    100042, "a profiling task already exists (acl.json, msprof or a started device)"
)
ACL_ERROR_PROF_NOT_RUN = _error(100043, "profiling not initialized, or the device not started")
ACL_ERROR_DUMP_ALREADY_RUN = _error(100044, "a dump task already exists")
ACL_ERROR_DUMP_NOT_RUN = _error(100045, "dump is not initialized")
ACL_ERROR_PROF_REPEAT_SUBSCRIBE = _error(148046, "this model is already subscribed")
ACL_ERROR_PROF_API_CONFLICT = _error(148047, "profiling API mode and subscription mode conflict")
ACL_ERROR_BAD_ALLOC = _error(200000, "memory allocation failed")
ACL_ERROR_API_NOT_SUPPORT = _error(200001, "API not supported")
ACL_ERROR_INVALID_DEVICE = _error(200002, "invalid device")
ACL_ERROR_INVALID_RESOURCE_HANDLE = _error(200005, "invalid handle")
ACL_ERROR_FEATURE_UNSUPPORTED = _error(200006, "feature unsupported")
ACL_ERROR_STORAGE_OVER_LIMIT = _error(300000, "storage over limit")
ACL_ERROR_INTERNAL_ERROR = _error(500000, "unknown internal error")
ACL_ERROR_GE_FAILURE = _error(500002, "graph engine error")
ACL_ERROR_RT_FAILURE = _error(500003, "runtime module error")
ACL_ERROR_DRV_FAILURE = _error(500004, "driver module error")
ACL_ERROR_PROFILING_FAILURE = _error(500005, "profiling module error")
ACL_ERROR_RT_PARAM_INVALID = _error(107000, "runtime parameter invalid")
ACL_ERROR_RT_INVALID_DEVICEID = _error(107001, "invalid device id")
ACL_ERROR_RT_CONTEXT_NULL = _error(107002, "no current context (call set_device or set_context)")
ACL_ERROR_RT_STREAM_CONTEXT = _error(107003, "stream does not belong to the current context")
ACL_ERROR_RT_STREAM_SUBSCRIBE = _error(107011, "stream not subscribed to callbacks, or twice")
ACL_ERROR_RT_THREAD_SUBSCRIBE = _error(107012, "thread not subscribed to callbacks, or twice")
ACL_ERROR_RT_INVALID_HANDLE = _error(107017, "invalid handle")
ACL_ERROR_RT_WAIT_TIMEOUT = _error(107019, "wait timeout")
ACL_ERROR_RT_TASK_TIMEOUT = _error(107020, "task timeout")
ACL_ERROR_RT_DEVICE_TASK_ABORT = _error(107022, "device task aborting")
ACL_ERROR_RT_MEMORY_ALLOCATION = _error(207001, "memory allocation error")
ACL_ERROR_RT_AICORE_OVER_FLOW = _error(207003, "AI Core arithmetic overflow")
ACL_ERROR_RT_NO_DEVICE = _error(207004, "no device")
ACL_ERROR_RT_NO_STREAM_RESOURCE = _error(207008, "out of streams")
ACL_ERROR_RT_AIVEC_OVER_FLOW = _error(207016, "AI Vector overflow")
ACL_ERROR_RT_DEVICE_OOM = _error(207018, "device out of memory")
ACL_ERROR_RT_INTERNAL_ERROR = _error(507000, "runtime internal error")
ACL_ERROR_RT_TS_ERROR = _error(507001, "task scheduler internal error")
ACL_ERROR_RT_LOST_HEARTBEAT = _error(507010, "task scheduler lost heartbeat")
ACL_ERROR_RT_MODEL_EXECUTE = _error(507011, "model execute failed")
ACL_ERROR_RT_REPORT_TIMEOUT = _error(507012, "no callback to report in time")
ACL_ERROR_RT_SYS_DMA = _error(507013, "system DMA error")
ACL_ERROR_RT_AICORE_TIMEOUT = _error(507014, "AI Core timeout")
ACL_ERROR_RT_AICORE_EXCEPTION = _error(507015, "AI Core exception")
ACL_ERROR_RT_AICORE_TRAP_EXCEPTION = _error(507016, "AI Core trap exception")
ACL_ERROR_RT_AICPU_TIMEOUT = _error(507017, "AI CPU timeout")
ACL_ERROR_RT_AICPU_EXCEPTION = _error(507018, "AI CPU exception")
ACL_ERROR_RT_VECTOR_CORE_TIMEOUT = _error(507034, "vector core timeout")
ACL_ERROR_RT_VECTOR_CORE_EXCEPTION = _error(507035, "vector core exception")
ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = _error(507046, "stream synchronize timed out")
ACL_ERROR_RT_EVENT_SYNC_TIMEOUT = _error(507047, "event synchronize timed out")
ACL_ERROR_RT_DEVICE_MEM_ERROR = _error(507053, "device memory UCE")
ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR = _error(507054, "HBM multi-bit ECC error")
ACL_ERROR_RT_DRV_INTERNAL_ERROR = _error(507899, "driver internal error")
ACL_ERROR_RT_SOCKET_CLOSE = _error(507901, "HDC disconnected")
ACL_ERROR_GE_PARAM_INVALID = _error(145000, "graph engine parameter invalid")
ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID = _error(145002, "model file path invalid")
ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID = _error(145011, "dynamic input address invalid")
ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID = _error(145012, "dynamic input size invalid")
ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID = _error(
    145013, "not one of the model's dynamic batch sizes"
)
ACL_ERROR_GE_INTERNAL_ERROR = _error(545000, "graph engine internal error")
ACL_ERROR_RT_FEATURE_NOT_SUPPORT = _error(207000, "feature not supported")

#: code -> (name, meaning), for showing an error in words.
ERRORS: dict[int, tuple[str, str]] = {
    code: (name, _MEANINGS[code]) for name, code in declared_since(globals(), _mark).items()
}


def error_name(code: int) -> str:
    """The CANN name of an error code, or ``"ACL error <code>"`` if unknown."""
    entry = ERRORS.get(code)
    return entry[0] if entry else f"ACL error {code}"


def error_text(code: int) -> str:
    """``"<NAME> (<code>): <meaning>"`` for showing a code in words."""
    entry = ERRORS.get(code)
    if entry is None:
        return f"ACL error {code}"
    return f"{entry[0]} ({code}): {entry[1]}"


#: value returned by the get_*_from_exception_info getters for a NULL info.
EXCEPTION_INFO_INVALID = 0xFFFFFFFF

# ---------------------------------------------------------------- runtime enums
ACL_DEVICE = 0
ACL_HOST = 1

ACL_DEVICE_STATUS_NORMAL = 0
ACL_DEVICE_STATUS_ABNORMAL = 1

ACL_STREAM_FAST_LAUNCH = 0x1
ACL_STREAM_FAST_SYNC = 0x2
ACL_STREAM_PERSISTENT = 0x4
ACL_STREAM_HUGE = 0x8

ACL_STREAM_STATUS_COMPLETE = 0
ACL_STREAM_STATUS_NOT_READY = 1

ACL_EVENT_SYNC = 0x1
ACL_EVENT_CAPTURE_STREAM_PROGRESS = 0x2
ACL_EVENT_TIME_LINE = 0x8
ACL_EVENT_EXTERNAL = 0x20
ACL_EVENT_IPC = 0x40

ACL_EVENT_STATUS_COMPLETE = 0
ACL_EVENT_STATUS_NOT_READY = 1
# query_event_status uses the inverted aclrtEventRecordedStatus numbering.
ACL_EVENT_RECORDED_STATUS_NOT_READY = 0
ACL_EVENT_RECORDED_STATUS_COMPLETE = 1

ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEM_MALLOC_HUGE_ONLY = 1
ACL_MEM_MALLOC_NORMAL_ONLY = 2
ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3
ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4
ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5
ACL_MEM_MALLOC_HUGE1G_ONLY = 6
ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7
ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x100
ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000
ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000

ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_MEMCPY_DEFAULT = 4
ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5
ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6
ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7

ACL_DDR_MEM = 0
ACL_HBM_MEM = 1
ACL_DDR_MEM_HUGE = 2
ACL_DDR_MEM_NORMAL = 3
ACL_HBM_MEM_HUGE = 4
ACL_HBM_MEM_NORMAL = 5
ACL_DDR_MEM_P2P_HUGE = 6
ACL_DDR_MEM_P2P_NORMAL = 7
ACL_HBM_MEM_P2P_HUGE = 8
ACL_HBM_MEM_P2P_NORMAL = 9
ACL_HBM_MEM_HUGE1G = 10
ACL_HBM_MEM_P2P_HUGE1G = 11

#: aclrtUtilizationInfo value for "not supported" (e.g. vector on 910A).
DEVICE_UTILIZATION_NOT_SUPPORT = -1

# aclDeviceInfo (acl.get_device_capability)
ACL_DEVICE_INFO_AI_CORE_NUM = 0
ACL_DEVICE_INFO_VECTOR_CORE_NUM = 1
ACL_DEVICE_INFO_L2_SIZE = 2

# aclrtDevAttr (acl.rt.get_device_info)
ACL_DEV_ATTR_AICPU_CORE_NUM = 1
ACL_DEV_ATTR_AICORE_CORE_NUM = 101
ACL_DEV_ATTR_CUBE_CORE_NUM = 102
ACL_DEV_ATTR_VECTOR_CORE_NUM = 201
ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE = 301
ACL_DEV_ATTR_L2_CACHE_SIZE = 302
ACL_DEV_ATTR_PHY_CHIP_ID = 402
ACL_DEV_ATTR_IS_VIRTUAL = 501

ACL_RT_THREAD_LEVEL = 0

# aclLogLevel (acl.app_log)
ACL_DEBUG = 0
ACL_INFO = 1
ACL_WARNING = 2
ACL_ERROR = 3

# aclrtCallbackBlockType (acl.rt.launch_callback)
ACL_CALLBACK_NO_BLOCK = 0
ACL_CALLBACK_BLOCK = 1

# ---------------------------------------------------------------- aclDataType
_data_types = len(globals())
ACL_DT_UNDEFINED = -1
ACL_FLOAT = 0
ACL_FLOAT16 = 1
ACL_INT8 = 2
ACL_INT32 = 3
ACL_UINT8 = 4
ACL_INT16 = 6
ACL_UINT16 = 7
ACL_UINT32 = 8
ACL_INT64 = 9
ACL_UINT64 = 10
ACL_DOUBLE = 11
ACL_BOOL = 12
ACL_STRING = 13
ACL_COMPLEX64 = 16
ACL_COMPLEX128 = 17
ACL_BF16 = 27
ACL_INT4 = 29
ACL_UINT1 = 30
ACL_COMPLEX32 = 33
ACL_HIFLOAT8 = 34
ACL_FLOAT8_E5M2 = 35
ACL_FLOAT8_E4M3FN = 36
ACL_FLOAT8_E8M0 = 37
ACL_FLOAT6_E3M2 = 38
ACL_FLOAT6_E2M3 = 39
ACL_FLOAT4_E2M1 = 40
ACL_FLOAT4_E1M2 = 41

# ---------------------------------------------------------------- aclFormat
_formats = len(globals())
ACL_FORMAT_UNDEFINED = -1
ACL_FORMAT_NCHW = 0
ACL_FORMAT_NHWC = 1
ACL_FORMAT_ND = 2
ACL_FORMAT_NC1HWC0 = 3
ACL_FORMAT_FRACTAL_Z = 4
ACL_FORMAT_NC1HWC0_C04 = 12
ACL_FORMAT_HWCN = 16
ACL_FORMAT_NDHWC = 27
ACL_FORMAT_FRACTAL_NZ = 29
ACL_FORMAT_NCDHW = 30
ACL_FORMAT_NDC1HWC0 = 32
ACL_FRACTAL_Z_3D = 33
ACL_FORMAT_NC = 35
ACL_FORMAT_NCL = 47
ACL_FORMAT_FRACTAL_NZ_C0_16 = 50
ACL_FORMAT_FRACTAL_NZ_C0_32 = 51
ACL_FORMAT_FRACTAL_NZ_C0_2 = 52
ACL_FORMAT_FRACTAL_NZ_C0_4 = 53
ACL_FORMAT_FRACTAL_NZ_C0_8 = 54

#: aclDataType / aclFormat value -> its name.
DATA_TYPE_NAMES = EnumNames(
    globals(), _data_types, _formats, prefixes=("ACL_",), unknown="dtype({})"
)
FORMAT_NAMES = EnumNames(
    globals(), _formats, prefixes=("ACL_FORMAT_", "ACL_"), unknown="format({})"
)


def data_type_name(dtype: int) -> str:
    """Short display name of an aclDataType, e.g. ``FLOAT16`` (``dtype(<n>)`` if unknown)."""
    return DATA_TYPE_NAMES.short(dtype)


def format_name(fmt: int) -> str:
    """Short display name of an aclFormat, e.g. ``NC1HWC0`` (``format(<n>)`` if unknown)."""
    return FORMAT_NAMES.short(fmt)


# ---------------------------------------------------------------- profiling
_mark = len(globals())
ACL_PROF_ACL_API = 0x0001
ACL_PROF_TASK_TIME = 0x0002
ACL_PROF_AICORE_METRICS = 0x0004
ACL_PROF_AICPU = 0x0008
ACL_PROF_L2CACHE = 0x0010
ACL_PROF_HCCL_TRACE = 0x0020
ACL_PROF_TRAINING_TRACE = 0x0040
ACL_PROF_MSPROFTX = 0x0080
ACL_PROF_RUNTIME_API = 0x0100
ACL_PROF_GE_API_L0 = 0x0200
ACL_PROF_TASK_TIME_L0 = 0x0800
ACL_PROF_TASK_MEMORY = 0x1000
ACL_PROF_TASK_TIME_L2 = 0x2000
ACL_PROF_OP_ATTR = 0x4000
ACL_PROF_TASK_TIME_L3 = 0x8000
ACL_PROF_GE_API_L1 = 0x01000000
ACL_PROF_API_STATS = 0x400000000
ACL_PROF_AICORE_SHAPE = 0x800000000

#: every ACL_PROF_* data-type flag, in header order: (name, value).
PROF_FLAGS: tuple[tuple[str, int], ...] = tuple(declared_since(globals(), _mark).items())
PROF_FLAGS_ALL = 0
for _name, _value in PROF_FLAGS:
    PROF_FLAGS_ALL |= _value
del _name, _value


def prof_flag_names(mask: int) -> list[str]:
    """The ACL_PROF_* names set in ``mask``, in header order."""
    return [name for name, value in PROF_FLAGS if mask & value]


_mark = len(globals())
ACL_AICORE_ARITHMETIC_UTILIZATION = _metric(0, "ArithmeticUtilization")
ACL_AICORE_PIPE_UTILIZATION = _metric(1, "PipeUtilization")
ACL_AICORE_MEMORY_BANDWIDTH = _metric(2, "Memory")
ACL_AICORE_L0B_AND_WIDTH = _metric(3, "MemoryL0")
ACL_AICORE_RESOURCE_CONFLICT_RATIO = _metric(4, "ResourceConflictRatio")
ACL_AICORE_MEMORY_UB = _metric(5, "MemoryUB")
ACL_AICORE_L2_CACHE = _metric(6, "L2Cache")
ACL_AICORE_PIPE_EXECUTE_UTILIZATION = _metric(7, "PipelineExecuteUtilization")
ACL_AICORE_MEMORY_ACCESS = _metric(8, "MemoryAccess")
ACL_AICORE_NONE = _metric(0xFF, "None")

#: aclprofAicoreMetrics value -> (enum name, acl.json aic_metrics string).
AICORE_METRICS: dict[int, tuple[str, str]] = {
    value: (name, _JSON_NAMES[value]) for name, value in declared_since(globals(), _mark).items()
}

#: aclprofAicoreMetrics value -> the per-operator columns msprof's op_summary
#: shows for that metric group (a representative subset; ``aic_`` = cube core,
#: ``aiv_`` = vector core; ratios are 0..1 of the operator's cycles).
AICORE_METRIC_COLUMNS: dict[int, tuple[str, ...]] = {
    ACL_AICORE_ARITHMETIC_UTILIZATION: (
        "aic_mac_fp16_ratio", "aic_mac_int8_ratio", "aiv_vec_fp32_ratio", "aiv_vec_fp16_ratio",
        "aiv_vec_int32_ratio", "aiv_vec_misc_ratio",
    ),
    ACL_AICORE_PIPE_UTILIZATION: (
        "aic_mac_ratio", "aic_scalar_ratio", "aic_mte1_ratio", "aic_mte2_ratio",
        "aic_fixpipe_ratio", "aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio",
    ),
    ACL_AICORE_MEMORY_BANDWIDTH: (
        "aic_main_mem_read_bw(GB/s)", "aic_main_mem_write_bw(GB/s)", "aic_l1_read_bw(GB/s)",
        "aic_l1_write_bw(GB/s)", "aiv_gm_to_ub_bw(GB/s)", "aiv_ub_to_gm_bw(GB/s)",
    ),
    ACL_AICORE_L0B_AND_WIDTH: (
        "aic_l0a_read_bw(GB/s)", "aic_l0a_write_bw(GB/s)", "aic_l0b_read_bw(GB/s)",
        "aic_l0b_write_bw(GB/s)", "aic_l0c_read_bw_cube(GB/s)", "aic_l0c_write_bw_cube(GB/s)",
    ),
    ACL_AICORE_RESOURCE_CONFLICT_RATIO: (
        "aiv_vec_bankgroup_cflt_ratio", "aiv_vec_bank_cflt_ratio", "aiv_vec_resc_cflt_ratio",
    ),
    ACL_AICORE_MEMORY_UB: (
        "aiv_ub_read_bw_vector(GB/s)", "aiv_ub_write_bw_vector(GB/s)",
        "aiv_ub_read_bw_scalar(GB/s)", "aiv_ub_write_bw_scalar(GB/s)",
    ),
    ACL_AICORE_L2_CACHE: (
        "write_cache_hit", "write_cache_miss_allocate", "r0_read_cache_hit",
        "r0_read_cache_miss_allocate", "r1_read_cache_hit", "r1_read_cache_miss_allocate",
    ),
    ACL_AICORE_PIPE_EXECUTE_UTILIZATION: (
        "aic_mac_exe_ratio", "aic_scalar_exe_ratio", "aic_mte1_exe_ratio", "aic_mte2_exe_ratio",
        "aic_fixpipe_exe_ratio", "aiv_vec_exe_ratio", "aiv_mte3_exe_ratio",
    ),
    ACL_AICORE_MEMORY_ACCESS: (
        "read_main_memory_datas(KB)", "write_main_memory_datas(KB)", "GM_to_L1_datas(KB)",
        "GM_to_UB_datas(KB)", "UB_to_GM_datas(KB)",
    ),
    ACL_AICORE_NONE: (),
}  # fmt: skip

# aclprofConfigType (acl.prof.set_config)
ACL_PROF_ARGS_MIN = 0
ACL_PROF_STORAGE_LIMIT = 1
ACL_PROF_AIV_METRICS = 2
ACL_PROF_SYS_HARDWARE_MEM_FREQ = 3
ACL_PROF_LLC_MODE = 4
ACL_PROF_SYS_IO_FREQ = 5
ACL_PROF_SYS_INTERCONNECTION_FREQ = 6
ACL_PROF_DVPP_FREQ = 7
ACL_PROF_HOST_SYS = 8
ACL_PROF_HOST_SYS_USAGE = 9
ACL_PROF_HOST_SYS_USAGE_FREQ = 10
ACL_PROF_LOW_POWER_FREQ = 11
ACL_PROF_SYS_MEM_SERVICEFLOW = 12
ACL_PROF_SYS_CPU_FREQ = 13
ACL_PROF_OPTYPE = 14
ACL_PROF_NTS_METRICS = 15
ACL_PROF_PATH = 16
ACL_PROF_ARGS_MAX = 17

ACL_STEP_START = 0
ACL_STEP_END = 1

ACL_PROF_MAX_OP_TYPE_LEN = 65
ACL_PROF_MAX_OP_NAME_LEN = 257

del _mark
