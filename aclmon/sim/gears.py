"""Dynamic batch and dynamic image size (HW) models, built the way ATC builds them.

ATC compiles one graph per *gear* (a batch size, or a height/width pair) and
adds a model input named ``ascend_mbatch_shape_data``; before each execution
``acl.mdl.set_dynamic_batch_size`` / ``set_dynamic_hw_size`` writes the chosen
gear into that input's device buffer, and the model runs the matching graph.

A model description declares ``"dynamic_batch": [1, 2, 4]``,
``"dynamic_hw": [[16, 16], [32, 32]]`` or ``"dynamic_dims": [[20, 1], [40, 2]]``
(ATC's ``--dynamic_dims``: one value for every ``-1`` of the inputs, in input
order) and writes ``-1`` for the dynamic dimensions of its inputs (batch: every
``-1`` is the batch; HW: the first ``-1`` of an input is the height and the
second the width). Operator outputs may use
``-1`` too: for each gear the sim runs the kernels once on zeros and takes
those dimensions from what they produce.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from aclmon.sim import layouts
from aclmon.sim.kernels import KERNELS, KernelError

MBATCH_INPUT = "ascend_mbatch_shape_data"
KIND_BATCH = "batch"
KIND_HW = "hw"
KIND_DIMS = "dims"
#: at most this many gears, as ACL_MAX_BATCH_NUM / ACL_MAX_HW_NUM.
MAX_GEARS = 128

Gear = tuple[int, ...]


class GearError(ValueError):
    """The dynamic-shape declaration of a model description is invalid."""


def declared(data: dict[str, Any], source: str) -> tuple[str, list[Gear]] | None:
    """``(kind, gears)`` when the description declares dynamic gears, else None."""
    batch, hw, dims = data.get("dynamic_batch"), data.get("dynamic_hw"), data.get("dynamic_dims")
    if batch is None and hw is None and dims is None:
        return None
    if sum(x is not None for x in (batch, hw, dims)) > 1:
        raise GearError(f"{source}: declare one of dynamic_batch, dynamic_hw, dynamic_dims")
    if dims is not None:
        return KIND_DIMS, _dims_gears(dims, data, source)
    if batch is not None:
        if (
            not isinstance(batch, list)
            or not batch
            or len(batch) > MAX_GEARS
            or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in batch)
            or len(set(batch)) != len(batch)
        ):
            raise GearError(f"{source}: dynamic_batch must be a list of distinct positive ints")
        return KIND_BATCH, [(b,) for b in batch]
    if (
        not isinstance(hw, list)
        or not hw
        or len(hw) > MAX_GEARS
        or not all(
            isinstance(g, list)
            and len(g) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in g)
            for g in hw
        )
        or len({tuple(g) for g in hw}) != len(hw)
    ):
        raise GearError(f"{source}: dynamic_hw must be a list of distinct [height, width] pairs")
    return KIND_HW, [tuple(g) for g in hw]


def _dims_gears(dims: Any, data: dict[str, Any], source: str) -> list[Gear]:
    inputs = data.get("inputs")
    unknown = sum(
        1
        for raw in (inputs if isinstance(inputs, list) else [])
        if isinstance(raw, dict) and isinstance(raw.get("shape"), list)
        for d in raw["shape"]
        if d == -1
    )
    if (
        not isinstance(dims, list)
        or not dims
        or len(dims) > MAX_GEARS
        or not all(
            isinstance(g, list)
            and len(g) == unknown
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in g)
            for g in dims
        )
        or len({tuple(g) for g in dims}) != len(dims)
    ):
        raise GearError(
            f"{source}: dynamic_dims must be distinct lists of {unknown} positive ints"
            " (one for every -1 of the inputs)"
        )
    return [tuple(g) for g in dims]


def largest(gears: list[Gear]) -> Gear:
    """The gear whose sizes the model description reports (the biggest one)."""
    return max(gears, key=math.prod)


def mbatch_tensor(kind: str, size: int) -> dict[str, Any]:
    """The input ATC adds: the gear as ``size`` int64 values (the batch, height and
    width, or every dynamic dim)."""
    return {
        "name": MBATCH_INPUT,
        "dtype": "int64",
        "format": "ND",
        "shape": [size],
    }


def _substitute(shape: Any, kind: str, gear: Gear, where: str) -> list[int]:
    """``shape`` with its ``-1`` filled from ``gear`` (for dims: the values not used
    yet, from the front, which the caller drops)."""
    if not isinstance(shape, list):
        raise GearError(f"{where}: shape must be a list")
    unknown = [i for i, d in enumerate(shape) if d == -1]
    out = list(shape)
    if kind == KIND_DIMS:
        for value, i in zip(gear, unknown, strict=False):
            out[i] = value
        return out
    if not unknown:
        raise GearError(f"{where}: a dynamic model's inputs mark their dynamic dims with -1")
    if kind == KIND_BATCH:
        for i in unknown:
            out[i] = gear[0]
    else:
        if len(unknown) != 2:
            raise GearError(f"{where}: a dynamic_hw input needs -1 for height and width")
        out[unknown[0]], out[unknown[1]] = gear
    return out


def with_gear(data: dict[str, Any], kind: str, gear: Gear, source: str) -> dict[str, Any]:
    """A static description of one gear: inputs filled in, ``-1`` outputs inferred."""
    concrete = copy.deepcopy(data)
    concrete.pop("dynamic_batch", None)
    concrete.pop("dynamic_hw", None)
    inputs = concrete.get("inputs")
    if not isinstance(inputs, list):
        raise GearError(f"{source}: inputs must be a list")
    zeros: dict[str, np.ndarray] = {}

    def zero(raw: dict[str, Any], where: str) -> np.ndarray:
        dtype = layouts.DTYPE_BY_NAME.get(str(raw.get("dtype", "float16")).lower())
        shape = raw.get("shape")
        if dtype is None or not isinstance(shape, list) or any(d == -1 for d in shape):
            raise GearError(f"{where}: a tensor needs a known dtype and shape")
        return np.zeros(shape, dtype=layouts.ACL_TO_NUMPY[dtype])

    rest = gear
    for i, raw in enumerate(inputs):
        where = f"{source}: inputs[{i}]"
        if not isinstance(raw, dict):
            raise GearError(f"{where}: a tensor must be an object")
        shape = raw.get("shape")
        raw["shape"] = _substitute(shape, kind, rest, where)  # checks it is a list
        if kind == KIND_DIMS:  # the values this input took are used up
            rest = rest[list(shape or []).count(-1) :]
        zeros[str(raw.get("name"))] = zero(raw, where)
    for i, raw in enumerate(concrete.get("weights", [])):
        if isinstance(raw, dict):
            zeros[str(raw.get("name"))] = zero(raw, f"{source}: weights[{i}]")
    for index, op in enumerate(concrete.get("ops", [])):
        if not isinstance(op, dict) or not isinstance(op.get("outputs"), list):
            continue  # the static parser reports it
        where = f"{source}: ops[{index}]"
        outs = op["outputs"]
        if not any(isinstance(o, dict) and -1 in (o.get("shape") or []) for o in outs):
            for raw in outs:
                if isinstance(raw, dict):
                    zeros[str(raw.get("name"))] = zero(raw, where)
            continue
        kernel = KERNELS.get(str(op.get("type")))
        try:
            args = [zeros[name] for name in op.get("inputs", [])]
            dtypes = [
                layouts.ACL_TO_NUMPY[layouts.DTYPE_BY_NAME[str(o.get("dtype", "float16")).lower()]]
                for o in outs
            ]
            if kernel is None:
                raise KernelError(f"unsupported operator type {op.get('type')!r}")
            results = kernel(args, op.get("attrs", {}), dtypes)
        except (KernelError, KeyError, ValueError, TypeError, IndexError) as exc:
            raise GearError(
                f"{where}: cannot infer the shapes of gear {list(gear)}: {exc}"
            ) from None
        for raw, value in zip(outs, results, strict=False):
            shape = raw.get("shape")
            if not isinstance(shape, list) or len(shape) != value.ndim:
                raise GearError(f"{where}: {raw.get('name')} declares {shape}, gets {value.shape}")
            if any(d not in (-1, v) for d, v in zip(shape, value.shape, strict=True)):
                raise GearError(f"{where}: {raw.get('name')} declares {shape}, gets {value.shape}")
            raw["shape"] = list(value.shape)
            zeros[str(raw.get("name"))] = value
    inputs.append(mbatch_tensor(kind, len(gear)))
    return concrete


def parse(
    data: dict[str, Any],
    source: str,
    kind: str,
    gears: list[Gear],
    parse_static: Callable[[Any, str], dict[str, Any]],
) -> dict[str, Any]:
    """The parsed largest gear, plus every gear's parse and the ``-1`` input dims."""
    per_gear = {g: parse_static(with_gear(data, kind, g, source), source) for g in gears}
    parsed = dict(per_gear[largest(gears)])
    parsed["dynamic"] = kind
    parsed["gears"] = per_gear
    dims = [tuple(t["shape"]) for t in data["inputs"]]
    parsed["input_dims"] = (*dims, (len(gears[0]),))
    parsed["gear_dims"] = {g: full_dims(data, kind, g, source) for g in gears}
    return parsed


def full_dims(data: dict[str, Any], kind: str, gear: Gear, source: str) -> Gear:
    """Every input's dims with ``gear`` filled in, one after the other: what
    ``get_input_dynamic_dims`` reports and ``set_input_dynamic_dims`` takes."""
    dims: list[int] = []
    rest = gear
    for i, raw in enumerate(data["inputs"]):
        shape = raw["shape"]
        dims.extend(_substitute(shape, kind, rest, f"{source}: inputs[{i}]"))
        if kind == KIND_DIMS:
            rest = rest[sum(1 for d in shape if d == -1) :]
    return tuple(dims)
