"""The JSON model description that stands in for an .om file (docs/sim.md): read
with a size bound, validated field by field (every fault a :class:`ModelError`
that says where), and turned into the pieces :func:`aclmon.sim.model.build_model`
needs: the tensors (:class:`TensorSpec`), the operators in order
(:class:`OpSpec`) and each operator's modelled duration.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aclmon.sim import aipp, gears, layouts
from aclmon.sim.devices import UNIT_CUBE, UNIT_VECTOR
from aclmon.sim.faults import FaultState
from aclmon.sim.kernels import CUBE_OPS, KERNELS

MAX_MODEL_BYTES = 16 << 20
MAX_TENSOR_ELEMENTS = 1 << 26
LAUNCH_NS = 2_000
#: the shortest time an operator keeps the cube / vector units: the tiny shipped models
#: stand in for real networks (whose convolutions and matmuls dominate), so a job
#: running ~18 of them a second shows a few percent of AI Core use, not 0.
CUBE_TASK_MIN_NS = 300_000
VECTOR_TASK_MIN_NS = 40_000
CUBE_FLOPS_PER_NS = 256_000.0
VECTOR_FLOPS_PER_NS = 8_000.0
HBM_BYTES_PER_NS = 1_600.0


class ModelError(ValueError):
    """The model description is invalid (message says where)."""


@dataclass
class TensorSpec:
    name: str
    acl_dtype: int
    acl_format: int
    shape: tuple[int, ...]  # logical (origin) shape
    dtype: np.dtype = field(init=False)
    device_shape: tuple[int, ...] = field(init=False)
    nbytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.dtype = layouts.ACL_TO_NUMPY[self.acl_dtype]
        self.device_shape = layouts.device_shape(self.shape, self.acl_format, self.acl_dtype)
        self.nbytes = int(np.prod(self.device_shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class OpSpec:
    index: int
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[TensorSpec, ...]
    attrs: dict[str, Any]
    cost_ns: int
    unit: int
    faults: tuple[FaultState, ...] = ()


# ---------------------------------------------------------------- parsing
def _named_object(raw: Any, where: str, what: str) -> str:
    """The name of ``what`` (a tensor, an operator): a JSON object with a non-empty name."""
    if not isinstance(raw, dict):
        raise ModelError(f"{where}: {what} must be an object")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ModelError(f"{where}: {what} needs a name")
    return name


def _define(specs: dict[str, TensorSpec], new: list[TensorSpec], where: str) -> None:
    """Add tensors to the model's namespace; each name is defined once."""
    for spec in new:
        if spec.name in specs:
            raise ModelError(f"{where}: tensor {spec.name} is defined twice")
        specs[spec.name] = spec


def _tensor(raw: Any, where: str) -> TensorSpec:
    name = _named_object(raw, where, "a tensor")
    dtype = layouts.DTYPE_BY_NAME.get(str(raw.get("dtype", "float16")).lower())
    if dtype is None:
        raise ModelError(f"{where}: tensor {name}: unknown dtype {raw.get('dtype')!r}")
    fmt = layouts.FORMAT_BY_NAME.get(str(raw.get("format", "ND")).upper())
    if fmt is None:
        raise ModelError(f"{where}: tensor {name}: unknown format {raw.get('format')!r}")
    shape = raw.get("shape")
    if (
        not isinstance(shape, list)
        or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)
        or int(np.prod(shape, dtype=np.int64)) > MAX_TENSOR_ELEMENTS
    ):
        raise ModelError(f"{where}: tensor {name}: shape must be a list of positive integers")
    try:
        return TensorSpec(name, dtype, fmt, tuple(shape))
    except ValueError as exc:
        raise ModelError(f"{where}: tensor {name}: {exc}") from None


