"""The fusion rule (``-f``): GE's JSON dump of the compiled graph (``atc --mode=1``).

It says which original (framework) operators each device operator came from,
which original output each of its outputs stands for, and which operator
output feeds each of its inputs. We read only that; the file is hostile input
like any other (one clear error, never a traceback):

* ``graph[].op[]``: ``name``, ``type``, ``input`` (``"producer:index"``; control
  edges ``":-1"`` and empty strings skipped);
* ``attr[]`` key ``_datadump_original_op_names``: ``value.list.s`` (absent: the op
  is its own original; present without ``s``: it has none);
* ``output_desc[].attr[]`` keys ``_datadump_origin_name`` (``value.s``) and
  ``_datadump_origin_output_index`` (``value.i``; default: the output's position).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from aclmon.dump.naming import sanitize_name
from aclmon.errors import AclmonError

ORIGINAL_NAMES = "_datadump_original_op_names"
ORIGIN_NAME = "_datadump_origin_name"
ORIGIN_INDEX = "_datadump_origin_output_index"
#: a fusion rule of a large network is tens of MB; anything far larger is not one.
MAX_RULE_BYTES = 512 << 20


@dataclass(frozen=True)
class FusedOp:
    name: str
    op_type: str
    inputs: tuple[tuple[str, int], ...]  # (producer op, its output index)
    original_names: tuple[str, ...]  # () when the op has no original operator
    #: output index -> (original op, its output index)
    origins: tuple[tuple[str, int], ...]


class FusionRule:
    """Device operators by their file-name spelling (``/`` and ``.`` made ``_``)."""

    def __init__(self, ops: list[FusedOp], source: str) -> None:
        self.source = source
        self._ops = {sanitize_name(op.name): op for op in ops}

    def __len__(self) -> int:
        return len(self._ops)

    def op(self, name: str) -> FusedOp | None:
        return self._ops.get(sanitize_name(name))

    def ground_truth(self, name: str) -> str:
        """The GroundTruth cell: the original operators joined by ``,``; ``*`` when none."""
        op = self.op(name)
        if op is None:
            return "*"
        return ",".join(op.original_names) or "*"

    def output_origin(self, name: str, index: int) -> tuple[str, int]:
        """Which original operator output a device operator's output stands for."""
        op = self.op(name)
        if op is None:
            return name, index
        if index < len(op.origins):
            return op.origins[index]
        if len(op.original_names) == 1:
            return op.original_names[0], index
        return op.name, index

    def producer(self, name: str, input_index: int) -> tuple[str, int] | None:
        op = self.op(name)
        if op is None or input_index >= len(op.inputs):
            return None
        return op.inputs[input_index]


def _bad(source: str, where: str, what: str) -> AclmonError:
    return AclmonError(f"{source}: not a fusion rule: {where}: {what}")


def _attr(attrs: Any, key: str, source: str, where: str) -> Any:
    if not isinstance(attrs, list):
        raise _bad(source, where, '"attr" is not an array')
    for entry in attrs:
        if isinstance(entry, dict) and entry.get("key") == key:
            value = entry.get("value")
            if not isinstance(value, dict):
                raise _bad(source, where, f'attribute "{key}" has no value object')
            return value
    return None


def _parse_op(raw: Any, source: str, where: str) -> FusedOp:
    if not isinstance(raw, dict):
        raise _bad(source, where, "an op is not an object")
    name, op_type = raw.get("name"), raw.get("type")
    if not isinstance(name, str) or not isinstance(op_type, str):
        raise _bad(source, where, 'an op needs a string "name" and "type"')
    where = f"{where} op {name!r}"
    inputs: list[tuple[str, int]] = []
    raw_inputs = raw.get("input", [])
    if not isinstance(raw_inputs, list):
        raise _bad(source, where, '"input" is not an array')
    for item in raw_inputs:
        if not isinstance(item, str):
            raise _bad(source, where, "an input is not a string")
        producer, _, index = item.rpartition(":")
        if not item or index == "-1":
            continue  # no input / a control edge
        if not producer or not index.isdigit():
            raise _bad(source, where, f"input {item!r} is not producer:index")
        inputs.append((producer, int(index)))
    originals: tuple[str, ...] = (name,)
    names_value = _attr(raw.get("attr", []), ORIGINAL_NAMES, source, where)
    if names_value is not None:
        listed = names_value.get("list", {})
        strings = listed.get("s", []) if isinstance(listed, dict) else None
        if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
            raise _bad(source, where, f'"{ORIGINAL_NAMES}" is not a list of strings')
        originals = tuple(s for s in strings if s)
    origins: list[tuple[str, int]] = []
    descs = raw.get("output_desc", [])
    if not isinstance(descs, list):
        raise _bad(source, where, '"output_desc" is not an array')
    for position, desc in enumerate(descs):
        attrs = desc.get("attr", []) if isinstance(desc, dict) else None
        origin = _attr(attrs, ORIGIN_NAME, source, where)
        index = _attr(attrs, ORIGIN_INDEX, source, where)
        origin_name = origin.get("s") if origin is not None else None
        origin_index = index.get("i") if index is not None else position
        if not isinstance(origin_name, str) or not origin_name:
            origin_name = originals[0] if len(originals) == 1 else name
        if not isinstance(origin_index, int) or isinstance(origin_index, bool) or origin_index < 0:
            raise _bad(source, where, f'"{ORIGIN_INDEX}" is not a natural number')
        origins.append((origin_name, origin_index))
    return FusedOp(name, op_type, tuple(inputs), originals, tuple(origins))


def read_fusion_rule(path: str | os.PathLike[str]) -> FusionRule:
    """Parse a fusion rule file; raises :class:`AclmonError` naming the file and the problem."""
    path = os.fspath(path)
    source = os.path.basename(path) or path
    try:
        size = os.path.getsize(path)
        if size > MAX_RULE_BYTES:
            raise AclmonError(f"{source}: {size} bytes is too large for a fusion rule")
        with open(path, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8", errors="replace"))
    except OSError as exc:
        raise AclmonError(f"{source}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise AclmonError(f"{source}: not JSON: {exc}") from None
    graphs = data.get("graph") if isinstance(data, dict) else None
    if not isinstance(graphs, list):
        raise _bad(source, "top level", 'no "graph" array')
    ops: list[FusedOp] = []
    for number, graph in enumerate(graphs):
        raw_ops = graph.get("op") if isinstance(graph, dict) else None
        if not isinstance(raw_ops, list):
            raise _bad(source, f"graph {number}", 'no "op" array')
        ops.extend(_parse_op(raw, source, f"graph {number}") for raw in raw_ops)
    return FusionRule(ops, source)
