"""Writing operator dump files, statistics CSVs and Opdebug overflow records.

Layout (docs/reference/dump_formats.md §1): ``u64 LE header length``, the
``toolkit.dumpdata.DumpData`` protobuf header (version "2.0", µs timestamps,
the *proto* dtype/format enums), then the raw input bytes, then the output
bytes. The protobuf schema is built in code from descriptor_pb2 (no protoc
step, no generated files).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool

from aclmon import acl_constants as C

try:  # protobuf >= 4.22
    from google.protobuf.message_factory import GetMessageClass as _get_message_class
except ImportError:  # pragma: no cover - older protobuf
    from google.protobuf.message_factory import MessageFactory

    def _get_message_class(descriptor):
        return MessageFactory().GetPrototype(descriptor)


# ------------------------------------------------ the dump proto enums (NOT aclDataType)
#: aclDataType -> dump proto OutputDataType (dump_formats.md §1.3); a separate numbering.
ACL_TO_PROTO_DTYPE: dict[int, int] = {
    C.ACL_DT_UNDEFINED: 0,
    C.ACL_FLOAT: 1,
    C.ACL_FLOAT16: 2,
    C.ACL_INT8: 3,
    C.ACL_UINT8: 4,
    C.ACL_INT16: 5,
    C.ACL_UINT16: 6,
    C.ACL_INT32: 7,
    C.ACL_INT64: 8,
    C.ACL_UINT32: 9,
    C.ACL_UINT64: 10,
    C.ACL_BOOL: 11,
    C.ACL_DOUBLE: 12,
    C.ACL_STRING: 13,
    C.ACL_COMPLEX64: 16,
    C.ACL_COMPLEX128: 17,
    C.ACL_BF16: 27,
    C.ACL_INT4: 28,
    C.ACL_UINT1: 29,
    C.ACL_COMPLEX32: 32,
    C.ACL_HIFLOAT8: 33,
    C.ACL_FLOAT8_E5M2: 34,
    C.ACL_FLOAT8_E4M3FN: 35,
    C.ACL_FLOAT8_E8M0: 36,
    C.ACL_FLOAT6_E3M2: 37,
    C.ACL_FLOAT6_E2M3: 38,
    C.ACL_FLOAT4_E2M1: 39,
    C.ACL_FLOAT4_E1M2: 40,
}

#: aclFormat -> proto OutputFormat: the shared names have the same numbers.
_SHARED_FORMATS = (0, 1, 2, 3, 4, 12, 16, 27, 29, 30, 32, 33, 35, 47)
PROTO_FORMAT_ND = 2


def proto_format(acl_format: int) -> int:
    return acl_format if acl_format in _SHARED_FORMATS else PROTO_FORMAT_ND


def proto_dtype_name(acl_dtype: int) -> str:
    """The dump proto name of an aclDataType, as the stats CSV prints it ("DT_FLOAT16").

    The two enums share their names, not their numbers: ACL_FLOAT16 is DT_FLOAT16.
    """
    if ACL_TO_PROTO_DTYPE.get(acl_dtype, 0) == 0:
        return "DT_UNDEFINED"
    return "DT_" + C.DATA_TYPE_NAMES[acl_dtype].removeprefix("ACL_")


def proto_format_name(acl_format: int) -> str:
    """The proto format name ("NC1HWC0") of what an aclFormat is written as."""
    return C.FORMAT_NAMES[proto_format(acl_format)].removeprefix("ACL_").removeprefix("FORMAT_")


# ------------------------------------------------ the DumpData schema, built in code
def _build_schema() -> tuple[type, type, type]:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="aclmon_sim/dump_data.proto", package="toolkit.dumpdata", syntax="proto3"
    )
    F = descriptor_pb2.FieldDescriptorProto
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED

    def message(name: str, fields: list[tuple[str, int, int, int, str]]) -> None:
        msg = fdp.message_type.add(name=name)
        for field_name, number, label, kind, type_name in fields:
            field = msg.field.add(name=field_name, number=number, label=label, type=kind)
            if type_name:
                field.type_name = type_name

    u64, u32, i32, s, b, m = (
        F.TYPE_UINT64,
        F.TYPE_UINT32,
        F.TYPE_INT32,
        F.TYPE_STRING,
        F.TYPE_BYTES,
        F.TYPE_MESSAGE,
    )
    shape = ".toolkit.dumpdata.Shape"
    message("Shape", [("dim", 1, rep, u64, "")])
    # OpOutput and OpInput carry the same tensor fields under their own numbers:
    # (field, kind, message type, number in OpOutput, number in OpInput). dtype and
    # format are proto enums on the wire (varints); int32 fields encode identically,
    # and keep the writer free of the long enum tables.
    tensor_fields = (
        ("data_type", i32, "", 1, 1),
        ("format", i32, "", 2, 2),
        ("shape", m, shape, 3, 3),
        ("data", b, "", 5, 4),
        ("size", u64, "", 6, 5),
        ("original_shape", m, shape, 7, 6),
        ("sub_format", i32, "", 8, 7),
        ("address", u64, "", 9, 8),
        ("arg_index", u32, "", 12, 10),  # exception dumps (toolkit.dump twin)
    )
    message("OpOutput", [(f, out, opt, k, t) for f, k, t, out, _ in tensor_fields])
    message(
        "OpInput",
        [(f, in_, opt, k, t) for f, k, t, _, in_ in tensor_fields]
        + [("input_type", 11, opt, u32, "")],
    )
    message(
        "DumpData",
        [
            ("version", 1, opt, s, ""),
            ("dump_time", 2, opt, u64, ""),
            ("output", 3, rep, m, ".toolkit.dumpdata.OpOutput"),
            ("input", 4, rep, m, ".toolkit.dumpdata.OpInput"),
            ("op_name", 6, opt, s, ""),
        ],
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = pool.FindMessageTypeByName
    return (
        _get_message_class(get("toolkit.dumpdata.DumpData")),
        _get_message_class(get("toolkit.dumpdata.OpInput")),
        _get_message_class(get("toolkit.dumpdata.OpOutput")),
    )


DumpData, OpInput, OpOutput = _build_schema()


@dataclass(frozen=True)
class DumpTensor:
    """One tensor as it goes into a dump: its stored bytes and how to read them."""

    acl_dtype: int
    acl_format: int
    shape: tuple[int, ...]
    original_shape: tuple[int, ...]
    data: bytes
    address: int = 0
    #: kernel argument position, for exception dumps (None = not written)
    arg_index: int | None = None


#: DfxTensorType of a kernel input in exception dumps (dump_formats.md §1.6).
DFX_TENSOR_INPUT = 2


def sanitize(name: str) -> str:
    """File-name form of an op type/name: space . / \\ become _ (dump_task.h)."""
    return name.replace(" ", "_").replace(".", "_").replace("/", "_").replace("\\", "_")


def dump_file_name(op_type: str, op_name: str, task_id: int, stream_id: int, ts_us: int) -> str:
    return f"{sanitize(op_type)}.{sanitize(op_name)}.{task_id}.{stream_id}.{ts_us}"


def _fill_entry(entry: Any, tensor: DumpTensor) -> Any:  # entry: a generated protobuf message
    entry.data_type = ACL_TO_PROTO_DTYPE.get(tensor.acl_dtype, 0)
    entry.format = proto_format(tensor.acl_format)
    entry.shape.dim.extend(tensor.shape)
    entry.size = len(tensor.data)
    if tensor.original_shape != tensor.shape:
        entry.original_shape.dim.extend(tensor.original_shape)
    if tensor.address:
        entry.address = tensor.address
    if tensor.arg_index is not None:
        entry.arg_index = tensor.arg_index
    return entry


def encode_dump(
    op_name: str,
    dump_time_us: int,
    inputs: list[DumpTensor],
    outputs: list[DumpTensor],
) -> bytes:
    """The complete 2.0 dump file: length, header, input bytes, output bytes."""
    header = DumpData(version="2.0", dump_time=dump_time_us, op_name=op_name)
    for tensor in outputs:
        _fill_entry(header.output.add(), tensor)
    for tensor in inputs:
        entry = _fill_entry(header.input.add(), tensor)
        if tensor.arg_index is not None:
            entry.input_type = DFX_TENSOR_INPUT
    body = header.SerializeToString()
    parts = [struct.pack("<Q", len(body)), body]
    parts.extend(t.data for t in inputs)
    parts.extend(t.data for t in outputs)
    return b"".join(parts)


def write_atomically(path: Path, data: bytes) -> None:
    """Write via a temporary name so a directory watcher never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


