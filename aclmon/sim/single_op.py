"""Single operators (``acl.op``): operator attributes, the operator models a program
loads or compiles, and each call as a one-operator model run on the device.

A real program loads single-operator models that ATC compiled from JSON operator
descriptions (``atc --singleop=op_list.json``) with ``acl.op.set_model_dir``, or
compiles an operator at run time (``acl.op.compile``). The sim cannot read the
compiled ``.om`` files; it reads those JSON descriptions instead (the samples
ship them next to their op models), and ``compile`` registers the operator it is
given. ``execute_v2`` then looks the call up among them by type, inputs and
outputs (dtype, format, shape; ``-1`` in a description is any size) and
attributes, as the runtime does, and runs it as a model of one operator through
the same executor as ``acl.mdl`` (task ids, device time, faults, exception
callback, op descs, dumps). Each distinct call is built once and kept, as the
runtime keeps its compiled operators.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import host as H
from aclmon.sim import layouts
from aclmon.sim import model as M
from aclmon.sim import model_description as MD
from aclmon.sim.errmsg import fail
from aclmon.sim.kernels import KERNELS
from aclmon.sim.runtime import Runtime

#: attribute-object handle -> {name: value}
ATTRS: dict[int, dict[str, Any]] = {}
#: operator handle (create_handle) -> the call it stands for
HANDLES: dict[int, OpCall] = {}

#: aclDataType -> the dtype names of operator descriptions ("float16", "int32", ...)
_DTYPE_NAMES = {code: name for name, code in layouts.DTYPE_BY_NAME.items()}
_FORMAT_NAMES = {code: name for name, code in layouts.FORMAT_BY_NAME.items()}
#: the ATC description's dtype spellings that differ from ours
_DESCRIPTION_DTYPES = {"float": C.ACL_FLOAT, "fp16": C.ACL_FLOAT16, "fp32": C.ACL_FLOAT}


@dataclass(frozen=True)
class TensorSig:
    """What matches an operator's input or output: dtype, format, shape."""

    dtype: int
    format: int
    shape: tuple[int, ...]

    def accepts(self, other: TensorSig) -> bool:
        """Whether a description (``self``, ``-1`` = any size) covers ``other``."""
        if self.dtype != other.dtype or len(self.shape) != len(other.shape):
            return False
        if C.ACL_FORMAT_ND not in (self.format, other.format) and self.format != other.format:
            return False
        return all(d in (-1, o) for d, o in zip(self.shape, other.shape, strict=True))


@dataclass(frozen=True)
class OpSig:
    op_type: str
    inputs: tuple[TensorSig, ...]
    outputs: tuple[TensorSig, ...]
    attrs: tuple[tuple[str, Any], ...] = ()

    def accepts(self, call: OpCall) -> bool:
        if self.op_type != call.op_type or len(self.inputs) != len(call.inputs):
            return False
        if len(self.outputs) != len(call.outputs):
            return False
        if not all(d.accepts(c) for d, c in zip(self.inputs, call.inputs, strict=True)):
            return False
        if not all(d.accepts(c) for d, c in zip(self.outputs, call.outputs, strict=True)):
            return False
        given = dict(call.attrs)
        return all(name in given and given[name] == value for name, value in self.attrs)


@dataclass(frozen=True)
class OpCall:
    """One operator call's signature, plus the constant inputs it carries."""

    op_type: str
    inputs: tuple[TensorSig, ...]
    outputs: tuple[TensorSig, ...]
    attrs: tuple[tuple[str, Any], ...]
    consts: tuple[tuple[int, bytes], ...] = ()


@dataclass
class OpRegistry:
    """The operators of one session: described (set_model_dir) or compiled."""

    described: list[OpSig] = field(default_factory=list)
    built: dict[OpCall, M.Model] = field(default_factory=dict)


def registry(rt: Runtime) -> OpRegistry:
    found = rt.extras.get("single_ops")
    if found is None:
        found = rt.extras["single_ops"] = OpRegistry()
    return found


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list | tuple) else value


