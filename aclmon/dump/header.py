"""Decode the ``DumpData`` header (package ``toolkit.dumpdata`` / ``toolkit.dump``).

Every field of every schema version we know is read (``dfx_message``,
``arg_index``, ``input_type`` included); unknown fields are skipped so newer
writers do not break us. Field numbers: docs/reference/dump_formats.md §1.3.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass
class DumpHeader:
    version: str = ""
    dump_time: int = 0
    op_name: str = ""
    dfx_message: str = ""
    attrs: list[tuple[str, str]] = field(default_factory=list)
    inputs: list[TensorHeader] = field(default_factory=list)
    outputs: list[TensorHeader] = field(default_factory=list)
    buffers: list[TensorHeader] = field(default_factory=list)
    spaces: list[TensorHeader] = field(default_factory=list)

    def tensors(self, role: str) -> list[TensorHeader]:
        return {
            ROLE_INPUT: self.inputs,
            ROLE_OUTPUT: self.outputs,
            ROLE_BUFFER: self.buffers,
            ROLE_SPACE: self.spaces,
        }[role]


def _shape(reader: WireReader, outer: Field, what: str) -> tuple[int, ...]:
    reader.expect(outer, WIRE_LEN, what)
    dims: list[int] = []
    for f in reader.fields(outer.start, outer.end):
        if f.number == 1:
            dims.extend(reader.repeated_uint64(f, f"{what}.dim"))
    return tuple(dims)


def _original_op(reader: WireReader, outer: Field) -> dict[str, object]:
    reader.expect(outer, WIRE_LEN, "original_op")
    op: dict[str, object] = {"name": "", "output_index": 0, "data_type": 0, "format": 0}
    for f in reader.fields(outer.start, outer.end):
        if f.number == 1:
            op["name"] = reader.string(f, "original_op.name")
        elif f.number == 2:
            op["output_index"] = reader.uint(f, "original_op.output_index", 32)
        elif f.number == 3:
            op["data_type"] = reader.int32(f, "original_op.data_type")
        elif f.number == 4:
            op["format"] = reader.int32(f, "original_op.format")
    return op


def _dim_range(reader: WireReader, outer: Field) -> tuple[int, int]:
    reader.expect(outer, WIRE_LEN, "dim_range")
    start = end = 0
    for f in reader.fields(outer.start, outer.end):
        if f.number == 1:
            start = reader.uint(f, "dim_range.dim_start")
        elif f.number == 2:
            end = reader.uint(f, "dim_range.dim_end")
    return (start, end)


def _data(reader: WireReader, f: Field, tensor: TensorHeader) -> None:
    reader.expect(f, WIRE_LEN, "data")
    tensor.data_start = reader.base + f.start
    tensor.data_end = reader.base + f.end


# Per message: field number -> (TensorHeader attribute, how it is read, its name
# in error messages). docs/reference/dump_formats.md §1.3.
_FieldSpec = tuple[str, str, str]


def _labelled(what: str, specs: dict[int, _FieldSpec]) -> dict[int, _FieldSpec]:
    """``specs`` with each error-message name prefixed by the message's name."""
    return {n: (name, how, f"{what}.{label}") for n, (name, how, label) in specs.items()}


