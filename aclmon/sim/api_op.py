"""``acl.op.*``: single-operator execution (see :mod:`aclmon.sim.single_op`).

Attributes (``create_attr``, ``set_attr_*``), loading the operators' descriptions
(``set_model_dir``), compiling one at run time (``compile``), executing one
(``execute``/``execute_v2``, ``create_handle``/``execute_with_handle``, ``cast``,
``compile_and_execute``). Execution is asynchronous on the given stream, as on the
device: the next synchronize reports a device-side failure.
"""

from __future__ import annotations

from typing import Any

from aclmon import acl_constants as C
from aclmon.sim import host as H
from aclmon.sim import model as M
from aclmon.sim import single_op as S
from aclmon.sim.errmsg import fail
from aclmon.sim.guard import needs_init
from aclmon.sim.runtime import Runtime


# ---------------------------------------------------------------- attributes
def create_attr() -> int:
    return H.register(S.ATTRS, {})


def destroy_attr(attr: int) -> None:
    S.ATTRS.pop(attr, None)


def _set_attr(attr: int, name: str, value: Any) -> int:
    found = S.ATTRS.get(attr)
    if found is None or not name:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown attribute object or empty name")
    found[name] = value
    return C.ACL_SUCCESS


def set_attr_bool(attr: int, attr_name: str, attr_value: int) -> int:
    return _set_attr(attr, attr_name, bool(attr_value))


def set_attr_int(attr: int, attr_name: str, attr_value: int) -> int:
    return _set_attr(attr, attr_name, int(attr_value))


def set_attr_float(attr: int, attr_name: str, attr_value: float) -> int:
    return _set_attr(attr, attr_name, float(attr_value))


def set_attr_string(attr: int, attr_name: str, attr_value: str) -> int:
    return _set_attr(attr, attr_name, str(attr_value))


def set_attr_list_bool(attr: int, attr_name: str, values: Any) -> int:
    return _set_attr(attr, attr_name, [bool(v) for v in values])


def set_attr_list_int(attr: int, attr_name: str, values: Any) -> int:
    return _set_attr(attr, attr_name, [int(v) for v in values])


def set_attr_list_float(attr: int, attr_name: str, values: Any) -> int:
    return _set_attr(attr, attr_name, [float(v) for v in values])


def set_attr_list_string(attr: int, attr_name: str, values: list[str]) -> int:
    return _set_attr(attr, attr_name, [str(v) for v in values])


def set_attr_list_list_int(attr: int, attr_name: str, values: list[Any]) -> int:
    return _set_attr(attr, attr_name, [[int(v) for v in row] for row in values])


def set_attr_data_type(attr: int, attr_name: str, attr_value: int) -> tuple[int, int]:
    # pyACL returns the attribute object with the code for this one.
    return attr, _set_attr(attr, attr_name, int(attr_value))


# ---------------------------------------------------------------- loading, compiling
@needs_init()
def set_model_dir(rt: Runtime, model_dir: str) -> int:
    return S.load_model_dir(rt, model_dir)


@needs_init()
def compile(
    rt: Runtime,
    op_type: str,
    input_desc: list[int],
    output_desc: list[int],
    attr: int,
    engine_type: int,
    compile_flag: int,
    op_path: str | None,
) -> int:
    call = S.call_of(op_type, input_desc, output_desc, attr)
    if isinstance(call, int):
        return call
    return S.compile_call(rt, call)


# ---------------------------------------------------------------- executing
def _run(rt: Runtime, call: S.OpCall, inputs: list[int], outputs: list[int], stream: int) -> int:
    target = rt.resolve_stream(stream)
    if isinstance(target, int):
        return target
    if len(inputs) != len(call.inputs) or len(outputs) != len(call.outputs):
        return fail(
            C.ACL_ERROR_INVALID_PARAM,
            f"{call.op_type}: {len(call.inputs)} input and {len(call.outputs)} output descs "
            f"for {len(inputs)} input and {len(outputs)} output buffers",
        )
    model = S.model_for(rt, call, target.device)
    if isinstance(model, int):
        return model
    consts = {index for index, _ in call.consts}
    try:
        in_addresses = [H.DATA_BUFFERS[b][0] for i, b in enumerate(inputs) if i not in consts]
        out_addresses = [(H.DATA_BUFFERS[b][0], H.DATA_BUFFERS[b][1]) for b in outputs]
    except KeyError:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{call.op_type}: a buffer is not a data buffer")
    return M.execute(rt, model, target, in_addresses, out_addresses)