def attrs_of(attr: int) -> tuple[tuple[str, Any], ...] | int:
    if attr == 0:
        return ()
    found = ATTRS.get(attr)
    if found is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{attr:#x} is not an operator attribute object")
    return tuple(sorted((k, _hashable(v)) for k, v in found.items()))


def call_of(
    op_type: str, input_descs: list[int], output_descs: list[int], attr: int
) -> OpCall | int:
    """The call a program describes with tensor descs and an attribute object."""
    attrs = attrs_of(attr)
    if isinstance(attrs, int):
        return attrs
    sigs: list[list[TensorSig]] = [[], []]
    consts: list[tuple[int, bytes]] = []
    for side, descs in enumerate((input_descs, output_descs)):
        for index, handle in enumerate(descs):
            desc = H.TENSOR_DESCS.get(handle)
            if desc is None:
                return fail(C.ACL_ERROR_INVALID_PARAM, f"{handle:#x} is not a tensor desc")
            if desc.acl_dtype not in layouts.ACL_TO_NUMPY:
                return fail(
                    C.ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                    f"{op_type}: data type {desc.acl_dtype} is not simulated",
                )
            sigs[side].append(TensorSig(desc.acl_dtype, desc.acl_format, tuple(desc.dims)))
            if side == 0 and desc.const_data is not None:
                consts.append((index, desc.const_data))
    return OpCall(op_type, tuple(sigs[0]), tuple(sigs[1]), attrs, tuple(consts))


# ---------------------------------------------------------------- descriptions
def _description_tensor(raw: Any, where: str) -> TensorSig:
    if not isinstance(raw, dict):
        raise MD.ModelError(f"{where}: a tensor must be an object")
    name = str(raw.get("type", "")).lower()
    dtype = _DESCRIPTION_DTYPES.get(name, layouts.DTYPE_BY_NAME.get(name))
    fmt = layouts.FORMAT_BY_NAME.get(str(raw.get("format", "ND")).upper())
    shape = raw.get("shape")
    if dtype is None or fmt is None or not isinstance(shape, list):
        raise MD.ModelError(f"{where}: needs a known type, format and a shape list")
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in shape):
        raise MD.ModelError(f"{where}: shape holds sizes or -1")
    return TensorSig(dtype, fmt, tuple(shape))


def parse_op_list(data: Any, source: str) -> list[OpSig]:
    """The operators of one ATC single-operator description (a list of ``op``
    entries with ``input_desc``, ``output_desc`` and ``attr``)."""
    if not isinstance(data, list):
        raise MD.ModelError(f"{source}: an operator description is a list of operators")
    ops = []
    for index, raw in enumerate(data):
        where = f"{source}[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("op"), str):
            raise MD.ModelError(f'{where}: each operator needs an "op" type')
        inputs = tuple(
            _description_tensor(t, f"{where}.input_desc[{i}]")
            for i, t in enumerate(raw.get("input_desc", []))
        )
        outputs = tuple(
            _description_tensor(t, f"{where}.output_desc[{i}]")
            for i, t in enumerate(raw.get("output_desc", []))
        )
        attrs = []
        for i, attr in enumerate(raw.get("attr", [])):
            if not isinstance(attr, dict) or not isinstance(attr.get("name"), str):
                raise MD.ModelError(f"{where}.attr[{i}]: an attribute needs a name")
            attrs.append((attr["name"], _hashable(attr.get("value"))))
        ops.append(OpSig(raw["op"], inputs, outputs, tuple(sorted(attrs))))
    return ops


