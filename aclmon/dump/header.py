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


def _op_output(reader: WireReader, outer: Field, index: int) -> TensorHeader:
    reader.expect(outer, WIRE_LEN, "output")
    t = TensorHeader(ROLE_OUTPUT, index)
    for f in reader.fields(outer.start, outer.end):
        n = f.number
        if n == 1:
            t.data_type = reader.int32(f, "output.data_type")
        elif n == 2:
            t.format = reader.int32(f, "output.format")
        elif n == 3:
            t.shape = _shape(reader, f, "output.shape")
        elif n == 4:
            t.original_op = _original_op(reader, f)
        elif n == 5:
            _data(reader, f, t)
        elif n == 6:
            t.size = reader.uint(f, "output.size")
        elif n == 7:
            t.original_shape = _shape(reader, f, "output.original_shape")
        elif n == 8:
            t.sub_format = reader.int32(f, "output.sub_format")
        elif n == 9:
            t.address = reader.uint(f, "output.address")
        elif n == 10:
            t.dim_range.append(_dim_range(reader, f))
        elif n == 11:
            t.offset = reader.uint(f, "output.offset")
        elif n == 12:
            t.arg_index = reader.uint(f, "output.arg_index", 32)
    return t


def _op_input(reader: WireReader, outer: Field, index: int) -> TensorHeader:
    reader.expect(outer, WIRE_LEN, "input")
    t = TensorHeader(ROLE_INPUT, index)
    for f in reader.fields(outer.start, outer.end):
        n = f.number
        if n == 1:
            t.data_type = reader.int32(f, "input.data_type")
        elif n == 2:
            t.format = reader.int32(f, "input.format")
        elif n == 3:
            t.shape = _shape(reader, f, "input.shape")
        elif n == 4:
            _data(reader, f, t)
        elif n == 5:
            t.size = reader.uint(f, "input.size")
        elif n == 6:
            t.original_shape = _shape(reader, f, "input.original_shape")
        elif n == 7:
            t.sub_format = reader.int32(f, "input.sub_format")
        elif n == 8:
            t.address = reader.uint(f, "input.address")
        elif n == 9:
            t.offset = reader.uint(f, "input.offset")
        elif n == 10:
            t.arg_index = reader.uint(f, "input.arg_index", 32)
        elif n == 11:
            t.input_type = reader.uint(f, "input.input_type", 32)
    return t


def _op_buffer(reader: WireReader, outer: Field, index: int) -> TensorHeader:
    reader.expect(outer, WIRE_LEN, "buffer")
    t = TensorHeader(ROLE_BUFFER, index)
    for f in reader.fields(outer.start, outer.end):
        if f.number == 1:
            t.buffer_type = reader.int32(f, "buffer.buffer_type")
        elif f.number == 2:
            _data(reader, f, t)
        elif f.number == 3:
            t.size = reader.uint(f, "buffer.size")
    return t


def _workspace(reader: WireReader, outer: Field, index: int) -> TensorHeader:
    reader.expect(outer, WIRE_LEN, "space")
    t = TensorHeader(ROLE_SPACE, index)
    for f in reader.fields(outer.start, outer.end):
        if f.number == 1:
            t.space_type = reader.int32(f, "space.type")
        elif f.number == 2:
            _data(reader, f, t)
        elif f.number == 3:
            t.size = reader.uint(f, "space.size")
        elif f.number == 4:
            t.arg_index = reader.uint(f, "space.arg_index", 32)
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
            h.outputs.append(_op_output(reader, f, len(h.outputs)))
        elif n == 4:
            h.inputs.append(_op_input(reader, f, len(h.inputs)))
        elif n == 5:
            h.buffers.append(_op_buffer(reader, f, len(h.buffers)))
        elif n == 6:
            h.op_name = reader.string(f, "op_name")
        elif n == 7:
            h.attrs.append(_attr(reader, f))
        elif n == 8:
            h.spaces.append(_workspace(reader, f, len(h.spaces)))
        elif n == 9:
            h.dfx_message = reader.string(f, "dfx_message")
    return h
