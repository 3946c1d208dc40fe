"""``acl.mdl.*``: model load/unload, model descs, datasets, execute, op descs."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import aipp, gears, omfile
from aclmon.sim import host as H
from aclmon.sim import model as M
from aclmon.sim import model_description as MD
from aclmon.sim import runtime as R
from aclmon.sim.accessors import named
from aclmon.sim.acljson import AclJsonError, parse_acl_json
from aclmon.sim.errmsg import fail
from aclmon.sim.guard import needs_init
from aclmon.sim.runtime import Runtime

MAX_OP_NAME_LEN = 4096


def _load(rt: Runtime, loader: Any) -> tuple[int, int]:
    ctx = rt.current_context()
    if ctx is None:
        return 0, fail(C.ACL_ERROR_RT_CONTEXT_NULL, "no current context")
    try:
        parsed = loader()
    except OSError as exc:
        return 0, fail(C.ACL_ERROR_INVALID_FILE, f"cannot read the model: {exc.strerror}")
    except MD.ModelError as exc:
        return 0, fail(C.ACL_ERROR_PARSE_FILE, str(exc))
    with rt.lock:
        built = M.build_model(rt, parsed, ctx.device)
        if isinstance(built, int):
            return 0, built
        rt.models[built.model_id] = built
    return built.model_id, C.ACL_SUCCESS


def _described(models: dict[str, str], model_path: str) -> str | int:
    """The description to run for ``model_path`` (itself, a sidecar or a mapping)."""
    described, header = omfile.description_for(model_path, models)
    if described is None:
        exists = os.path.exists(model_path)
        return fail(C.ACL_ERROR_INVALID_FILE, omfile.missing_message(model_path, header, exists))
    return described


def _from_memory(models: dict[str, str], raw: bytes) -> dict[str, Any]:
    if omfile.looks_like_description(raw):
        return MD.load_description_bytes(raw, "memory")
    header = omfile.read_header(raw)
    found = omfile.mapped(models, None, header.name if header else None)
    if found is None:
        what = f"an offline model named {header.name!r}" if header else "not a model description"
        raise MD.ModelError(
            f"the model in memory is {what}; map its name to a model description in the "
            "'models' of ACLMON_SIM_CONFIG (see docs/sim.md)"
        )
    return MD.load_description_file(found)


@needs_init(0)
def load_from_file(rt: Runtime, model_path: str) -> tuple[int, int]:
    described = _described(dict(rt.config.models), model_path)
    if isinstance(described, int):
        return 0, described
    return _load(rt, lambda: MD.load_description_file(described))


@needs_init(0)
def load_from_mem(rt: Runtime, model: int, model_size: int) -> tuple[int, int]:
    if not model or model_size <= 0 or model_size > MD.MAX_MODEL_BYTES:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "invalid model buffer")
    models = dict(rt.config.models)
    return _load(rt, lambda: _from_memory(models, H.read_host(model, model_size)))


def _user_memory(rt: Runtime, pointer: int, size: int, what: str) -> int:
    """0 when user-managed memory (or none, ptr 0) is acceptable, else the error code."""
    if not pointer:
        return C.ACL_SUCCESS
    if size <= 0 or rt.find_allocation(pointer, size) is None:
        return fail(
            C.ACL_ERROR_INVALID_PARAM, f"{what} {pointer:#x} is not {size} bytes of device memory"
        )
    return C.ACL_SUCCESS


@needs_init(0)
def load_from_file_with_mem(
    rt: Runtime, model_path: str, work_ptr: int, work_size: int, weight_ptr: int, weight_size: int
) -> tuple[int, int]:
    code = _user_memory(rt, work_ptr, work_size, "work_ptr") or _user_memory(
        rt, weight_ptr, weight_size, "weight_ptr"
    )
    if code:
        return 0, code
    described = _described(dict(rt.config.models), model_path)
    if isinstance(described, int):
        return 0, described
    return _load(rt, lambda: MD.load_description_file(described))


@needs_init(0)
def load_from_mem_with_mem(
    rt: Runtime,
    model: int,
    model_size: int,
    work_ptr: int,
    work_size: int,
    weight_ptr: int,
    weight_size: int,
) -> tuple[int, int]:
    if not model or model_size <= 0 or model_size > MD.MAX_MODEL_BYTES:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "invalid model buffer")
    code = _user_memory(rt, work_ptr, work_size, "work_ptr") or _user_memory(
        rt, weight_ptr, weight_size, "weight_ptr"
    )
    if code:
        return 0, code
    models = dict(rt.config.models)
    return _load(rt, lambda: _from_memory(models, H.read_host(model, model_size)))


def query_size(model_path: str) -> tuple[int, int, int]:
    rt = R.runtime()
    described = _described(dict(rt.config.models) if rt is not None else {}, model_path)
    if isinstance(described, int):
        return 0, 0, described
    try:
        parsed = MD.load_description_file(described)
    except OSError as exc:
        return 0, 0, fail(C.ACL_ERROR_INVALID_FILE, f"cannot read the model: {exc.strerror}")
    except MD.ModelError as exc:
        return 0, 0, fail(C.ACL_ERROR_PARSE_FILE, str(exc))
    weights = sum(s.nbytes for s in parsed["weights"])
    work = sum(s.nbytes for op in parsed["ops"] for s in op.outputs)
    return work, weights, C.ACL_SUCCESS


@needs_init()
def unload(rt: Runtime, model_id: int) -> int:
    with rt.lock:
        found = rt.models.pop(model_id, None)
        if found is None:
            return fail(C.ACL_ERROR_INVALID_MODEL_ID, f"model {model_id} is not loaded")
        M.release_model(rt, found)
    return C.ACL_SUCCESS


# ---------------------------------------------------------------- model descs
def create_desc() -> int:
    return H.register(H.MODEL_DESCS, None)


def destroy_desc(model_desc: int) -> int:
    return H.unregister(H.MODEL_DESCS, model_desc, "model desc")


@needs_init()
def get_desc(rt: Runtime, model_desc: int, model_id: int) -> int:
    if model_desc not in H.MODEL_DESCS:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown model desc")
    found = rt.models.get(model_id)
    if found is None:
        return fail(C.ACL_ERROR_INVALID_MODEL_ID, f"model {model_id} is not loaded")
    H.MODEL_DESCS[model_desc] = found
    return C.ACL_SUCCESS


def _specs(model_desc: int, outputs: bool) -> tuple[MD.TensorSpec, ...]:
    found = H.MODEL_DESCS.get(model_desc)
    if found is None:
        return ()
    return found.outputs if outputs else found.inputs


def _spec(model_desc: int, index: int, outputs: bool) -> MD.TensorSpec | None:
    specs = _specs(model_desc, outputs)
    return specs[index] if 0 <= index < len(specs) else None


def get_num_inputs(model_desc: int) -> int:
    return len(_specs(model_desc, False))


def get_num_outputs(model_desc: int) -> int:
    return len(_specs(model_desc, True))


def _tensor_getter(
    side: str, field: str, attr: str, default: object, words: str
) -> Callable[[int, int], Any]:
    outputs = side == "output"

    def getter(model_desc: int, index: int) -> Any:
        spec = _spec(model_desc, index, outputs)
        return getattr(spec, attr) if spec is not None else default

    doc = f"The {words} of a model description's {side} ``index``; {default!r} for a bad index."
    return named(getter, f"get_{side}_{field}", doc)


#: get_{input,output}_<field>: the tensor spec attribute it reads, what a bad index
#: gives, and what it is in words.
_TENSOR_FIELDS = {
    "size_by_index": ("nbytes", 0, "size in bytes"),
    "data_type": ("acl_dtype", C.ACL_DT_UNDEFINED, "aclDataType"),
    "format": ("acl_format", C.ACL_FORMAT_UNDEFINED, "aclFormat"),
    "name_by_index": ("name", "", "tensor name"),
}
(
    get_input_size_by_index,
    get_input_data_type,
    get_input_format,
    get_input_name_by_index,
) = (_tensor_getter("input", field, *read) for field, read in _TENSOR_FIELDS.items())
(
    get_output_size_by_index,
    get_output_data_type,
    get_output_format,
    get_output_name_by_index,
) = (_tensor_getter("output", field, *read) for field, read in _TENSOR_FIELDS.items())


def _dims(
    model_desc: int, index: int, outputs: bool, *, image: bool = False
) -> tuple[dict[str, Any], int]:
    spec = _spec(model_desc, index, outputs)
    if spec is None:
        return {}, fail(C.ACL_ERROR_INVALID_PARAM, "no tensor at that index")
    dims = list(spec.device_shape)
    found = H.MODEL_DESCS.get(model_desc)
    if not outputs and found is not None and found.input_dims:
        dims = list(found.input_dims[index])  # -1 marks the dynamic dimensions
    if image and found is not None and index in found.aipp_dims:
        dims = list(found.aipp_dims[index])  # the picture's own [n, h, w, c]
    return {"name": spec.name, "dimCount": len(dims), "dims": dims}, C.ACL_SUCCESS


def get_input_dims(model_desc: int, index: int) -> tuple[dict[str, Any], int]:
    """The input's dims; for a static AIPP input those of the image, NHWC [n, h, w, c]."""
    return _dims(model_desc, index, False, image=True)


