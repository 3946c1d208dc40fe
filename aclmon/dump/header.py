"""Decode the ``DumpData`` header (package ``toolkit.dumpdata`` / ``toolkit.dump``).

Every field of every schema version we know is read (``dfx_message``,
``arg_index``, ``input_type`` included); unknown fields are skipped so newer
writers do not break us. Each message is a table of its fields read by one
function (:func:`_values`). Field numbers: docs/reference/dump_formats.md §1.3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from aclmon.dump.wire import WIRE_LEN, Field, WireReader

ROLE_INPUT = "input"
ROLE_OUTPUT = "output"
ROLE_BUFFER = "buffer"
ROLE_SPACE = "space"
#: payload order written by the runtime (and read by msaccucmp).
PAYLOAD_ORDER = (ROLE_INPUT, ROLE_OUTPUT, ROLE_BUFFER, ROLE_SPACE)


@dataclass
class TensorHeader:
    """One input/output/buffer/workspace entry of the header (proto3 defaults)."""

    role: str
    index: int
    data_type: int = 0
    format: int = 0
    shape: tuple[int, ...] = ()
    original_shape: tuple[int, ...] = ()
    size: int = 0
    sub_format: int = 0
    address: int = 0
    offset: int = 0
    arg_index: int = 0
    input_type: int = 0
    buffer_type: int = 0  # OpBuffer.buffer_type (L1 = 0)
    space_type: int = 0  # Workspace.type (LOG = 0)
    original_op: dict[str, object] | None = None
    dim_range: list[tuple[int, int]] = field(default_factory=list)
    #: absolute file offsets of the embedded ``data`` bytes (legacy v1 files).
    data_start: int = 0
    data_end: int = 0


_T = TypeVar("_T")


@dataclass(kw_only=True)
class DumpFields(Generic[_T]):
    """The fields of a ``DumpData`` header, its tensors as ``_T``: a decoded header
    (:class:`DumpHeader`) holds their header entries, a read dump file
    (:class:`aclmon.dump.reader.DumpFile`) the tensors themselves."""

    version: str = ""
    dump_time: int = 0
    op_name: str = ""
    dfx_message: str = ""
    attrs: list[tuple[str, str]] = field(default_factory=list)
    inputs: list[_T] = field(default_factory=list)
    outputs: list[_T] = field(default_factory=list)
    buffers: list[_T] = field(default_factory=list)
    workspaces: list[_T] = field(default_factory=list)

    def of_role(self, role: str) -> list[_T]:
        """The list of ``role`` (``ROLE_INPUT`` …)."""
        return {
            ROLE_INPUT: self.inputs,
            ROLE_OUTPUT: self.outputs,
            ROLE_BUFFER: self.buffers,
            ROLE_SPACE: self.workspaces,
        }[role]


@dataclass(kw_only=True)
class DumpHeader(DumpFields[TensorHeader]):
    """A decoded ``DumpData`` header."""


# -- decoding: one reader for every message, driven by tables of its fields ---------
#: how one field's value is read: (reader, the field, its name in error messages).
_Read = Callable[[WireReader, Field, str], Any]


class _Spec(NamedTuple):
    """One field of a message: the key its value is kept under, how it is read,
    its name in error messages ("": the key), and whether it repeats (its values
    are then kept in a list)."""

    key: str
    read: _Read
    label: str = ""
    repeated: bool = False


def _values(
    reader: WireReader, start: int, end: int, what: str, specs: Mapping[int, _Spec]
) -> dict[str, Any]:
    """The fields ``specs`` names of the message in ``buf[start:end]`` (``what``: its
    name in error messages), by key; unknown fields are skipped so that newer
    writers do not break us."""
    values: dict[str, Any] = {}
    prefix = f"{what}." if what else ""
    for f in reader.fields(start, end):
        spec = specs.get(f.number)
        if spec is None:
            continue
        key, read, label, repeated = spec
        value = read(reader, f, prefix + (label or key))
        if repeated:
            values.setdefault(key, []).append(value)
        else:
            values[key] = value
    return values


def _nested(reader: WireReader, outer: Field, what: str, specs: Mapping[int, _Spec]) -> Any:
    """:func:`_values` of the message held in the field ``outer``."""
    reader.expect(outer, WIRE_LEN, what)
    return _values(reader, outer.start, outer.end, what, specs)


def _uint32(reader: WireReader, f: Field, what: str) -> int:
    return reader.uint(f, what, 32)


_ORIGINAL_OP = {
    1: _Spec("name", WireReader.string),
    2: _Spec("output_index", _uint32),
    3: _Spec("data_type", WireReader.int32),
    4: _Spec("format", WireReader.int32),
}
_DIM_RANGE = {1: _Spec("dim_start", WireReader.uint), 2: _Spec("dim_end", WireReader.uint)}
_ATTR = {1: _Spec("name", WireReader.string), 2: _Spec("value", WireReader.string)}


def _shape(reader: WireReader, outer: Field, what: str) -> tuple[int, ...]:
    """A ``Shape``: its one field, the dims, repeated (packed or not)."""
    reader.expect(outer, WIRE_LEN, what)
    dims: list[int] = []
    for f in reader.fields(outer.start, outer.end):
        if f.number == 1:
            dims.extend(reader.repeated_uint64(f, f"{what}.dim"))
    return tuple(dims)


def _original_op(reader: WireReader, outer: Field, what: str) -> dict[str, object]:
    op: dict[str, object] = {"name": "", "output_index": 0, "data_type": 0, "format": 0}
    op.update(_nested(reader, outer, what, _ORIGINAL_OP))
    return op


def _dim_range(reader: WireReader, outer: Field, what: str) -> tuple[int, int]:
    values = _nested(reader, outer, what, _DIM_RANGE)
    return (values.get("dim_start", 0), values.get("dim_end", 0))


def _attr(reader: WireReader, outer: Field, what: str) -> tuple[str, str]:
    values = _nested(reader, outer, what, _ATTR)
    return (values.get("name", ""), values.get("value", ""))


def _data(reader: WireReader, f: Field, what: str) -> tuple[int, int]:
    """The absolute file offsets of the embedded bytes (legacy v1 files)."""
    reader.expect(f, WIRE_LEN, what)
    return (reader.base + f.start, reader.base + f.end)


#: The fields of the four tensor messages, by TensorHeader attribute: how each is
#: read, then its field number in OpInput, OpOutput, OpBuffer and Workspace (the
#: order of PAYLOAD_ORDER; 0: the message has no such field).
#: docs/reference/dump_formats.md §1.3.
_TENSOR_FIELDS: dict[str, tuple[_Read, int, int, int, int]] = {
    "data_type": (WireReader.int32, 1, 1, 0, 0),
    "format": (WireReader.int32, 2, 2, 0, 0),
    "shape": (_shape, 3, 3, 0, 0),
    "data": (_data, 4, 5, 2, 2),
    "size": (WireReader.uint, 5, 6, 3, 3),
    "original_shape": (_shape, 6, 7, 0, 0),
    "sub_format": (WireReader.int32, 7, 8, 0, 0),
    "address": (WireReader.uint, 8, 9, 0, 0),
    "offset": (WireReader.uint, 9, 11, 0, 0),
    "arg_index": (_uint32, 10, 12, 0, 4),
    "input_type": (_uint32, 11, 0, 0, 0),
    "original_op": (_original_op, 0, 4, 0, 0),
    "dim_range": (_dim_range, 0, 10, 0, 0),
    "buffer_type": (WireReader.int32, 0, 0, 1, 0),
    "space_type": (WireReader.int32, 0, 0, 0, 1),
}
#: the attributes whose field has another name in its message, and the repeated one.
_PROTO_NAMES = {"space_type": "type"}
_REPEATED = {"dim_range"}


def _tensor_reader(role: str) -> _Read:
    """The reader of one tensor message of ``role`` (its index is set by its caller)."""
    column = PAYLOAD_ORDER.index(role)
    specs = {
        numbers[column]: _Spec(key, read, _PROTO_NAMES.get(key, ""), key in _REPEATED)
        for key, (read, *numbers) in _TENSOR_FIELDS.items()
        if numbers[column]
    }

    def read(reader: WireReader, outer: Field, what: str) -> TensorHeader:
        values = _nested(reader, outer, what, specs)
        data_start, data_end = values.pop("data", (0, 0))
        return TensorHeader(role, 0, data_start=data_start, data_end=data_end, **values)

    return read


_DUMP_DATA = {
    1: _Spec("version", WireReader.string),
    2: _Spec("dump_time", WireReader.uint),
    3: _Spec("outputs", _tensor_reader(ROLE_OUTPUT), "output", repeated=True),
    4: _Spec("inputs", _tensor_reader(ROLE_INPUT), "input", repeated=True),
    5: _Spec("buffers", _tensor_reader(ROLE_BUFFER), "buffer", repeated=True),
    6: _Spec("op_name", WireReader.string),
    7: _Spec("attrs", _attr, "attr", repeated=True),
    8: _Spec("workspaces", _tensor_reader(ROLE_SPACE), "space", repeated=True),
    9: _Spec("dfx_message", WireReader.string),
}


def decode_header(
    buf: memoryview | bytes, start: int, end: int, source: str, base: int = 0
) -> DumpHeader:
    """Decode a ``DumpData`` message held in ``buf[start:end]``.

    ``base`` is the file offset of ``buf[0]`` so errors name absolute offsets.
    Raises :class:`aclmon.errors.DecodeError` on malformed input.
    """
    header = DumpHeader(**_values(WireReader(buf, source, base), start, end, "", _DUMP_DATA))
    for role in PAYLOAD_ORDER:
        for index, tensor in enumerate(header.of_role(role)):
            tensor.index = index
    return header