STATS_HEADER = (
    "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,"
    "Avg Value,Count,Nan Count,Negative Inf Count,Positive Inf Count"
)


def _stat_values(values: np.ndarray) -> dict[str, str]:
    wide = values.astype(np.float64).ravel()
    finite = wide[np.isfinite(wide)]
    nan = float("nan")
    return {
        "Max": repr(float(finite.max())) if finite.size else repr(nan),
        "Min": repr(float(finite.min())) if finite.size else repr(nan),
        "Avg": repr(float(finite.mean())) if finite.size else repr(nan),
        "L2norm": repr(float(np.sqrt(np.square(finite).sum()))),
        "Count": str(wide.size),
        "Nan": str(int(np.isnan(wide).sum())),
        "Negative Inf": str(int(np.isneginf(wide).sum())),
        "Positive Inf": str(int(np.isposinf(wide).sum())),
    }


def stats_csv(
    inputs: list[tuple[DumpTensor, np.ndarray]],
    outputs: list[tuple[DumpTensor, np.ndarray]],
    selected: tuple[str, ...] = (),
) -> str:
    """The statistics CSV (dump_data = stats) for one operator (dump_formats.md §5).

    Without ``dump_stats`` it is the host-side form (Max/Min/Avg Value and the
    Nan/Inf counts); with it, the device-side form: ``Count`` then exactly the
    selected statistics, named as in acl.json.
    """
    if selected:
        header = "Input/Output,Index,Data Size,Data Type,Format,Shape,Count," + ",".join(selected)
        columns = ("Count", *selected)
    else:
        header = STATS_HEADER
        columns = ("Max", "Min", "Avg", "Count", "Nan", "Negative Inf", "Positive Inf")
    rows = [header]
    for label, tensors in (("Input", inputs), ("Output", outputs)):
        for index, (tensor, values) in enumerate(tensors):
            stats = _stat_values(values)
            shape = "x".join(str(d) for d in tensor.shape) if tensor.shape else "-"
            dtype, fmt = proto_dtype_name(tensor.acl_dtype), proto_format_name(tensor.acl_format)
            fields = [label, str(index), str(len(tensor.data)), dtype, fmt, shape]
            rows.append(",".join(fields + [stats[c] for c in columns]))
    return "\n".join(rows) + "\n"


