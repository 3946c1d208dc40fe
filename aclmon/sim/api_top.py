"""Top-level ``acl.*`` functions: init/finalize, version, SoC, data buffers, tensor descs.

Return shapes follow pyacl_api.md §1.1: ``ret`` alone, ``(out..., ret)``,
a bare int handle for ``create_*`` (0 on failure), ``None`` for void calls, and
a bare value for value getters.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from aclmon import acl_constants as C
from aclmon.sim import errmsg, slog
from aclmon.sim import host as H
from aclmon.sim import runtime as R
from aclmon.sim.acljson import EXCEPTION_SCENES, AclJson, AclJsonError, DumpConfig, parse_acl_json
from aclmon.sim.config import SimConfig, SimConfigError, load_config
from aclmon.sim.errmsg import fail
from aclmon.sim.faults import FaultRuleError
from aclmon.sim.layouts import ACL_TO_NUMPY
from aclmon.sim.profiling import Profiler

#: sizes of the aclDataTypes the kernels do not compute in.
_OTHER_TYPE_SIZES = {
    C.ACL_COMPLEX64: 8,
    C.ACL_COMPLEX128: 16,
    C.ACL_COMPLEX32: 4,
    C.ACL_HIFLOAT8: 1,
    C.ACL_FLOAT8_E5M2: 1,
    C.ACL_FLOAT8_E4M3FN: 1,
    C.ACL_FLOAT8_E8M0: 1,
}


def init(config_path: str | None = None) -> int:
    slog.WRITER.reconfigure()
    current = R.runtime()
    if current is not None:
        current.init_count += 1
        return fail(C.ACL_ERROR_REPEAT_INITIALIZE, "acl.init was already called")
    try:
        config = load_config()
    except (SimConfigError, FaultRuleError) as exc:
        print(f"acl (sim): {exc}", file=sys.stderr)
        return fail(C.ACL_ERROR_INVALID_PARAM, str(exc))
    acl_json = AclJson()
    if config_path:
        try:
            acl_json = parse_acl_json(config_path)
        except AclJsonError as exc:
            return fail(exc.code, str(exc))
    env_scene = os.environ.get("ASCEND_DUMP_SCENE")
    if env_scene in EXCEPTION_SCENES and (acl_json.dump is None or acl_json.dump.scene is None):
        dump = acl_json.dump or DumpConfig(path="", model_layers={})
        acl_json = replace(acl_json, dump=replace(dump, scene=env_scene))
    rt = R.start_session(config, acl_json)
    profiler = Profiler(config.device_count)
    rt.extras["prof"] = profiler
    if acl_json.profiler is not None:
        try:
            profiler.start_command_mode(
                acl_json.profiler.output, acl_json.profiler.switches, acl_json.profiler.aic_metrics
            )
        except OSError as exc:
            R.end_session()
            return fail(C.ACL_ERROR_INVALID_PROFILING_CONFIG, f"profiler output: {exc}")
    slog.WRITER.write(
        slog.LEVEL_INFO,
        "ASCENDCL",
        "acl.cpp:231",
        "aclInit",
        f"acl init success, config path is [{config_path or ''}], "
        f"{config.device_count} device(s) of {config.soc_name} (simulated)",
    )
    return C.ACL_SUCCESS


def _log_finalize() -> None:
    slog.WRITER.write(
        slog.LEVEL_INFO,
        "ASCENDCL",
        "acl.cpp:318",
        "aclFinalize",
        "acl finalize success",
        flush=True,
    )
    slog.WRITER.flush()


def finalize() -> int:
    rt = R.runtime()
    if rt is None:
        return fail(C.ACL_ERROR_REPEAT_FINALIZE, "acl.finalize without acl.init")
    rt.extras["prof"].shutdown()
    R.end_session()
    _log_finalize()
    return C.ACL_SUCCESS


def _config() -> SimConfig:
    rt = R.runtime()
    if rt is not None:
        return rt.config
    try:
        return load_config()
    except (SimConfigError, FaultRuleError):
        return SimConfig()  # acl.init reports the bad configuration


def finalize_reference() -> tuple[int, int]:
    """Drop one acl.init reference; the session ends when none are left."""
    rt = R.runtime()
    if rt is None:
        return 0, fail(C.ACL_ERROR_REPEAT_FINALIZE, "acl.finalize without acl.init")
    rt.init_count -= 1
    if rt.init_count > 0:
        return rt.init_count, C.ACL_SUCCESS
    rt.extras["prof"].shutdown()
    R.end_session()
    _log_finalize()
    return 0, C.ACL_SUCCESS


def get_version() -> tuple[int, int, int, int]:
    major, minor, patch = _config().version
    return major, minor, patch, C.ACL_SUCCESS


def get_soc_name() -> str:
    return _config().soc_name


def get_recent_err_msg() -> str:
    return errmsg.recent_error()


def app_log(log_level: int, message: str) -> None:
    """acl.app_log: one application line in the plog (module APP), like ACL_APP_LOG."""
    if not isinstance(log_level, int) or not isinstance(message, str):
        raise TypeError("acl.app_log args parse failed")
    if log_level not in slog.LEVEL_NAMES:
        return  # the C macro ignores an unknown level
    caller = sys._getframe(1)
    source = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
    slog.WRITER.write(log_level, "APP", source, caller.f_code.co_name, message)


def data_type_size(data_type: int) -> int:
    """Bytes per element of an aclDataType (0 for undefined and sub-byte types)."""
    dtype = ACL_TO_NUMPY.get(data_type)
    if dtype is not None:
        return dtype.itemsize
    return _OTHER_TYPE_SIZES.get(data_type, 0)


def get_device_capability(device_id: int, info: int) -> tuple[int, int]:
    rt = R.runtime()
    if rt is None:
        return 0, fail(C.ACL_ERROR_UNINITIALIZE, "acl.init was not called")
    if not 0 <= device_id < len(rt.devices):
        return 0, fail(C.ACL_ERROR_RT_INVALID_DEVICEID, f"no device {device_id}")
    values = {
        C.ACL_DEVICE_INFO_AI_CORE_NUM: rt.config.ai_core_count,
        C.ACL_DEVICE_INFO_VECTOR_CORE_NUM: rt.config.vector_core_count,
        C.ACL_DEVICE_INFO_L2_SIZE: rt.config.l2_cache_bytes,
    }
    if info not in values:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, f"unknown device info {info}")
    return values[info], C.ACL_SUCCESS


# ---------------------------------------------------------------- data buffers
def create_data_buffer(data: int, size: int) -> int:
    if size < 0 or (size > 0 and not data):
        fail(C.ACL_ERROR_INVALID_PARAM, "invalid data buffer")
        return 0
    return H.register(H.DATA_BUFFERS, [data, size])


def destroy_data_buffer(data_buffer: int) -> int:
    return H.unregister(H.DATA_BUFFERS, data_buffer, "data buffer")


def update_data_buffer(data_buffer: int, data: int, size: int) -> int:
    entry = H.DATA_BUFFERS.get(data_buffer)
    if entry is None or size < 0:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown data buffer")
    entry[0], entry[1] = data, size
    return C.ACL_SUCCESS


def get_data_buffer_addr(data_buffer: int) -> int:
    entry = H.DATA_BUFFERS.get(data_buffer)
    return entry[0] if entry is not None else 0


def get_data_buffer_size(data_buffer: int) -> int:
    entry = H.DATA_BUFFERS.get(data_buffer)
    return entry[1] if entry is not None else 0


def get_data_buffer_size_v2(data_buffer: int) -> int:
    entry = H.DATA_BUFFERS.get(data_buffer)
    return entry[1] if entry is not None else 0


# ---------------------------------------------------------------- tensor descs
def create_tensor_desc(data_type: int, dims: list[int], format: int) -> int:
    if not isinstance(dims, (list, tuple)) or any(not isinstance(d, int) for d in dims):
        raise TypeError("acl.create_tensor_desc args parse failed")
    if data_type not in C.DATA_TYPE_NAMES or format not in C.FORMAT_NAMES:
        fail(C.ACL_ERROR_INVALID_PARAM, "unknown data type or format")
        return 0
    return H.register(H.TENSOR_DESCS, H.TensorDesc(data_type, tuple(dims), format))


def destroy_tensor_desc(desc: int) -> None:
    # Also accepts the desc arrays from acl.mdl.create_and_get_op_desc, as the
    # documented exception sample destroys input_desc/output_desc this way.
    members = H.DESC_ARRAYS.pop(desc, None)
    if members is not None:
        for member in members:
            H.TENSOR_DESCS.pop(member, None)
        return
    H.TENSOR_DESCS.pop(desc, None)


def get_tensor_desc_by_index(desc: int, index: int) -> int:
    members = H.DESC_ARRAYS.get(desc)
    if members is None or not 0 <= index < len(members):
        fail(C.ACL_ERROR_INVALID_PARAM, "no tensor desc at that index")
        return 0
    return members[index]


def _desc(desc: int) -> H.TensorDesc | None:
    return H.TENSOR_DESCS.get(desc)


def get_tensor_desc_type(desc: int) -> int:
    entry = _desc(desc)
    return entry.acl_dtype if entry is not None else C.ACL_DT_UNDEFINED


def get_tensor_desc_format(desc: int) -> int:
    entry = _desc(desc)
    return entry.acl_format if entry is not None else C.ACL_FORMAT_UNDEFINED


def get_tensor_desc_num_dims(desc: int) -> int:
    entry = _desc(desc)
    return len(entry.dims) if entry is not None else 0


def get_tensor_desc_dim_v2(desc: int, index: int) -> tuple[int, int]:
    entry = _desc(desc)
    if entry is None or not 0 <= index < len(entry.dims):
        return -1, fail(C.ACL_ERROR_INVALID_PARAM, "invalid tensor desc or dim index")
    return entry.dims[index], C.ACL_SUCCESS


def get_tensor_desc_dim(desc: int, index: int) -> int:
    entry = _desc(desc)
    if entry is None or not 0 <= index < len(entry.dims):
        return -1
    return entry.dims[index]


def _element_count(entry: H.TensorDesc) -> int:
    count = 1
    for dim in entry.dims:
        count *= max(dim, 0)
    return count


def get_tensor_desc_element_count(desc: int) -> int:
    entry = _desc(desc)
    return _element_count(entry) if entry is not None else 0


def get_tensor_desc_size(desc: int) -> int:
    entry = _desc(desc)
    if entry is None or entry.acl_dtype not in ACL_TO_NUMPY:
        return 0
    return _element_count(entry) * ACL_TO_NUMPY[entry.acl_dtype].itemsize


def get_tensor_desc_name(desc: int) -> str:
    entry = _desc(desc)
    return entry.name if entry is not None else ""


def set_tensor_desc_name(desc: int, name: str) -> None:
    entry = _desc(desc)
    if entry is not None:
        entry.name = name


def set_tensor_const(desc: int, data_buffer: int, length: int) -> int:
    entry = _desc(desc)
    if entry is None or not data_buffer or length <= 0:
        return fail(C.ACL_ERROR_INVALID_PARAM, "invalid tensor desc, buffer or length")
    entry.const_data = H.read_host(data_buffer, length)
    return C.ACL_SUCCESS


def get_tensor_desc_address(desc: int) -> int:
    entry = _desc(desc)
    return entry.address if entry is not None else 0