_OUTPUT_FIELDS = _labelled(
    "output",
    {
        1: ("data_type", "int32", "data_type"),
        2: ("format", "int32", "format"),
        3: ("shape", "shape", "shape"),
        4: ("original_op", "original_op", "original_op"),
        5: ("data", "data", "data"),
        6: ("size", "uint", "size"),
        7: ("original_shape", "shape", "original_shape"),
        8: ("sub_format", "int32", "sub_format"),
        9: ("address", "uint", "address"),
        10: ("dim_range", "dim_range", "dim_range"),
        11: ("offset", "uint", "offset"),
        12: ("arg_index", "uint32", "arg_index"),
    },
)
_INPUT_FIELDS = _labelled(
    "input",
    {
        1: ("data_type", "int32", "data_type"),
        2: ("format", "int32", "format"),
        3: ("shape", "shape", "shape"),
        4: ("data", "data", "data"),
        5: ("size", "uint", "size"),
        6: ("original_shape", "shape", "original_shape"),
        7: ("sub_format", "int32", "sub_format"),
        8: ("address", "uint", "address"),
        9: ("offset", "uint", "offset"),
        10: ("arg_index", "uint32", "arg_index"),
        11: ("input_type", "uint32", "input_type"),
    },
)
_BUFFER_FIELDS = _labelled(
    "buffer",
    {
        1: ("buffer_type", "int32", "buffer_type"),
        2: ("data", "data", "data"),
        3: ("size", "uint", "size"),
    },
)
_SPACE_FIELDS = _labelled(
    "space",
    {
        1: ("space_type", "int32", "type"),
        2: ("data", "data", "data"),
        3: ("size", "uint", "size"),
        4: ("arg_index", "uint32", "arg_index"),
    },
)


def _tensor(
    reader: WireReader,
    outer: Field,
    index: int,
    role: str,
    what: str,
    specs: dict[int, _FieldSpec],
) -> TensorHeader:
    """One OpOutput / OpInput / OpBuffer / Workspace message as a TensorHeader
    (unknown fields skipped)."""
    reader.expect(outer, WIRE_LEN, what)
    t = TensorHeader(role, index)
    for f in reader.fields(outer.start, outer.end):
        spec = specs.get(f.number)
        if spec is None:
            continue
        name, how, label = spec
        if how == "int32":
            setattr(t, name, reader.int32(f, label))
        elif how == "uint":
            setattr(t, name, reader.uint(f, label))
        elif how == "uint32":
            setattr(t, name, reader.uint(f, label, 32))
        elif how == "shape":
            setattr(t, name, _shape(reader, f, label))
        elif how == "data":
            _data(reader, f, t)
        elif how == "original_op":
            t.original_op = _original_op(reader, f)
        else:  # dim_range
            t.dim_range.append(_dim_range(reader, f))
    return t


def _attr(reader: WireReader, outer: Field) -> tuple[str, str]:
    reader.expect(outer, WIRE_LEN, "attr")
    name = value = ""
    for f in reader.fields(outer.start, outer.end):
        if f.number == 1:
            name = reader.string(f, "attr.name")
        elif f.number == 2:
            value = reader.string(f, "attr.value")
    return (name, value)


def decode_header(
    buf: memoryview | bytes, start: int, end: int, source: str, base: int = 0
) -> DumpHeader:
    """Decode a ``DumpData`` message held in ``buf[start:end]``.

    ``base`` is the file offset of ``buf[0]`` so errors name absolute offsets.
    Raises :class:`aclmon.errors.DecodeError` on malformed input.
    """
    reader = WireReader(buf, source, base)
    h = DumpHeader()
    for f in reader.fields(start, end):
        n = f.number
        if n == 1:
            h.version = reader.string(f, "version")
        elif n == 2:
            h.dump_time = reader.uint(f, "dump_time")
        elif n == 3:
            h.outputs.append(
                _tensor(reader, f, len(h.outputs), ROLE_OUTPUT, "output", _OUTPUT_FIELDS)
            )
        elif n == 4:
            h.inputs.append(_tensor(reader, f, len(h.inputs), ROLE_INPUT, "input", _INPUT_FIELDS))
        elif n == 5:
            h.buffers.append(
                _tensor(reader, f, len(h.buffers), ROLE_BUFFER, "buffer", _BUFFER_FIELDS)
            )
        elif n == 6:
            h.op_name = reader.string(f, "op_name")
        elif n == 7:
            h.attrs.append(_attr(reader, f))
        elif n == 8:
            h.spaces.append(_tensor(reader, f, len(h.spaces), ROLE_SPACE, "space", _SPACE_FIELDS))
        elif n == 9:
            h.dfx_message = reader.string(f, "dfx_message")
    return h