def get_output_dims(model_desc: int, index: int) -> tuple[dict[str, Any], int]:
    return _dims(model_desc, index, True)


def get_input_dims_v2(model_desc: int, index: int) -> tuple[dict[str, Any], int]:
    """The input's dims; for a static AIPP input as its buffer holds the image (YUV420SP:
    [n, h * 1.5, w, 1], whose product is the input size)."""
    return _dims(model_desc, index, False)


@needs_init(0, 0)
def get_aipp_type(rt: Runtime, model_id: int, index: int) -> tuple[int, int, int]:
    """(static AIPP or none, the dynamic AIPP input it is attached to: 0, none here, ret)."""
    found = rt.models.get(model_id)
    if found is None:
        return 0, 0, fail(C.ACL_ERROR_INVALID_MODEL_ID, f"model {model_id} is not loaded")
    if not 0 <= index < len(found.inputs):
        return 0, 0, fail(C.ACL_ERROR_INVALID_PARAM, f"model {model_id} has no input {index}")
    kind = (
        aipp.ACL_DATA_WITH_STATIC_AIPP if index in found.aipp_dims else aipp.ACL_DATA_WITHOUT_AIPP
    )
    return kind, 0, C.ACL_SUCCESS


def get_cur_output_dims(model_desc: int, index: int) -> tuple[dict[str, Any], int]:
    """The dims of the gear set last (set_dynamic_*), else of the biggest gear."""
    found = H.MODEL_DESCS.get(model_desc)
    if found is None or not 0 <= index < len(found.outputs):
        return {}, fail(C.ACL_ERROR_INVALID_PARAM, "no output at that index")
    graph = found.gears.get(found.current_gear, found) if found.current_gear else found
    spec = graph.outputs[index]
    dims = list(spec.device_shape)
    return {"name": spec.name, "dimCount": len(dims), "dims": dims}, C.ACL_SUCCESS


