"""An independent reader of the dump files the sim writes (tests only).

Written from docs/reference/dump_formats.md alone, with its own protobuf
varint decoder and its own format conversion, so that a bug in the sim's writer
cannot hide behind the same bug in a shared reader (aclmon.dump is deliberately
not used).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

# proto OutputDataType -> numpy (dump_formats.md §1.3 / §1.5)
PROTO_DTYPES = {
    1: np.dtype(np.float32),
    2: np.dtype(np.float16),
    3: np.dtype(np.int8),
    4: np.dtype(np.uint8),
    5: np.dtype(np.int16),
    6: np.dtype(np.uint16),
    7: np.dtype(np.int32),
    8: np.dtype(np.int64),
    9: np.dtype(np.uint32),
    10: np.dtype(np.uint64),
    11: np.dtype(np.bool_),
    12: np.dtype(np.float64),
    27: np.dtype(ml_dtypes.bfloat16),
}
FORMAT_NCHW, FORMAT_ND, FORMAT_NC1HWC0, FORMAT_FRACTAL_NZ = 0, 2, 3, 29


class ReadError(Exception):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ReadError(f"bad varint at {pos}")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(buf: bytes) -> list[tuple[int, int, object]]:
    pos, out = 0, []
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise ReadError("field runs past the end")
            value, pos = buf[pos : pos + length], pos + length
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ReadError(f"wire type {wire}")
        out.append((number, wire, value))
    return out


def _shape(buf: bytes) -> list[int]:
    dims: list[int] = []
    for number, wire, value in _fields(buf):
        if number != 1:
            continue
        if wire == 2:  # packed
            pos = 0
            while pos < len(value):  # type: ignore[arg-type]
                dim, pos = _varint(value, pos)  # type: ignore[arg-type]
                dims.append(dim)
        else:
            dims.append(value)  # type: ignore[arg-type]
    return dims


@dataclass
class Tensor:
    data_type: int = 0
    format: int = 0
    shape: list[int] = field(default_factory=list)
    original_shape: list[int] = field(default_factory=list)
    size: int = 0
    address: int = 0
    arg_index: int = 0
    input_type: int = 0
    data: bytes = b""

    def array(self) -> np.ndarray:
        dtype = PROTO_DTYPES[self.data_type]
        return np.frombuffer(self.data, dtype=dtype).reshape(self.shape)

    def logical(self) -> np.ndarray:
        """Convert the device layout back (msaccucmp table, dump_formats.md §3)."""
        arr = self.array()
        target = self.original_shape or self.shape
        if self.format == FORMAT_NC1HWC0:
            n, c1, h, w, c0 = arr.shape
            full = arr.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
            return full[:, : target[1]]
        if self.format == FORMAT_FRACTAL_NZ:
            b = int(np.prod(target[:-2])) if len(target) > 2 else 1
            c1, no, ni, c0 = arr.shape[-4:]
            full = (
                arr.reshape(b, c1, no, ni, c0).transpose(0, 2, 3, 1, 4).reshape(b, no * ni, c1 * c0)
            )
            return full[:, : target[-2], : target[-1]].reshape(target)
        return arr


@dataclass
class DumpFile:
    header_length: int
    version: str = ""
    dump_time: int = 0
    op_name: str = ""
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)


def _tensor(buf: bytes, is_output: bool) -> Tensor:
    t = Tensor()
    size_field, original_field, address_field = (6, 7, 9) if is_output else (5, 6, 8)
    for number, _, value in _fields(buf):
        if number == 1:
            t.data_type = value  # type: ignore[assignment]
        elif number == 2:
            t.format = value  # type: ignore[assignment]
        elif number == 3:
            t.shape = _shape(value)  # type: ignore[arg-type]
        elif number == size_field:
            t.size = value  # type: ignore[assignment]
        elif number == original_field:
            t.original_shape = _shape(value)  # type: ignore[arg-type]
        elif number == address_field:
            t.address = value  # type: ignore[assignment]
        elif number == (12 if is_output else 10):
            t.arg_index = value  # type: ignore[assignment]
        elif number == 11 and not is_output:
            t.input_type = value  # type: ignore[assignment]
    return t


def read_dump(raw: bytes) -> DumpFile:
    if len(raw) < 8:
        raise ReadError("shorter than the length prefix")
    (length,) = struct.unpack_from("<Q", raw, 0)
    if length > len(raw) - 8:
        raise ReadError("header longer than the file")
    dump = DumpFile(length)
    for number, _, value in _fields(raw[8 : 8 + length]):
        if number == 1:
            dump.version = value.decode()  # type: ignore[union-attr]
        elif number == 2:
            dump.dump_time = value  # type: ignore[assignment]
        elif number == 3:
            dump.outputs.append(_tensor(value, True))  # type: ignore[arg-type]
        elif number == 4:
            dump.inputs.append(_tensor(value, False))  # type: ignore[arg-type]
        elif number == 6:
            dump.op_name = value.decode()  # type: ignore[union-attr]
    pos = 8 + length
    for t in dump.inputs + dump.outputs:  # payload: inputs first, then outputs
        t.data = raw[pos : pos + t.size]
        pos += t.size
    if pos != len(raw):
        raise ReadError(f"sizes add up to {pos}, file has {len(raw)} bytes")
    return dump


def read_old_overflow(record: bytes) -> dict[str, int]:
    if len(record) != 2048:
        raise ReadError("old Opdebug records are exactly 2048 bytes")
    ai = struct.unpack_from("<6Q", record, 256)
    kernel_code, block_idx, status = struct.unpack_from("<3Q", record, 1024)
    return {
        "model_id": ai[0],
        "stream_id": ai[1],
        "task_id": ai[2],
        "task_type": ai[3],
        "pc_start": ai[4],
        "kernel_code": kernel_code,
        "block_idx": block_idx,
        "status": status,
        "dha_status": struct.unpack_from("<Q", record, 512)[0],
        "l2_status": struct.unpack_from("<Q", record, 768)[0],
    }


def read_new_overflow(record: bytes) -> dict[str, int]:
    magic, version, valid, acc_type, _, data_len = struct.unpack_from("<6I", record, 0)
    if magic != 0x5A5A5A5A:
        raise ReadError("no magic")
    names = [
        "model_id",
        "stream_id",
        "task_id",
        "task_type",
        "context_id",
        "thread_id",
        "pc_start",
        "para_base",
        "core_id",
        "block_id",
        "status",
    ]
    values = struct.unpack_from("<11Q", record, 24)
    return {
        "version": version,
        "valid": valid,
        "acc_type": acc_type,
        "data_len": data_len,
        **dict(zip(names, values, strict=True)),
    }
