"""Test fixtures built from the reference tables, independently of aclmon.dump.

Headers are serialised by the *protobuf library* from a schema we declare here
(docs/reference/dump_formats.md §1.3), so a bug in our hand-written wire
decoder cannot hide in the fixtures. Payload bytes are packed by hand.
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
    "uint64": _F.TYPE_UINT64,
    "uint32": _F.TYPE_UINT32,
    "int32": _F.TYPE_INT32,
}

# (message, [(number, name, type or message name, repeated)])
_SCHEMA = {
    "Shape": [(1, "dim", "uint64", True)],
    "DimRange": [(1, "dim_start", "uint64", False), (2, "dim_end", "uint64", False)],
    "OriginalOp": [(1, "name", "string", False), (2, "output_index", "uint32", False),
                   (3, "data_type", "int32", False), (4, "format", "int32", False)],
    "OpOutput": [(1, "data_type", "int32", False), (2, "format", "int32", False), (3, "shape", "Shape", False),
                 (4, "original_op", "OriginalOp", False), (5, "data", "bytes", False), (6, "size", "uint64", False),
                 (7, "original_shape", "Shape", False), (8, "sub_format", "int32", False),
                 (9, "address", "uint64", False), (10, "dim_range", "DimRange", True),
                 (11, "offset", "uint64", False), (12, "arg_index", "uint32", False)],
    "OpInput": [(1, "data_type", "int32", False), (2, "format", "int32", False), (3, "shape", "Shape", False),
                (4, "data", "bytes", False), (5, "size", "uint64", False), (6, "original_shape", "Shape", False),
                (7, "sub_format", "int32", False), (8, "address", "uint64", False), (9, "offset", "uint64", False),
                (10, "arg_index", "uint32", False), (11, "input_type", "uint32", False)],
    "OpBuffer": [(1, "buffer_type", "int32", False), (2, "data", "bytes", False), (3, "size", "uint64", False)],
    "OpAttr": [(1, "name", "string", False), (2, "value", "string", False)],
    "Workspace": [(1, "type", "int32", False), (2, "data", "bytes", False), (3, "size", "uint64", False),
                  (4, "arg_index", "uint32", False)],
    "DumpData": [(1, "version", "string", False), (2, "dump_time", "uint64", False), (3, "output", "OpOutput", True),
                 (4, "input", "OpInput", True), (5, "buffer", "OpBuffer", True), (6, "op_name", "string", False),
                 (7, "attr", "OpAttr", True), (8, "space", "Workspace", True), (9, "dfx_message", "string", False)],
}  # fmt: skip


def _build_classes() -> dict[str, type]:
    proto = descriptor_pb2.FileDescriptorProto(
        name="aclmon_tests_dump_data.proto", package="toolkit.dumpdata", syntax="proto3"
    )
    for message_name, fields in _SCHEMA.items():
        message = proto.message_type.add(name=message_name)
        for number, name, kind, repeated in fields:
            f = message.field.add(name=name, number=number)
            f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if kind in _SCALARS:
                f.type = _SCALARS[kind]
            else:
                f.type = _F.TYPE_MESSAGE
                f.type_name = f".toolkit.dumpdata.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"toolkit.dumpdata.{name}")
        )
        for name in _SCHEMA
    }


PB = _build_classes()


@dataclass
class T:
    """A tensor for a fixture: its raw bytes and header fields (proto numbering)."""

    data: bytes
    dtype: int = 1
    fmt: int = 2
    shape: Sequence[int] = ()
    original_shape: Sequence[int] = ()
    size: int | None = None  # default: len(data)
    extra: dict = field(default_factory=dict)


def header_message(
    inputs: Sequence[T] = (),
    outputs: Sequence[T] = (),
    buffers: Sequence[bytes] = (),
    spaces: Sequence[bytes] = (),
    op_name: str = "op",
    version: str = "2.0",
    dump_time: int = 1700000000000000,
    embed: bool = False,
    **extra,
):
    msg = PB["DumpData"](version=version, dump_time=dump_time, op_name=op_name, **extra)
    for role, items in (("output", outputs), ("input", inputs)):
        for t in items:
            entry = getattr(msg, role).add(data_type=t.dtype, format=t.fmt, **t.extra)
            entry.size = len(t.data) if t.size is None else t.size
            entry.shape.dim.extend(t.shape)
            if t.original_shape:
                entry.original_shape.dim.extend(t.original_shape)
            if embed:
                entry.data = t.data
    for data in buffers:
        msg.buffer.add(buffer_type=0, size=len(data), data=data if embed else b"")
    for data in spaces:
        msg.space.add(type=0, size=len(data), data=data if embed else b"")
    return msg


def dump_bytes(
    inputs: Sequence[T] = (),
    outputs: Sequence[T] = (),
    buffers: Sequence[bytes] = (),
    spaces: Sequence[bytes] = (),
    **kwargs,
) -> bytes:
    """A 2.0 file: u64 header length, header, inputs, outputs, buffers, workspaces."""
    header = header_message(inputs, outputs, buffers, spaces, **kwargs).SerializeToString()
    payload = b"".join(t.data for t in inputs) + b"".join(t.data for t in outputs)
    payload += b"".join(buffers) + b"".join(spaces)
    return struct.pack("<Q", len(header)) + header + payload


def write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def opdebug_old(values: dict[int, int]) -> bytes:
    """2048-byte old overflow record with u64 ``values`` at the given offsets."""
    record = bytearray(2048)
    for offset, value in values.items():
        struct.pack_into("<Q", record, offset, value)
    return bytes(record)


def opdebug_new(acc_type: int, words: Sequence[int], version: int = 0, data_len: int | None = None,
                valid: int = 1) -> bytes:  # fmt: skip
    data_len = 8 * len(words) if data_len is None else data_len
    return struct.pack("<6I", 0x5A5A5A5A, version, valid, acc_type, 0, data_len) + struct.pack(
        f"<{len(words)}Q", *words
    )


def nano_bytes(inputs: Sequence[tuple[int, int, Sequence[int], bytes]],
               outputs: Sequence[tuple[int, int, Sequence[int], bytes, str]], version_id: int = 1) -> bytes:  # fmt: skip
    """A nano dump (MP nano_dump_data.py layout); dtypes in ge/acl numbering."""

    def tlnv(tag: int, payload: bytes) -> bytes:
        return struct.pack("<II", tag, len(payload)) + payload

    def dims(values: Sequence[int]) -> bytes:
        return struct.pack(f"<{len(values)}Q", *values)

    in_desc = struct.pack("<I", len(inputs))
    for ge_type, fmt, shape, data in inputs:
        lists = tlnv(0, dims(shape)) + tlnv(1, dims(shape))
        in_desc += (
            struct.pack("<iiiQQQI", ge_type, fmt, 0, 0x1000, 0, len(data), len(lists)) + lists
        )
    out_desc = struct.pack("<I", len(outputs))
    for ge_type, fmt, shape, data, name in outputs:
        lists = tlnv(0, dims(shape)) + tlnv(1, dims(shape)) + tlnv(2, name.encode())
        out_desc += struct.pack(
            "<iiiiiiQQQI", ge_type, fmt, 0, 0, ge_type, fmt, 0x2000, 0, len(data), len(lists)
        )
        out_desc += lists
    head = struct.pack("<II", 0x5A5A5A5A, version_id) + tlnv(4, in_desc) + tlnv(5, out_desc)
    payload = b"".join(i[3] for i in inputs) + b"".join(o[3] for o in outputs)
    return struct.pack("<Q", len(head)) + head + payload


def run_cli(argv: list[str], commands: dict[str, Callable[[argparse.ArgumentParser], None]]) -> int:
    """aclmon's dispatcher for these subcommands only (``name -> configure_name``), so
    other packages' work in progress cannot break the dump tests: exit status, and
    an ``AclmonError`` printed as the real dispatcher prints it."""
    from aclmon.errors import AclmonError

    parser = argparse.ArgumentParser(prog="aclmon")
    sub = parser.add_subparsers(dest="command")
    for name, configure in commands.items():
        configure(sub.add_parser(name))
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except AclmonError as exc:
        print(f"aclmon {args.command}: {exc}", file=sys.stderr)
        return 1