# ---------------------------------------------------------------- dynamic shapes
def get_dynamic_batch(model_desc: int) -> tuple[dict[str, Any], int]:
    found = H.MODEL_DESCS.get(model_desc)
    if model_desc not in H.MODEL_DESCS:
        return {}, fail(C.ACL_ERROR_INVALID_PARAM, "unknown model desc")
    batches = [g[0] for g in found.gears] if found is not None and found.dynamic == "batch" else []
    return {"batchCount": len(batches), "batch": batches}, C.ACL_SUCCESS


def get_dynamic_hw(model_desc: int, index: int) -> tuple[dict[str, Any], int]:
    found = H.MODEL_DESCS.get(model_desc)
    if model_desc not in H.MODEL_DESCS:
        return {}, fail(C.ACL_ERROR_INVALID_PARAM, "unknown model desc")
    hws = [list(g) for g in found.gears] if found is not None and found.dynamic == "hw" else []
    return {"hwCount": len(hws), "hw": hws}, C.ACL_SUCCESS


def get_input_dynamic_gear_count(model_desc: int, index: int) -> tuple[int, int]:
    """How many gears of dynamic dims (``--dynamic_dims``) the model has; 0 for others."""
    found = H.MODEL_DESCS.get(model_desc)
    if model_desc not in H.MODEL_DESCS:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "unknown model desc")
    dims = found is not None and found.dynamic == gears.KIND_DIMS
    return (len(found.gears) if dims and found is not None else 0), C.ACL_SUCCESS