def _op_cost_ns(op_type: str, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> int:
    """Roofline-style duration: launch + max(compute, memory traffic)."""
    out_elems = sum(int(np.prod(t.shape)) for t in outputs)
    moved = sum(t.nbytes for t in inputs) + sum(t.nbytes for t in outputs)
    if op_type in ("MatMul", "BatchMatMul") and len(inputs) >= 2:
        flops = 2.0 * out_elems * inputs[0].shape[-1]
        compute = flops / CUBE_FLOPS_PER_NS
    elif op_type == "Conv2D" and len(inputs) >= 2:
        _, ci, kh, kw = inputs[1].shape
        flops = 2.0 * out_elems * ci * kh * kw
        compute = flops / CUBE_FLOPS_PER_NS
    else:
        compute = 4.0 * out_elems / VECTOR_FLOPS_PER_NS
    # The floor grows with the operator's work (log scale), so the tiny models' ops keep
    # the order of a real network's (a big matmul outlasts a small one) instead of all
    # sitting on one floor.
    floor: float = CUBE_TASK_MIN_NS if op_type in CUBE_OPS else VECTOR_TASK_MIN_NS
    work = max(compute, moved / HBM_BYTES_PER_NS)
    floor *= 0.6 + 0.15 * math.log2(1.0 + work)
    return int(max(floor, LAUNCH_NS + work))


def parse_description(data: Any, source: str) -> dict[str, Any]:
    """Validate a model description; returns the pieces :func:`build_model` needs."""
    if not isinstance(data, dict):
        raise ModelError(f"{source}: the model description must be a JSON object")
    try:
        data, image_dims = aipp.expand(data, source)
        dynamic = gears.declared(data, source)
        parsed = (
            gears.parse(data, source, *dynamic, _parse_static)
            if dynamic is not None
            else _parse_static(data, source)
        )
    except (gears.GearError, aipp.AippError) as exc:
        raise ModelError(str(exc)) from None
    parsed["aipp_dims"] = image_dims
    return parsed


def _parse_static(data: dict[str, Any], source: str) -> dict[str, Any]:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ModelError(f"{source}: the model needs a name")
    for key in ("inputs", "ops", "outputs"):
        if not isinstance(data.get(key), list) or not data[key]:
            raise ModelError(f"{source}: {key} must be a non-empty list")
    inputs = [_tensor(t, f"{source}: inputs[{i}]") for i, t in enumerate(data["inputs"])]
    weights_raw = data.get("weights", [])
    if not isinstance(weights_raw, list):
        raise ModelError(f"{source}: weights must be a list")
    weights = [_tensor(t, f"{source}: weights[{i}]") for i, t in enumerate(weights_raw)]
    weight_init = {t["name"]: t for t in weights_raw}
    specs: dict[str, TensorSpec] = {}
    _define(specs, inputs + weights, source)
    ops: list[OpSpec] = []
    for index, raw in enumerate(data["ops"]):
        where = f"{source}: ops[{index}]"
        op_name, op_type = _named_object(raw, where, "an operator"), raw.get("type")
        if not isinstance(op_type, str):
            raise ModelError(f"{where}: an operator needs a type")
        if op_type not in KERNELS:
            raise ModelError(f"{where}: unsupported operator type {op_type!r}")
        in_names = raw.get("inputs")
        if not isinstance(in_names, list) or not in_names:
            raise ModelError(f"{where}: inputs must be a non-empty list of tensor names")
        for in_name in in_names:
            if in_name not in specs:
                raise ModelError(f"{where}: input {in_name!r} is not defined before {op_name}")
        outs_raw = raw.get("outputs")
        if not isinstance(outs_raw, list) or not outs_raw:
            raise ModelError(f"{where}: outputs must be a non-empty list of tensors")
        outs = [_tensor(t, where) for t in outs_raw]
        _define(specs, outs, where)
        attrs = raw.get("attrs", {})
        if not isinstance(attrs, dict):
            raise ModelError(f"{where}: attrs must be an object")
        cost_us = raw.get("cost_us")
        if cost_us is not None and (not isinstance(cost_us, (int, float)) or cost_us < 0):
            raise ModelError(f"{where}: cost_us must be a non-negative number")
        in_specs = [specs[n] for n in in_names]
        cost_ns = (
            int(cost_us * 1000) if cost_us is not None else _op_cost_ns(op_type, in_specs, outs)
        )
        unit = UNIT_CUBE if op_type in CUBE_OPS else UNIT_VECTOR
        ops.append(
            OpSpec(index, op_name, op_type, tuple(in_names), tuple(outs), attrs, cost_ns, unit)
        )
    outputs = []
    for out in data["outputs"]:
        out_name = out.get("name") if isinstance(out, dict) else out
        if out_name not in specs or out_name in weight_init:
            raise ModelError(f"{source}: model output {out_name!r} is not an operator output")
        outputs.append(specs[out_name])
    return {
        "name": name,
        "inputs": tuple(inputs),
        "outputs": tuple(outputs),
        "ops": tuple(ops),
        "specs": specs,
        "weights": weights,
        "weight_init": weight_init,
    }


def load_description_bytes(raw: bytes, source: str) -> dict[str, Any]:
    if len(raw) > MAX_MODEL_BYTES:
        raise ModelError(f"{source}: model description larger than {MAX_MODEL_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{source}: not a JSON model description: {exc}") from None
    return parse_description(data, source)


def load_description_file(path: str) -> dict[str, Any]:
    with open(Path(path), "rb") as handle:
        raw = handle.read(MAX_MODEL_BYTES + 1)
    return load_description_bytes(raw, path)