@needs_init()
def execute_v2(
    rt: Runtime,
    op_type: str,
    input_desc: list[int],
    inputs: list[int],
    output_desc: list[int],
    outputs: list[int],
    attr: int,
    stream: int,
) -> int:
    return _run_described(rt, op_type, input_desc, inputs, output_desc, outputs, attr, stream)


@needs_init()
def execute(
    rt: Runtime,
    op_type: str,
    input_desc: list[int],
    inputs: list[int],
    output_desc: list[int],
    outputs: list[int],
    attr: int,
    stream: int,
) -> int:
    """pyACL's older name of execute_v2, kept by CANN (deprecated)."""
    return _run_described(rt, op_type, input_desc, inputs, output_desc, outputs, attr, stream)


def _run_described(
    rt: Runtime,
    op_type: str,
    input_desc: list[int],
    inputs: list[int],
    output_desc: list[int],
    outputs: list[int],
    attr: int,
    stream: int,
) -> int:
    call = S.call_of(op_type, input_desc, output_desc, attr)
    if isinstance(call, int):
        return call
    return _run(rt, call, inputs, outputs, stream)


@needs_init()
def compile_and_execute(
    rt: Runtime,
    op_type: str,
    input_desc: list[int],
    inputs: list[int],
    output_desc: list[int],
    outputs: list[int],
    attr: int,
    engine_type: int,
    compile_flag: int,
    op_path: str | None,
    stream: int,
) -> int:
    call = S.call_of(op_type, input_desc, output_desc, attr)
    if isinstance(call, int):
        return call
    code = S.compile_call(rt, call)
    if code:
        return code
    return _run(rt, call, inputs, outputs, stream)


@needs_init(0, 0)
def create_handle(
    rt: Runtime, op_type: str, input_desc: list[int], output_desc: list[int], op_attr: int
) -> tuple[int, int]:
    return _create_handle(rt, S.call_of(op_type, input_desc, output_desc, op_attr))


def _create_handle(rt: Runtime, call: S.OpCall | int) -> tuple[int, int]:
    if isinstance(call, int):
        return 0, call
    ctx = rt.current_context()
    if ctx is None:
        return 0, fail(C.ACL_ERROR_RT_CONTEXT_NULL, "no current context")
    model = S.model_for(rt, call, ctx.device)
    if isinstance(model, int):
        return 0, model
    return H.register(S.HANDLES, call), C.ACL_SUCCESS


@needs_init(0, 0)
def create_handle_for_cast(
    rt: Runtime, src_desc: int, dst_desc: int, truncate: int
) -> tuple[int, int]:
    return _create_handle(rt, S.call_of("Cast", [src_desc], [dst_desc], 0))


def destroy_handle(handle: int) -> None:
    S.HANDLES.pop(handle, None)


@needs_init()
def execute_with_handle(
    rt: Runtime, handle: int, inputs: list[int], outputs: list[int], stream: int
) -> int:
    call = S.HANDLES.get(handle)
    if call is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{handle:#x} is not an operator handle")
    return _run(rt, call, inputs, outputs, stream)


@needs_init()
def cast(
    rt: Runtime,
    src_desc: int,
    src_buffer: int,
    dst_desc: int,
    dst_buffer: int,
    truncate: int,
    stream: int,
) -> int:
    call = S.call_of("Cast", [src_desc], [dst_desc], 0)
    if isinstance(call, int):
        return call
    return _run(rt, call, [src_buffer], [dst_buffer], stream)