def get_input_dynamic_dims(
    model_desc: int, index: int, gear_count: int
) -> tuple[list[dict[str, Any]], int]:
    """Each gear as ``{name, dimCount, dims}``: every input's dims, one after the other."""
    found = H.MODEL_DESCS.get(model_desc)
    if found is None or found.dynamic != gears.KIND_DIMS:
        return [], fail(C.ACL_ERROR_INVALID_PARAM, "the model has no dynamic dims")
    if gear_count != len(found.gears):
        return [], fail(
            C.ACL_ERROR_INVALID_PARAM,
            f"gear_count is {gear_count}, the model has {len(found.gears)} gears",
        )
    return [
        {"name": "", "dimCount": len(dims), "dims": list(dims)} for dims in found.gear_dims.values()
    ], C.ACL_SUCCESS


def _set_gear(
    rt: Runtime, model_id: int, dataset: int, index: int, kind: str, gear: tuple[int, ...]
) -> int:
    found = rt.models.get(model_id)
    if found is None:
        return fail(C.ACL_ERROR_INVALID_MODEL_ID, f"model {model_id} is not loaded")
    buffers = H.DATASETS.get(dataset)
    if buffers is None or not 0 <= index < len(buffers) or buffers[index] not in H.DATA_BUFFERS:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"the dataset has no buffer {index}")
    address, size = H.DATA_BUFFERS[buffers[index]]
    needed = 8 * len(gear)
    if size < needed:
        return fail(
            C.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID,
            f"Dynamic input size [{size}] is less than [{needed}], model id:{model_id}",
        )
    if rt.find_allocation(address, needed) is None:
        return fail(
            C.ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID,
            f"dynamic input {address:#x} is not device memory, model id:{model_id}",
        )
    if found.dynamic != kind or gear not in found.gears:
        return fail(
            C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID,
            f"The current dynamic input does not match the gear of the model(id:{model_id}).",
        )
    rt.write_device(address, np.array(gear, dtype=np.int64))
    found.current_gear = gear
    return C.ACL_SUCCESS


@needs_init()
def set_dynamic_batch_size(
    rt: Runtime, model_id: int, dataset: int, index: int, batch_size: int
) -> int:
    return _set_gear(rt, model_id, dataset, index, "batch", (batch_size,))


@needs_init()
def set_dynamic_hw_size(
    rt: Runtime, model_id: int, dataset: int, index: int, height: int, width: int
) -> int:
    return _set_gear(rt, model_id, dataset, index, "hw", (height, width))


