"""Nano dumps: ``u64 head_len`` + a TLV head (magic 0x5A5A5A5A) + input and output bytes.

Layout per docs/reference/dump_formats.md §5 (MP ``nano_dump_data.py``): the
head holds TLV tag 4 (input descriptions) and tag 5 (output descriptions); each
description carries optional TLNV lists (tag 0 shape, tag 1 original shape,
tag 2 original name for outputs). ``data_type`` uses the ge/acl numbering and
is translated to the proto numbering here. An absent or mis-tagged optional
TLV is treated as missing, as msaccucmp does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from aclmon.dump import proto_enums as pe
from aclmon.dump.header import ROLE_INPUT, ROLE_OUTPUT, DumpHeader, TensorHeader
from aclmon.errors import DecodeError

NANO_MAGIC = 0x5A5A5A5A
TAG_INPUT_DESC = 4
TAG_OUTPUT_DESC = 5
TAG_SHAPE = 0
TAG_ORIGINAL_SHAPE = 1
TAG_ORIGINAL_NAME = 2
_INPUT_FIXED = struct.Struct(
    "<iiiQQQI"
)  # data_type, format, address_type, address, offset, size, tlv_list_len
_OUTPUT_FIXED = struct.Struct(
    "<iiiiiiQQQI"
)  # + original_index, original_data_type, original_format


class _Cursor:
    """Bounds-checked little-endian reads over ``buf[pos:end]``; offsets are file offsets."""

    def __init__(self, buf: bytes, base: int, source: str) -> None:
        self.buf = buf
        self.base = base
        self.pos = 0
        self.end = len(buf)
        self.source = source

    def error(self, reason: str, at: int | None = None) -> DecodeError:
        return DecodeError(self.source, self.base + (self.pos if at is None else at), reason)

    def take(self, count: int, what: str) -> bytes:
        if count > self.end - self.pos:
            raise self.error(f"{what}: needs {count} bytes, {self.end - self.pos} left in the head")
        chunk = self.buf[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def u32(self, what: str) -> int:
        value: int = struct.unpack("<I", self.take(4, what))[0]
        return value

    def peek_tag(self) -> int | None:
        if self.end - self.pos < 8:
            return None
        tag: int = struct.unpack_from("<I", self.buf, self.pos)[0]
        return tag

    def tlnv(self, tag: int, item: int, what: str) -> bytes | None:
        """An optional TL(N)V with ``tag``; returns its value bytes or ``None`` if absent."""
        if self.peek_tag() != tag:
            return None
        self.pos += 4
        length = self.u32(f"{what} length")
        value = self.take(length - length % item, what)
        self.take(length % item, what)  # a ragged tail is skipped, not read as an element
        return value


def _dims(value: bytes | None) -> tuple[int, ...]:
    if not value:
        return ()
    return tuple(struct.unpack(f"<{len(value) // 8}Q", value))


def _map_dtype(nano_type: int, th: TensorHeader) -> str:
    """Set the proto dtype; return a label if the ge type has no proto equivalent we decode."""
    proto = pe.NANO_DTYPE_TO_PROTO.get(nano_type)
    if proto is None:
        th.data_type = pe.DT_UNDEFINED
        return pe.NANO_DTYPE_NAMES.get(nano_type, f"ge data type {nano_type}")
    th.data_type = proto
    return ""


def _descriptions(cur: _Cursor, tag: int, role: str) -> list[tuple[TensorHeader, str]]:
    if cur.peek_tag() != tag:
        return []
    cur.pos += 4
    cur.u32(f"{role} description length")  # msaccucmp does not rely on it either
    count = cur.u32(f"{role} count")
    fixed = _INPUT_FIXED if role == ROLE_INPUT else _OUTPUT_FIXED
    if count * fixed.size > cur.end - cur.pos:
        raise cur.error(
            f"{count} {role} descriptions cannot fit in the {cur.end - cur.pos} bytes left"
        )
    result = []
    for index in range(count):
        values = fixed.unpack(cur.take(fixed.size, f"{role} {index}"))
        th = TensorHeader(role, index)
        if role == ROLE_INPUT:
            nano_type, th.format, _addr_type, th.address, th.offset, th.size, _tlv_len = values
        else:
            (nano_type, th.format, _addr_type, orig_index, orig_type, orig_format,
             th.address, th.offset, th.size, _tlv_len) = values  # fmt: skip
            th.original_op = {
                "name": "",
                "output_index": orig_index,
                "data_type": pe.NANO_DTYPE_TO_PROTO.get(orig_type, pe.DT_UNDEFINED),
                "format": orig_format,
            }
        label = _map_dtype(nano_type, th)
        th.shape = _dims(cur.tlnv(TAG_SHAPE, 8, f"{role} {index} shape"))
        th.original_shape = _dims(cur.tlnv(TAG_ORIGINAL_SHAPE, 8, f"{role} {index} original shape"))
        if role == ROLE_OUTPUT and th.original_op is not None:
            name = cur.tlnv(TAG_ORIGINAL_NAME, 1, f"{role} {index} original name")
            if name is not None:
                th.original_op["name"] = name.decode("utf-8", errors="replace")
        result.append((th, label))
    return result


@dataclass
class NanoHead:
    """The decoded TLV head; ``labels`` names ge types we do not decode (by tensor)."""

    head_len: int
    version_id: int
    header: DumpHeader
    labels: dict[tuple[str, int], str]


def parse_nano_head(data: np.ndarray, source: str, size: int) -> NanoHead:
    """Decode ``u64 head_len`` and the TLV head of a nano dump (``data`` holds at least
    the head; ``size`` is the file size)."""
    if size < 16 or int(data.shape[0]) < 16:
        raise DecodeError(source, 0, f"nano dump of {size} bytes is too short")
    head_len = int.from_bytes(bytes(data[:8]), "little")
    if head_len > size - 8:
        raise DecodeError(
            source, 0, f"TLV head length {head_len} exceeds the {size - 8} bytes after it"
        )
    cur = _Cursor(bytes(data[8 : 8 + head_len]), 8, source)
    if cur.u32("magic") != NANO_MAGIC:
        raise cur.error("missing nano magic 0x5A5A5A5A", at=0)
    version_id = cur.u32("version_id")
    inputs = _descriptions(cur, TAG_INPUT_DESC, ROLE_INPUT)
    outputs = _descriptions(cur, TAG_OUTPUT_DESC, ROLE_OUTPUT)
    header = DumpHeader(inputs=[t for t, _ in inputs], outputs=[t for t, _ in outputs])
    labels = {(t.role, t.index): label for t, label in (*inputs, *outputs) if label}
    return NanoHead(head_len, version_id, header, labels)
