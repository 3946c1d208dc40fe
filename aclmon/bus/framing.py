"""Frames over a byte stream: ``u32 LE length`` + one msgpack payload.

The same frames travel over sockets and fill recordings after their header.
Every length is checked against a maximum before a single byte of the frame is
buffered, so a hostile peer cannot make us allocate more than it really sent
(and never more than ``max_frame``).

Two readers share the rules:

- :class:`FrameDecoder` returns raw payloads (used for the command direction
  and by tests and tools that want bytes);
- :class:`StreamDecoder` goes straight from bytes to validated events with one
  streaming msgpack ``Unpacker`` over large reads: the fast path of a
  subscriber (see docs/events.md, "Decoding speed").
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from aclmon.errors import DecodeError
from aclmon.events import Event, EventDecoder

#: the length prefix
HEADER = struct.Struct("<I")
HEADER_SIZE = HEADER.size
#: default cap on one payload. Events are small; the largest legitimate ones are
#: exceptions with many tensors and dump summaries, far below this.
DEFAULT_MAX_FRAME = 4 * 1024 * 1024

_pack_length = HEADER.pack
_unpack_length = HEADER.unpack_from


class FrameError(DecodeError):
    """A frame that breaks the framing rules (oversized, or a payload that does
    not match its length). The stream cannot be trusted past it."""


def encode_frame(payload: bytes) -> bytes:
    """One frame: the payload's length then the payload."""
    return _pack_length(len(payload)) + payload


def split_frames(
    data: bytes | bytearray | memoryview,
    start: int,
    end: int,
    max_frame: int,
    source: str,
    base_offset: int = 0,
) -> tuple[list[int], int]:
    """Offsets of the complete frames in ``data[start:end]`` and where the
    first incomplete one starts. Raises :class:`FrameError` on an oversized
    length (``base_offset`` is added to offsets in the message)."""
    offsets: list[int] = []
    append = offsets.append
    pos = start
    while pos + HEADER_SIZE <= end:
        (length,) = _unpack_length(data, pos)
        if length > max_frame:
            raise FrameError(
                source, base_offset + pos, f"frame of {length} bytes exceeds the {max_frame} limit"
            )
        following = pos + HEADER_SIZE + length
        if following > end:
            break
        append(pos)
        pos = following
    return offsets, pos


class FrameDecoder:
    """Incremental frame splitter: ``feed(data) -> list[payload bytes]``.

    Buffers at most one incomplete frame, whose declared length was checked
    against ``max_frame`` first. After a :class:`FrameError` the decoder is
    poisoned: the stream has lost sync and the peer must be dropped.
    """

    __slots__ = ("_buffer", "_consumed", "_failed", "max_frame", "source")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, source: str = "stream") -> None:
        self.max_frame = max_frame
        self.source = source
        self._buffer = bytearray()
        self._consumed = 0  # bytes of the stream before _buffer[0], for error offsets
        self._failed: FrameError | None = None

    @property
    def pending(self) -> int:
        """Bytes held that do not yet form a complete frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        if self._failed is not None:
            raise self._failed
        buffer = self._buffer
        buffer += data
        try:
            offsets, stop = split_frames(
                buffer, 0, len(buffer), self.max_frame, self.source, self._consumed
            )
        except FrameError as exc:
            self._failed = exc
            buffer.clear()
            raise
        payloads = [
            bytes(buffer[o + HEADER_SIZE : o + HEADER_SIZE + _unpack_length(buffer, o)[0]])
            for o in offsets
        ]
        if stop:
            del buffer[:stop]
            self._consumed += stop
        return payloads


class StreamDecoder:
    """Bytes in, validated events out, in one pass per read.

    Complete frames are located with the length prefixes (checked against
    ``max_frame``); their bytes go into one streaming ``msgpack.Unpacker``
    which then reads ``header, object, header, object, ...``. Each object
    must end exactly where its frame says; a payload that is not exactly one
    valid event is counted as malformed by ``events`` (an
    :class:`EventDecoder`) and skipped, and the rest of that read is decoded
    frame by frame. Only an oversized length raises :class:`FrameError`:
    past it the stream has lost sync.
    """

    __slots__ = ("_framer", "_unpacker", "events", "frames")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, source: str = "stream") -> None:
        self._framer = FrameDecoder(max_frame, source)
        self.events = EventDecoder()
        self.frames = 0
        self._unpacker = self._new_unpacker()

    def _new_unpacker(self) -> Any:
        return msgpack.Unpacker(
            use_list=False,
            raw=False,
            strict_map_key=True,
            max_buffer_size=max(self._framer.max_frame * 2, 64 * 1024 * 1024),
        )

    @property
    def malformed(self) -> int:
        return self.events.malformed

    @property
    def unknown(self) -> int:
        return self.events.unknown

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        framer = self._framer
        if framer._failed is not None:
            raise framer._failed
        buffer = framer._buffer
        # Large reads usually arrive with nothing pending: work on them in place
        # and keep only the incomplete tail.
        if buffer:
            buffer += data
            work: bytes | bytearray | memoryview = buffer
        else:
            work = data
        try:
            offsets, stop = split_frames(
                work, 0, len(work), framer.max_frame, framer.source, framer._consumed
            )
        except FrameError as exc:
            framer._failed = exc
            buffer.clear()
            raise
        out: list[Event] = []
        if offsets:
            with memoryview(work) as view, view[:stop] as region:
                self._decode_complete(region, offsets, out)
            self.frames += len(offsets)
            framer._consumed += stop
        if work is buffer:
            del buffer[:stop]
        elif stop < len(work):
            buffer += work[stop:]
        return out

    def _decode_complete(self, region: memoryview, offsets: list[int], out: list[Event]) -> None:
        unpacker = self._unpacker
        base = unpacker.tell()
        unpacker.feed(region)
        read_bytes = unpacker.read_bytes
        unpack = unpacker.unpack
        tell = unpacker.tell
        decode = self.events.decode
        append = out.append
        for index, offset in enumerate(offsets):
            (length,) = _unpack_length(read_bytes(HEADER_SIZE))
            try:
                obj = unpack()
            except Exception:  # invalid msgpack: msgpack raises many types
                obj = _MISMATCH
            if obj is _MISMATCH or tell() - base - offset - HEADER_SIZE != length:
                # The payload is not exactly one msgpack object: this frame is
                # malformed, and the Unpacker may be out of step (or unusable).
                # Finish the region frame by frame and start a fresh Unpacker.
                self._unpacker = self._new_unpacker()
                self._decode_each(region, offsets[index:], out)
                return
            event = decode(obj)
            if event is not None:
                append(event)

    def _decode_each(self, region: memoryview, offsets: list[int], out: list[Event]) -> None:
        decode_payload = self.events.decode_payload
        for offset in offsets:
            (length,) = _unpack_length(region, offset)
            start = offset + HEADER_SIZE
            event = decode_payload(region[start : start + length])
            if event is not None:
                out.append(event)


_MISMATCH = object()
