"""A hand-written, bounds-checked protobuf wire-format reader.

Dump headers are protobuf. We decode them ourselves rather than with the
protobuf library so that (a) every error is a :class:`DecodeError` with the
file name and the absolute byte offset, (b) nothing is allocated from a length
we have not checked against the bytes actually present, and (c) our reader is
independent of the simulator, which writes headers with the protobuf library.

Only what proto3 uses is accepted: varint (0), 64-bit (1), length-delimited (2)
and 32-bit (5). Groups (3/4) do not occur in the dump schemas and are rejected.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from aclmon.errors import DecodeError

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_LEN = 2
WIRE_FIXED32 = 5

_MASK64 = (1 << 64) - 1


class Field(NamedTuple):
    """One field occurrence. For ``WIRE_LEN`` the value is in ``start:end``."""

    number: int
    wire_type: int
    value: int  # varint / fixed value; for WIRE_LEN the byte length
    start: int  # index of the value's first byte in the buffer
    end: int  # index just past the value


class WireReader:
    """Reads fields from ``buf[start:end]``; ``base`` maps buffer indices to file offsets."""

    __slots__ = ("base", "buf", "source")

    def __init__(self, buf: memoryview | bytes, source: str, base: int = 0) -> None:
        self.buf = buf
        self.source = source
        self.base = base

    def error(self, index: int, reason: str) -> DecodeError:
        return DecodeError(self.source, self.base + index, reason)

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        buf = self.buf
        result = 0
        shift = 0
        start = pos
        while True:
            if pos >= end:
                raise self.error(start, "truncated varint")
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result & _MASK64, pos
            shift += 7
            if shift >= 70:
                raise self.error(start, "varint longer than 10 bytes")

    def fields(self, start: int, end: int) -> Iterator[Field]:
        pos = start
        buf = self.buf
        while pos < end:
            tag_at = pos
            # one-byte varints (field numbers up to 15, values up to 127: most of a
            # header) are read inline; longer ones by varint()
            tag = buf[pos]
            if tag < 0x80:
                pos += 1
            else:
                tag, pos = self.varint(pos, end)
            number = tag >> 3
            wire_type = tag & 7
            if number == 0 or number > 0x1FFFFFFF:
                raise self.error(tag_at, f"invalid field number {number}")
            if wire_type == WIRE_VARINT:
                value_at = pos
                if pos < end and buf[pos] < 0x80:
                    value = buf[pos]
                    pos += 1
                else:
                    value, pos = self.varint(pos, end)
                yield Field(number, wire_type, value, value_at, pos)
            elif wire_type == WIRE_LEN:
                if pos < end and buf[pos] < 0x80:
                    length = buf[pos]
                    pos += 1
                else:
                    length, pos = self.varint(pos, end)
                if length > end - pos:
                    raise self.error(
                        tag_at,
                        f"field {number}: length {length} runs past the end "
                        f"of its message ({end - pos} bytes left)",
                    )
                yield Field(number, wire_type, length, pos, pos + length)
                pos += length
            elif wire_type in (WIRE_FIXED64, WIRE_FIXED32):
                width = 8 if wire_type == WIRE_FIXED64 else 4
                if width > end - pos:
                    raise self.error(tag_at, f"field {number}: truncated fixed{width * 8}")
                value = int.from_bytes(bytes(buf[pos : pos + width]), "little")
                yield Field(number, wire_type, value, pos, pos + width)
                pos += width
            else:
                raise self.error(tag_at, f"field {number}: unsupported wire type {wire_type}")

    # -- typed accessors, used by the schema decoder ---------------------------
    def expect(self, field: Field, wire_type: int, what: str) -> None:
        if field.wire_type != wire_type:
            raise self.error(
                field.start,
                f"{what} (field {field.number}) has wire type {field.wire_type}, "
                f"expected {wire_type}",
            )

    def string(self, field: Field, what: str) -> str:
        self.expect(field, WIRE_LEN, what)
        # Names come from user models; a broken byte should not hide the rest.
        return bytes(self.buf[field.start : field.end]).decode("utf-8", errors="replace")

    def uint(self, field: Field, what: str, bits: int = 64) -> int:
        self.expect(field, WIRE_VARINT, what)
        return field.value & ((1 << bits) - 1)

    def int32(self, field: Field, what: str) -> int:
        self.expect(field, WIRE_VARINT, what)
        value = field.value & 0xFFFFFFFF
        return value - (1 << 32) if value & 0x80000000 else value

    def repeated_uint64(self, field: Field, what: str) -> list[int]:
        """Accept both packed (wire type 2) and unpacked (wire type 0) encodings."""
        if field.wire_type == WIRE_VARINT:
            return [field.value]
        self.expect(field, WIRE_LEN, what)
        values = []
        pos = field.start
        while pos < field.end:
            value, pos = self.varint(pos, field.end)
            values.append(value)
        return values