@needs_init()
def set_input_dynamic_dims(
    rt: Runtime, model_id: int, dataset: int, index: int, dims: dict[str, Any]
) -> int:
    found = rt.models.get(model_id)
    if found is None:
        return fail(C.ACL_ERROR_INVALID_MODEL_ID, f"model {model_id} is not loaded")
    if not isinstance(dims, dict):
        raise TypeError("acl.mdl.set_input_dynamic_dims args parse failed: dims is a dict")
    values = tuple(int(v) for v in dims.get("dims", ()))
    count = dims.get("dimCount", len(values))
    if count != len(values):
        return fail(C.ACL_ERROR_INVALID_PARAM, f"dimCount {count} for {len(values)} dims")
    gear = next((g for g, full in found.gear_dims.items() if full == values), None)
    if gear is None or found.dynamic != gears.KIND_DIMS:
        return fail(
            C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID,
            f"The current dynamic input does not match the gear of the model(id:{model_id}).",
        )
    return _set_gear(rt, model_id, dataset, index, gears.KIND_DIMS, gear)


def _index_by_name(model_desc: int, name: str, outputs: bool) -> tuple[int, int]:
    for index, spec in enumerate(_specs(model_desc, outputs)):
        if spec.name == name:
            return index, C.ACL_SUCCESS
    side = "output" if outputs else "input"
    return -1, fail(C.ACL_ERROR_INVALID_PARAM, f"no {side} named {name!r}")


def get_input_index_by_name(model_desc: int, name: str) -> tuple[int, int]:
    return _index_by_name(model_desc, name, False)


def get_output_index_by_name(model_desc: int, name: str) -> tuple[int, int]:
    return _index_by_name(model_desc, name, True)


# ---------------------------------------------------------------- datasets
def create_dataset() -> int:
    return H.register(H.DATASETS, [])


def destroy_dataset(dataset: int) -> int:
    return H.unregister(H.DATASETS, dataset, "dataset")


def add_dataset_buffer(dataset: int, data_buffer: int) -> tuple[int, int]:
    buffers = H.DATASETS.get(dataset)
    if buffers is None or data_buffer not in H.DATA_BUFFERS:
        return dataset, fail(C.ACL_ERROR_INVALID_PARAM, "unknown dataset or data buffer")
    buffers.append(data_buffer)
    return dataset, C.ACL_SUCCESS


def get_dataset_num_buffers(dataset: int) -> int:
    return len(H.DATASETS.get(dataset, ()))


def get_dataset_buffer(dataset: int, index: int) -> int:
    buffers = H.DATASETS.get(dataset, [])
    return buffers[index] if 0 <= index < len(buffers) else 0


# ---------------------------------------------------------------- execute
def _launch(
    rt: Runtime, model_id: int, input_dataset: int, output_dataset: int, stream: int
) -> tuple[Any, int]:
    found = rt.models.get(model_id)
    if found is None:
        return None, fail(C.ACL_ERROR_INVALID_MODEL_ID, f"model {model_id} is not loaded")
    target = rt.resolve_stream(stream)
    if isinstance(target, int):
        return None, target
    if stream and target.context is not rt.current_context():
        return None, fail(C.ACL_ERROR_RT_STREAM_CONTEXT, "the stream is not in the current context")
    in_bufs = H.DATASETS.get(input_dataset)
    out_bufs = H.DATASETS.get(output_dataset)
    if in_bufs is None or out_bufs is None:
        return None, fail(C.ACL_ERROR_INVALID_PARAM, "unknown input or output dataset")
    if len(in_bufs) != len(found.inputs) or len(out_bufs) != len(found.outputs):
        return None, fail(
            C.ACL_ERROR_INVALID_PARAM,
            f"model {found.name} takes {len(found.inputs)} inputs and {len(found.outputs)} outputs",
        )
    try:
        in_addresses = [H.DATA_BUFFERS[b][0] for b in in_bufs]
        out_addresses = [(H.DATA_BUFFERS[b][0], H.DATA_BUFFERS[b][1]) for b in out_bufs]
    except KeyError:
        return None, fail(C.ACL_ERROR_INVALID_PARAM, "a dataset holds a destroyed data buffer")
    graph = found
    if found.gears:
        mbatch = found.inputs[found.mbatch_index]
        raw = rt.read_device(in_addresses[found.mbatch_index], mbatch.nbytes)
        gear = tuple(int(v) for v in raw.view(np.int64)) if raw is not None else ()
        if gear not in found.gears:
            return None, fail(
                C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID,
                f"model {found.name}: the {gears.MBATCH_INPUT} input holds {list(gear)}, not "
                "one of the model's gears (call set_dynamic_batch_size, set_dynamic_hw_size"
                " or set_input_dynamic_dims)",
            )
        graph = found.gears[gear]
        graph.steps = found.steps
    code = M.execute(rt, graph, target, in_addresses, out_addresses)
    found.steps = graph.steps
    return target, code


