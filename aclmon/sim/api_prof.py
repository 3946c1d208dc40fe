"""``acl.prof.*``: profiling API, msproftx stamps, step info, model subscription."""

from __future__ import annotations

from collections.abc import Callable

from aclmon import acl_constants as C
from aclmon.sim import host as H
from aclmon.sim import profiling as P
from aclmon.sim import runtime as R
from aclmon.sim.devices import new_handle, now_ns
from aclmon.sim.errmsg import fail
from aclmon.sim.guard import needs_init
from aclmon.sim.runtime import Runtime


def _profiler() -> P.Profiler | None:
    rt = R.runtime()
    return rt.extras["prof"] if rt is not None else None


def _prof(rt: Runtime) -> P.Profiler:
    return rt.extras["prof"]


# ---------------------------------------------------------------- API mode
@needs_init()
def init(rt: Runtime, profiler_path: str) -> int:
    return _prof(rt).init(profiler_path)


@needs_init()
def finalize(rt: Runtime) -> int:
    return _prof(rt).finalize()


@needs_init()
def set_config(rt: Runtime, config_type: int, config_str: str) -> int:
    return _prof(rt).set_config(config_type, config_str)


@needs_init(handle=True)
def create_config(
    rt: Runtime,
    device_id_list: list[int],
    aicore_metrics: int,
    aicore_events: int,
    data_type_config: int,
) -> int:
    if not isinstance(device_id_list, list) or not all(isinstance(d, int) for d in device_id_list):
        raise TypeError("acl.prof.create_config: device_id_list must be a list of ints")
    prof = _prof(rt)
    if aicore_events not in (0, None) or not device_id_list:
        fail(C.ACL_ERROR_INVALID_PARAM, "aicore_events must be 0 and the device list non-empty")
        return 0
    return prof.create_config(device_id_list, aicore_metrics, data_type_config)


@needs_init()
def destroy_config(rt: Runtime, profiler_config: int) -> int:
    return _prof(rt).destroy_config(profiler_config)


@needs_init()
def start(rt: Runtime, profiler_config: int) -> int:
    return _prof(rt).start(profiler_config)


@needs_init()
def stop(rt: Runtime, profiler_config: int) -> int:
    return _prof(rt).stop(profiler_config)


# ---------------------------------------------------------------- step info
@needs_init(handle=True)
def create_step_info(rt: Runtime) -> int:
    prof = _prof(rt)
    handle = new_handle()
    prof.step_infos.add(handle)
    return handle


@needs_init()
def get_step_timestamp(rt: Runtime, step_info: int, tag: int, stream: int) -> int:
    prof = _prof(rt)
    if step_info not in prof.step_infos or tag not in (C.ACL_STEP_START, C.ACL_STEP_END):
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown step info or tag")
    target = rt.resolve_stream(stream)
    if isinstance(target, int):
        return target
    prof.step_record("start" if tag == C.ACL_STEP_START else "end", target.device.device_id)
    return C.ACL_SUCCESS


def destroy_step_info(step_info: int) -> None:
    prof = _profiler()
    if prof is not None:
        prof.step_infos.discard(step_info)


# ---------------------------------------------------------------- msproftx
@needs_init(handle=True)
def create_stamp(rt: Runtime) -> int:
    prof = _prof(rt)
    handle = new_handle()
    prof.stamps[handle] = ""
    return handle


def destroy_stamp(stamp: int) -> None:
    prof = _profiler()
    if prof is not None:
        prof.stamps.pop(stamp, None)


@needs_init()
def set_stamp_trace_message(rt: Runtime, stamp: int, msg: str, msg_len: int) -> int:
    prof = _prof(rt)
    if stamp not in prof.stamps:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown stamp")
    raw = msg.encode()
    if not 0 <= msg_len <= P.STAMP_MESSAGE_MAX:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"msg_len must be in [0, {P.STAMP_MESSAGE_MAX}]")
    prof.stamps[stamp] = raw[:msg_len].decode("utf-8", "replace")
    return C.ACL_SUCCESS


def _with_stamp(rt: Runtime, stamp: int, use: Callable[[P.Profiler, str, int], object]) -> int:
    """``use(profiler, message, now_ns)`` with the message of a created stamp; ret."""
    prof = _prof(rt)
    message = prof.stamps.get(stamp)
    if message is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown stamp")
    use(prof, message, now_ns())
    return C.ACL_SUCCESS


@needs_init()
def mark(rt: Runtime, stamp: int) -> int:
    return _with_stamp(rt, stamp, lambda prof, message, now: prof.tx_record("mark", message, now))


@needs_init()
def mark_ex(rt: Runtime, msg: str, stream: int) -> int:
    prof = _prof(rt)
    if len(msg.encode()) > P.STAMP_MESSAGE_MAX:
        return fail(C.ACL_ERROR_INVALID_PARAM, "message too long")
    prof.tx_record("mark", msg, now_ns())
    return C.ACL_SUCCESS


@needs_init()
def push(rt: Runtime, stamp: int) -> int:
    return _with_stamp(
        rt, stamp, lambda prof, message, now: prof.thread_stack().append((message, now))
    )


@needs_init()
def pop(rt: Runtime) -> int:
    prof = _prof(rt)
    stack = prof.thread_stack()
    if not stack:
        return fail(C.ACL_ERROR_INVALID_PARAM, "pop without a matching push on this thread")
    message, start_ns = stack.pop()
    prof.tx_record("push_pop", message, start_ns, now_ns())
    return C.ACL_SUCCESS