# ------------------------------------------------ Opdebug overflow records (§2)
OLD_RECORD_SIZE = 2048
MAGIC = 0x5A5A5A5A
ACC_TYPE_AIC = 0
ACC_TYPE_AIV = 1
TASK_TYPE_AICORE = 0


@dataclass(frozen=True)
class OverflowInfo:
    model_id: int
    stream_id: int
    task_id: int
    pc_start: int
    para_base: int
    block_idx: int
    core_id: int
    status: int
    cube: bool


def old_overflow_record(info: OverflowInfo) -> bytes:
    """The 2048-byte record: DHA / L2 atomic blocks zero, AI Core info + status set."""
    record = bytearray(OLD_RECORD_SIZE)
    struct.pack_into(
        "<6Q",
        record,
        256,
        info.model_id,
        info.stream_id,
        info.task_id,
        TASK_TYPE_AICORE,
        info.pc_start,
        info.para_base,
    )
    struct.pack_into("<3Q", record, 1024, info.pc_start, info.block_idx, info.status)
    return bytes(record)


def new_overflow_record(info: OverflowInfo) -> bytes:
    """The magic layout, version 0: 24-byte head + 11 u64 (data_len 88)."""
    head = struct.pack("<6I", MAGIC, 0, 1, ACC_TYPE_AIC if info.cube else ACC_TYPE_AIV, 0, 88)
    body = struct.pack(
        "<11Q",
        info.model_id,
        info.stream_id,
        info.task_id,
        TASK_TYPE_AICORE,
        0,  # context_id
        0,  # thread_id
        info.pc_start,
        info.para_base,
        info.core_id,
        info.block_idx,
        info.status,
    )
    return head + body


def encode_overflow_file(record: bytes, dump_time_us: int) -> bytes:
    """An Opdebug file: a 2.0 dump container whose single output is the record."""
    tensor = DumpTensor(
        acl_dtype=C.ACL_UINT8,
        acl_format=C.ACL_FORMAT_ND,
        shape=(len(record),),
        original_shape=(len(record),),
        data=record,
    )
    return encode_dump("Node_OpDebug", dump_time_us, [], [tensor])