def load_model_dir(rt: Runtime, model_dir: str) -> int:
    if not os.path.isdir(model_dir):
        return fail(C.ACL_ERROR_INVALID_FILE, f"{model_dir} is not a directory")
    found: list[OpSig] = []
    for name in sorted(os.listdir(model_dir)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(model_dir, name)
        try:
            with open(path, encoding="utf-8") as f:
                found.extend(parse_op_list(json.load(f), path))
        except (OSError, ValueError) as exc:
            return fail(C.ACL_ERROR_PARSE_FILE, f"cannot read operator description {path}: {exc}")
    if not found:
        return fail(
            C.ACL_ERROR_OP_LOAD_FAILED,
            f"{model_dir} holds no operator description (*.json, as given to atc --singleop)",
        )
    registry(rt).described.extend(found)
    return C.ACL_SUCCESS


def compile_call(rt: Runtime, call: OpCall) -> int:
    """``acl.op.compile``: the operator can run from now on."""
    if call.op_type not in KERNELS:
        return _no_kernel(call.op_type)
    registry(rt).described.append(
        OpSig(call.op_type, call.inputs, call.outputs, call.attrs),
    )
    return C.ACL_SUCCESS


def _no_kernel(op_type: str) -> int:
    return fail(
        C.ACL_ERROR_KERNEL_NOT_FOUND,
        f"operator type {op_type!r} has no simulated kernel (the sim runs "
        + ", ".join(sorted(KERNELS))
        + ")",
    )


# ---------------------------------------------------------------- running
def model_for(rt: Runtime, call: OpCall, device: Any) -> M.Model | int:
    """The one-operator model of ``call``, built on first use."""
    ops = registry(rt)
    built = ops.built.get(call)
    if built is not None:
        return built
    if call.op_type not in KERNELS:
        return _no_kernel(call.op_type)
    if not any(sig.accepts(call) for sig in ops.described):
        same_type = [sig for sig in ops.described if sig.op_type == call.op_type]
        return fail(
            C.ACL_ERROR_OP_NOT_FOUND,
            f"no operator model matches {call.op_type} with inputs "
            f"{[_sig_text(s) for s in call.inputs]} and outputs "
            f"{[_sig_text(s) for s in call.outputs]} ({len(same_type)} {call.op_type} "
            "loaded: set_model_dir with its description, or compile it first)",
        )
    try:
        parsed = MD.parse_description(_description_of(call), f"operator {call.op_type}")
    except MD.ModelError as exc:
        return fail(C.ACL_ERROR_OP_INPUT_NOT_MATCH, str(exc))
    with rt.lock:
        model = M.build_model(rt, parsed, device)
    if isinstance(model, int):
        return model
    ops.built[call] = model
    return model


def _sig_text(sig: TensorSig) -> str:
    return f"{_DTYPE_NAMES[sig.dtype]}{list(sig.shape)} {_FORMAT_NAMES.get(sig.format, sig.format)}"


def _tensor_raw(name: str, sig: TensorSig) -> dict[str, Any]:
    fmt = _FORMAT_NAMES.get(sig.format, "ND")
    # The sim keeps single-operator tensors in their logical layout.
    if fmt in ("NC1HWC0", "FRACTAL_NZ"):
        fmt = "ND"
    return {"name": name, "dtype": _DTYPE_NAMES[sig.dtype], "format": fmt, "shape": list(sig.shape)}


def _description_of(call: OpCall) -> dict[str, Any]:
    """A model description of one operator: the call's inputs (constant ones as
    weights with their values), the operator, its outputs."""
    consts = dict(call.consts)
    inputs, weights, names = [], [], []
    for index, sig in enumerate(call.inputs):
        name = f"x{index}"
        names.append(name)
        raw = _tensor_raw(name, sig)
        if index in consts:
            values = np.frombuffer(consts[index], dtype=layouts.ACL_TO_NUMPY[sig.dtype])
            weights.append({**raw, "init": "values", "values": values.tolist()})
        else:
            inputs.append(raw)
    outputs = [_tensor_raw(f"y{index}", sig) for index, sig in enumerate(call.outputs)]
    return {
        "name": call.op_type,
        "inputs": inputs,
        "weights": weights,
        "ops": [
            {
                "name": call.op_type,
                "type": call.op_type,
                "inputs": names,
                "attrs": {k: list(v) if isinstance(v, tuple) else v for k, v in call.attrs},
                "outputs": outputs,
            }
        ],
        "outputs": [o["name"] for o in outputs],
    }