@needs_init(0)
def range_start(rt: Runtime, stamp: int) -> tuple[int, int]:
    prof = _prof(rt)
    message = prof.stamps.get(stamp)
    if message is None:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "unknown stamp")
    range_id = prof.take_range_id()
    prof.ranges[range_id] = (message, now_ns(), stamp)
    return range_id, C.ACL_SUCCESS


@needs_init()
def range_stop(rt: Runtime, range_id: int) -> int:
    prof = _prof(rt)
    entry = prof.ranges.pop(range_id, None)
    if entry is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"no open range {range_id}")
    message, start_ns, _ = entry
    prof.tx_record("range", message, start_ns, now_ns())
    return C.ACL_SUCCESS


# ---------------------------------------------------------------- subscription
@needs_init(handle=True)
def create_subscribe_config(
    rt: Runtime, time_info_switch: int, aicore_metrics: int, fd: int
) -> int:
    prof = _prof(rt)
    return prof.create_subscribe_config(time_info_switch, aicore_metrics, fd)


@needs_init()
def destroy_subscribe_config(rt: Runtime, subscribe_config: int) -> int:
    return _prof(rt).destroy_subscribe_config(subscribe_config)


@needs_init()
def model_subscribe(rt: Runtime, model_id: int, subscribe_config: int) -> int:
    return _prof(rt).subscribe(model_id, subscribe_config, model_id in rt.models)


@needs_init()
def model_un_subscribe(rt: Runtime, model_id: int) -> int:
    return _prof(rt).unsubscribe(model_id)


@needs_init()
def model_unsubscribe(rt: Runtime, model_id: int) -> int:
    return _prof(rt).unsubscribe(model_id)


def get_op_desc_size() -> tuple[int, int]:
    return P.OP_RECORD_SIZE, C.ACL_SUCCESS


def _records(op_info: int, op_info_len: int) -> list | int:
    if not op_info or op_info_len <= 0 or op_info_len > (64 << 20):
        return fail(C.ACL_ERROR_INVALID_PARAM, "invalid op info buffer")
    return P.decode_records(H.read_host(op_info, op_info_len))


def _record(op_info: int, op_info_len: int, index: int) -> tuple | int:
    records = _records(op_info, op_info_len)
    if isinstance(records, int):
        return records
    if not 0 <= index < len(records):
        return fail(C.ACL_ERROR_INVALID_PARAM, f"no operator {index} in the op info")
    return records[index]


def get_op_num(op_info: int, op_info_len: int) -> tuple[int, int]:
    records = _records(op_info, op_info_len)
    if isinstance(records, int):
        return 0, records
    return len(records), C.ACL_SUCCESS


def _string(
    op_info: int, op_info_len: int, index: int, field: int, limit: int | None
) -> tuple[str, int]:
    if limit is not None and (limit > P.MAX_STRING_LEN or limit <= 0):
        return "", fail(C.ACL_ERROR_INVALID_PARAM, "length must be in [1, 4096]")
    record = _record(op_info, op_info_len, index)
    if isinstance(record, int):
        return "", record
    text = P.record_string(record[field])
    if limit is not None and len(text.encode()) >= limit:
        return "", fail(C.ACL_ERROR_INVALID_PARAM, "the buffer length is too small")
    return text, C.ACL_SUCCESS


def get_op_type(op_info: int, op_info_len: int, index: int, op_type_len: int) -> tuple[str, int]:
    return _string(op_info, op_info_len, index, 5, op_type_len)


def get_op_name(op_info: int, op_info_len: int, index: int, op_name_len: int) -> tuple[str, int]:
    return _string(op_info, op_info_len, index, 6, op_name_len)


def get_op_type_v2(op_info: int, op_info_len: int, index: int) -> tuple[str | None, int]:
    text, code = _string(op_info, op_info_len, index, 5, None)
    return (text if code == 0 else None), code


def get_op_name_v2(op_info: int, op_info_len: int, index: int) -> tuple[str | None, int]:
    text, code = _string(op_info, op_info_len, index, 6, None)
    return (text if code == 0 else None), code


def get_op_type_len(op_info: int, op_info_len: int, index: int) -> tuple[int, int]:
    text, code = _string(op_info, op_info_len, index, 5, None)
    return (len(text.encode()) + 1 if code == 0 else 0), code


def get_op_name_len(op_info: int, op_info_len: int, index: int) -> tuple[int, int]:
    text, code = _string(op_info, op_info_len, index, 6, None)
    return (len(text.encode()) + 1 if code == 0 else 0), code


def _value(op_info: int, op_info_len: int, index: int, field: int) -> int:
    record = _record(op_info, op_info_len, index)
    return 0 if isinstance(record, int) else int(record[field])


def get_op_start(op_info: int, op_info_len: int, index: int) -> int:
    return _value(op_info, op_info_len, index, 2)


def get_op_end(op_info: int, op_info_len: int, index: int) -> int:
    return _value(op_info, op_info_len, index, 3)


def get_op_duration(op_info: int, op_info_len: int, index: int) -> int:
    return _value(op_info, op_info_len, index, 4)


def get_model_id(op_info: int, op_info_len: int, index: int) -> int:
    return _value(op_info, op_info_len, index, 0)