@needs_init()
def execute(rt: Runtime, model_id: int, input_dataset: int, output_dataset: int) -> int:
    stream, code = _launch(rt, model_id, input_dataset, output_dataset, 0)
    if code:
        return code
    return rt.wait_stream(stream)


@needs_init()
def execute_async(
    rt: Runtime, model_id: int, input_dataset: int, output_dataset: int, stream: int
) -> int:
    return _launch(rt, model_id, input_dataset, output_dataset, stream)[1]


# ---------------------------------------------------------------- op descs
@needs_init("", 0, 0, 0, 0)
def create_and_get_op_desc(
    rt: Runtime, device_id: int, stream_id: int, task_id: int, op_name_len: int
) -> tuple[str, int, int, int, int, int]:
    empty = ("", 0, 0, 0, 0)
    if op_name_len > MAX_OP_NAME_LEN or op_name_len <= 0:
        return (*empty, fail(C.ACL_ERROR_INVALID_PARAM, "op_name_len must be in [1, 4096]"))
    record = rt.tasks.get((device_id, stream_id, task_id))
    if record is None:
        return (*empty, fail(C.ACL_ERROR_OP_NOT_FOUND, "no operator ran as that task"))
    op = record.op
    if len(op.name.encode()) >= op_name_len:
        return (*empty, fail(C.ACL_ERROR_INVALID_PARAM, "op_name_len is too small"))
    specs = record.model.specs

    def desc_array(names: list[str]) -> int:
        members = [
            H.register(
                H.TENSOR_DESCS,
                H.TensorDesc(
                    specs[name].acl_dtype,
                    specs[name].device_shape,
                    specs[name].acl_format,
                    name,
                    record.addresses.get(name, 0),
                ),
            )
            for name in names
        ]
        return H.register(H.DESC_ARRAYS, members)

    inputs = list(op.inputs)
    outputs = [s.name for s in op.outputs]
    return (
        op.name,
        desc_array(inputs),
        len(inputs),
        desc_array(outputs),
        len(outputs),
        C.ACL_SUCCESS,
    )


# ---------------------------------------------------------------- dump API
@needs_init()
def init_dump(rt: Runtime) -> int:
    if rt.acl_json.dump is not None or rt.extras.get("dump_api"):
        return fail(C.ACL_ERROR_DUMP_ALREADY_RUN, "dump is already configured")
    rt.extras["dump_api"] = True
    return C.ACL_SUCCESS


@needs_init()
def set_dump(rt: Runtime, dump_cfg_path: str) -> int:
    if not rt.extras.get("dump_api"):
        return fail(C.ACL_ERROR_DUMP_NOT_RUN, "acl.mdl.init_dump was not called")
    try:
        parsed = parse_acl_json(dump_cfg_path)
    except AclJsonError as exc:
        return fail(exc.code, str(exc))
    # Applies to the executions that follow (CANN applies it to models loaded after).
    rt.acl_json = replace(rt.acl_json, dump=parsed.dump)
    return C.ACL_SUCCESS


@needs_init()
def finalize_dump(rt: Runtime) -> int:
    if not rt.extras.pop("dump_api", False):
        return fail(C.ACL_ERROR_DUMP_NOT_RUN, "acl.mdl.init_dump was not called")
    rt.acl_json = replace(rt.acl_json, dump=None)
    return C.ACL_SUCCESS
