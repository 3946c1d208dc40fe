"""The wire: frames (``u32 LE length`` + one msgpack payload) and batch decoding.

The one module that knows how events travel as bytes: sockets (the bus's
publisher and subscriber), recordings (after their file header) and replay all
use it. Every length is checked against a maximum before a single byte of the
frame is buffered, so a hostile peer cannot make us allocate more than it
really sent (and never more than ``max_frame``).

- :func:`encode_frame` / :func:`split_frames`: one frame out, frame offsets in;
- :func:`encode_frames`: a batch of events out as one buffer of frames (and
  :func:`encode_arrays`: the same from the arrays the wire carries);
- :class:`FrameDecoder` returns raw payloads (the command direction, tests and
  tools that want bytes);
- :class:`BatchDecoder` turns the complete frames of one buffer into validated
  events with one streaming msgpack ``Unpacker`` (the fast path of every
  subscriber and of replay, see docs/events.md, "Performance");
- :class:`StreamDecoder` = incremental splitting + :class:`BatchDecoder`;
- :func:`peek` (one payload) and :func:`peek_kinds` / :func:`peek_timestamps`
  (many, as numpy arrays): a payload's kind, whether its ``seq`` is 0 and its
  ``ts_ns`` from its first bytes, without decoding it. The recording index, the
  replay cursor's marker scan and the NATS relay's routing all peek this way.
"""

from __future__ import annotations

import gc
import itertools
import operator
import struct
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import msgpack

from aclmon.errors import DecodeError
from aclmon.events.codec import EventDecoder
from aclmon.events.registry import kind_of
from aclmon.events.schema import Event

if TYPE_CHECKING:  # numpy loads only in the functions that use it (the agent imports this)
    import numpy as np

    NDArray = np.ndarray[Any, Any]

#: the length prefix
HEADER = struct.Struct("<I")
HEADER_SIZE = HEADER.size
#: default cap on one payload. Events are small; the largest legitimate ones are
#: exceptions with many tensors and dump summaries, far below this.
DEFAULT_MAX_FRAME = 4 * 1024 * 1024

_pack_length = HEADER.pack
_unpack_length = HEADER.unpack_from
_packer = msgpack.Packer(use_bin_type=True, autoreset=True)
_pack = _packer.pack
_pack_array_header = _packer.pack_array_header
_kind_tuple = operator.attrgetter("KIND_TUPLE")
#: bytes of payloads a :class:`BatchDecoder` unpacks and validates at a time
SLICE_BYTES = 64 * 1024


class FrameError(DecodeError):
    """A frame that breaks the framing rules (oversized, or a payload that does
    not match its length). The stream cannot be trusted past it."""


def encode_frame(payload: bytes) -> bytes:
    """One frame: the payload's length then the payload."""
    return _pack_length(len(payload)) + payload


def encode_frames(events: list[Event]) -> tuple[bytes, list[tuple[Event, Exception]]]:
    """``events`` as frames in one buffer, and those msgpack cannot carry (left out,
    with why). Packing and framing run as C-level ``map`` calls over the whole
    batch: no Python bytecode per event."""
    failed: list[tuple[Event, Exception]] = []
    try:
        payloads = list(map(_pack, map(operator.add, map(_kind_tuple, events), events)))
    except Exception:  # some event msgpack cannot carry: find it, leave it out
        payloads = []
        for event in events:
            try:
                payloads.append(_pack((kind_of(type(event)), *event)))
            except Exception as exc:
                failed.append((event, exc))
    return _framed(payloads), failed


def encode_arrays(arrays: list[tuple[Any, ...]]) -> tuple[bytes, list[tuple[Any, Exception]]]:
    """Events given as the arrays the wire carries (``(kind, seq, ts_ns, ...)``, plain
    tuples) as frames in one buffer, and the arrays msgpack cannot carry (left out,
    with why)."""
    failed: list[tuple[Any, Exception]] = []
    try:
        payloads = list(map(_pack, arrays))
    except Exception:  # some array msgpack cannot carry: find it, leave it out
        payloads = []
        for array in arrays:
            try:
                payloads.append(_pack(array))
            except Exception as exc:
                failed.append((array, exc))
    return _framed(payloads), failed


#: the msgpack forms an int column may take, smallest first: (marker, struct code, size)
_INT_FORMS = ((b"\xce", "I", 4), (b"\xcf", "Q", 8), (b"\xd3", "q", 8))


def encode_columns(columns: list[Any], count: int) -> bytes | None:
    """``count`` events as frames in one buffer, the ``i``-th array being the ``i``-th
    item of each column (a sequence of plain ints: a ``range`` or a list), or the
    column itself when it is one int (the same in every array); None when a column does
    not fit one msgpack form (uint64 or int64) as a whole: the caller packs those arrays
    one by one. The caller
    makes sure the items are plain ints: a bool or a numpy int would be packed as an
    int, where msgpack packs the one as a bool and refuses the other.

    Each column takes one msgpack form for the whole batch (uint32, uint64 or int64,
    the smallest that holds all its values), so every frame has the same layout: a
    column is packed by one ``struct`` call and copied into all frames by C-level
    slice assignments, no Python code per event. The arrays decode to exactly what
    :func:`encode_arrays` would send (an int's form is msgpack's choice to make)."""
    template = bytearray(_pack_array_header(len(columns)))
    slots: list[tuple[int, int, bytes]] = []
    for column in columns:
        if type(column) is int:
            template += _pack(column)
            continue
        if len(column) != count:
            raise ValueError(f"a column of {len(column)} items for {count} arrays")
        for marker, code, size in _INT_FORMS:
            try:
                data = struct.pack(f">{count}{code}", *column)
            except struct.error:  # out of this form's range
                continue
            template += marker
            slots.append((HEADER_SIZE + len(template), size, data))
            template += bytes(size)
            break
        else:
            return None
    step = HEADER_SIZE + len(template)
    out = bytearray(_pack_length(len(template)) + template) * count
    for start, size, data in slots:
        for byte in range(size):
            out[start + byte :: step] = data[byte::size]
    return bytes(out)


def encode_segments(segments: list[Any]) -> tuple[bytes, list[tuple[Any, Exception]]]:
    """A batch given as segments, in order: lists of arrays (:func:`encode_arrays`) and
    buffers of frames already made (:func:`encode_columns`), as one buffer of frames;
    and the arrays msgpack cannot carry (left out, with why)."""
    failed: list[tuple[Any, Exception]] = []
    buffers = []
    for segment in segments:
        if type(segment) is bytes:
            buffers.append(segment)
            continue
        data, lost = encode_arrays(segment)
        buffers.append(data)
        failed += lost
    return b"".join(buffers), failed


def _framed(payloads: list[bytes]) -> bytes:
    """The payloads as frames, in one buffer."""
    lengths = map(_pack_length, map(len, payloads))
    return b"".join(itertools.chain.from_iterable(zip(lengths, payloads, strict=True)))


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

    def take_pending(self) -> bytes:
        """Hand over the bytes of the incomplete frame (when another decoder
        takes over the stream, as after the handshake)."""
        pending = bytes(self._buffer)
        self._consumed += len(pending)
        self._buffer.clear()
        return pending

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


class BatchDecoder:
    """The complete frames of one buffer -> validated events, in one pass.

    The payloads (length prefixes cut out in one numpy masked copy) are fed
    to one streaming ``msgpack.Unpacker`` in C ``slice_bytes`` at a time, and
    each slice's objects validated as a batch (:meth:`EventDecoder.decode_many`)
    while they are still in the CPU's cache. Unless every object ends exactly
    where its frame ends (a malformed frame), the frames from the first one not
    yet validated are decoded again one by one, so only the bad frames are
    lost; they are counted as malformed by ``events``, once. The unpacker is
    kept from one batch to the next unless a bad frame may have left half an
    object in it.
    """

    __slots__ = ("_max_buffer", "_slice", "_unpacker", "events")

    def __init__(
        self,
        events: EventDecoder | None = None,
        max_buffer: int = 64 << 20,
        slice_bytes: int = SLICE_BYTES,
    ) -> None:
        if slice_bytes < 1:
            raise ValueError(f"slices of {slice_bytes} bytes")
        self.events = events if events is not None else EventDecoder()
        self._max_buffer = max_buffer
        self._slice = slice_bytes
        self._unpacker = self._new_unpacker()

    def _new_unpacker(self) -> Any:
        return msgpack.Unpacker(
            use_list=False,
            raw=False,
            strict_map_key=True,
            # Starts small (msgpack's default preallocates 1 MiB) and grows
            # with what is fed; the cap only has to fit one batch's payloads.
            read_size=min(64 * 1024, self._max_buffer),
            max_buffer_size=self._max_buffer,
        )

    def decode(self, data: bytes | bytearray, starts: list[int], stop: int) -> list[Event]:
        """Events of the complete frames starting at ``starts`` in
        ``data[:stop]`` (``stop``: where the last one ends)."""
        if not starts:
            return []
        # Unpacking a batch creates tens of thousands of tuples at once, which
        # sets off the cyclic GC over and over (it was ~40% of decoding time);
        # they hold no cycles, so collection waits until the batch is done.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._decode(data, starts, stop)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _decode(self, data: bytes | bytearray, starts: list[int], stop: int) -> list[Event]:
        # numpy only here: the publisher side (inside the monitored job)
        # imports this module too and never needs it.
        import numpy as np

        count = len(starts)
        offsets = np.array(starts, dtype=np.int64)
        first = starts[0]
        # The payloads joined: every 4-byte length prefix cut out in one
        # masked copy, instead of slicing each payload and joining the slices.
        keep = np.ones(stop - first, dtype=bool)
        for k in range(HEADER_SIZE):
            keep[offsets - first + k] = False
        raw = np.frombuffer(data, dtype=np.uint8, count=stop - first, offset=first)
        joined = raw[keep].tobytes()
        del keep, raw
        unpacker = self._unpacker
        base = unpacker.tell()
        # Where each frame's payload ends in the unpacker's stream: where the
        # next frame starts (or stop), less the prefixes so far. A batch is
        # only trusted when every object ends exactly at its frame's end: a
        # junk frame can hold an unfinished object that swallows the start of
        # the next frame (or several objects), and counts alone can still
        # agree. Ending on every boundary means each object was parsed from
        # its own frame's bytes only, exactly as unpacking it alone would.
        ends = offsets[1:] - first - HEADER_SIZE * np.arange(1, count, dtype=np.int64)
        expected = [*ends.tolist(), stop - first - HEADER_SIZE * count]
        if base:
            expected = [end + base for end in expected]
        tell = unpacker.tell
        positions: list[int] = []
        record_position = positions.append
        decode_many = self.events.decode_many
        events: list[Event] = []
        done = 0  # frames whose objects ended where they should and were decoded
        view = memoryview(joined)
        try:
            # Unpacked and validated a slice at a time: the slice's msgpack
            # arrays are freed before the next slice is unpacked into the same
            # memory, which stays in the CPU's cache (a 1 MiB read in one pass
            # decoded at 0.7 the speed).
            step = self._slice
            for lo in range(0, len(joined), step):
                unpacker.feed(view[lo : lo + step])
                # record_position() returns None: the condition only notes where
                # each object ended, in C-level calls (no Python loop body).
                objs = [obj for obj in unpacker if record_position(tell()) is None]
                if positions != expected[done : done + len(positions)]:
                    break
                events += decode_many(objs)
                done += len(objs)
                positions.clear()
        except Exception:  # invalid msgpack (msgpack raises many types), or too big
            pass
        if done == count:
            return events
        # Some payload is not exactly one msgpack object, and the Unpacker
        # may hold half of one: start a fresh one and go frame by frame from
        # the first frame not decoded, so only the bad frames are lost
        # (counted as malformed).
        self._unpacker = self._new_unpacker()
        decode_payload = self.events.decode_payload
        data_view = memoryview(data)
        rest = (
            decode_payload(bytes(data_view[begin + HEADER_SIZE : end]))
            for begin, end in pairwise([*starts[done:], stop])
        )
        events += [e for e in rest if e is not None]
        return events


class StreamDecoder:
    """Bytes in, validated events out, in one pass per read.

    Splits the stream into frames (lengths checked against ``max_frame``
    first) and decodes the complete frames of each read as one batch
    (:class:`BatchDecoder`). Only an oversized length raises
    :class:`FrameError`: past it the stream has lost sync.
    """

    __slots__ = ("_batch", "_buffer", "_consumed", "_failed", "frames", "max_frame", "source")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, source: str = "stream") -> None:
        self.max_frame = max_frame
        self.source = source
        self.frames = 0
        self._buffer = bytearray()  # the incomplete frame after the last read
        self._consumed = 0  # stream offset of _buffer[0], for error messages
        self._failed: FrameError | None = None
        self._batch = BatchDecoder(max_buffer=max(max_frame * 2, 64 * 1024 * 1024))

    @property
    def events(self) -> EventDecoder:
        """The validator, with its ``malformed`` and ``unknown`` counts."""
        return self._batch.events

    @property
    def pending(self) -> int:
        """Bytes held that do not yet form a complete frame."""
        return len(self._buffer)

    @property
    def malformed(self) -> int:
        return self._batch.events.malformed

    @property
    def unknown(self) -> int:
        return self._batch.events.unknown

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        if self._failed is not None:
            raise self._failed
        buffer = self._buffer
        work: bytes | bytearray
        if buffer:
            # Grown in place: a frame longer than a read gathers in linear time.
            buffer += data
            work = buffer
        else:
            work = data.tobytes() if isinstance(data, memoryview) else data
        try:
            starts, stop = split_frames(
                work, 0, len(work), self.max_frame, self.source, self._consumed
            )
        except FrameError as exc:
            self._failed = exc
            self._buffer = bytearray()
            raise
        if work is not buffer or stop:
            self._buffer = bytearray(memoryview(work)[stop:])
        self._consumed += stop
        if not starts:
            return []
        self.frames += len(starts)
        return self._batch.decode(work, starts, stop)


# ------------------------------------------------------------------ peeking
# An event payload is a msgpack array [kind, seq, ts_ns, fields...] (see
# docs/events.md). Its first bytes say what it is without decoding it:
#   array header  fixarray of 3..15 items (0x93-0x9f, one byte) or array16
#                 (0xdc + u16, three bytes: a Hello has more fields)
#   kind          a positive fixint (every kind number is below 128)
#   seq           a msgpack uint; seq 0 (a snapshot's event) is the one byte 0x00
#   ts_ns         a uint64 (0xcf + 8 big-endian bytes): a real time in ns since
#                 the epoch is past 2**32, where msgpack takes 8 bytes
#: what :func:`peek` and :func:`peek_kinds` give for a payload that is not an event
NOT_AN_EVENT = -1
_FIXARRAY_3, _FIXARRAY_15, _ARRAY16, _UINT64 = 0x93, 0x9F, 0xDC, 0xCF
#: bytes a msgpack uint takes, by its first byte (0: not a non-negative integer)
_UINT_BYTES = bytes([1] * 0x80 + [0] * 0x4C + [2, 3, 5, 9] + [0] * 0x30)


def _array_head(marker: int) -> int:
    """Bytes of an event's array header from its first byte (0: not an event's)."""
    if _FIXARRAY_3 <= marker <= _FIXARRAY_15:
        return 1
    return 3 if marker == _ARRAY16 else 0


def peek(
    payload: bytes | bytearray | memoryview, start: int = 0, end: int | None = None
) -> tuple[int, bool]:
    """``(kind, seq is 0)`` of the event payload ``payload[start:end]``;
    ``(NOT_AN_EVENT, False)`` when it does not start like one (it may still be
    junk that does: only decoding tells)."""
    end = len(payload) if end is None else end
    if end - start < 4:
        return NOT_AN_EVENT, False
    at = start + _array_head(payload[start])
    if at == start or at + 1 >= end or payload[at] >= 0x80:
        return NOT_AN_EVENT, False
    return payload[at], payload[at + 1] == 0


def _heads(raw: NDArray, starts: NDArray, ends: NDArray) -> tuple[NDArray, NDArray]:
    """Vector form of the header rule: (offset of each payload's kind, a mask of
    the payloads that start like an event)."""
    import numpy as np

    last = len(raw) - 1
    if last < 0:  # no bytes at all: nothing starts like an event
        return np.zeros_like(starts), np.zeros(len(starts), dtype=bool)
    marker = raw[np.minimum(starts, last)]
    width = np.where((marker >= _FIXARRAY_3) & (marker <= _FIXARRAY_15), 1, 0)
    width[marker == _ARRAY16] = 3
    at = starts + width
    ok = (width > 0) & (ends - starts >= 4) & (at + 1 < ends)
    ok &= raw[np.minimum(at, last)] < 0x80
    return at, ok


def peek_kinds(raw: NDArray, starts: NDArray, ends: NDArray) -> NDArray:
    """The kind of each payload ``raw[starts[i]:ends[i]]`` (``raw`` a uint8
    array; ``starts``/``ends`` int64 arrays), :data:`NOT_AN_EVENT` where it does
    not start like an event."""
    import numpy as np

    at, ok = _heads(raw, starts, ends)
    if not ok.any():
        return np.full(len(starts), NOT_AN_EVENT, dtype=np.int64)
    kinds = raw[np.minimum(at, len(raw) - 1)].astype(np.int64)
    return np.where(ok, kinds, NOT_AN_EVENT)


def peek_timestamps(raw: NDArray, starts: NDArray, ends: NDArray) -> tuple[NDArray, NDArray]:
    """``ts_ns`` of each payload where it sits in the usual place, and a mask
    of the payloads where it does not (decode those to know).

    Temporaries stay at a few bytes per frame: the 8 timestamp bytes are
    gathered one column at a time into an (n, 8) byte array read as big-endian
    int64, not an (n, 8) int64 index array and uint64 products."""
    import numpy as np

    last = len(raw) - 1
    at, ok = _heads(raw, starts, ends)
    if not ok.any():
        return np.zeros(len(starts), dtype=np.int64), ~ok
    seq_width = np.frombuffer(_UINT_BYTES, dtype=np.uint8)[raw[np.minimum(at + 1, last)]]
    ok &= seq_width > 0
    ts_at = at + 1
    ts_at += seq_width
    del seq_width, at
    ok &= ts_at + 9 <= ends
    np.minimum(ts_at, last, out=ts_at)
    ok &= raw[ts_at] == _UINT64
    gathered = np.empty((len(starts), 8), dtype=np.uint8)
    for k in range(8):
        ts_at += 1
        np.minimum(ts_at, last, out=ts_at)
        gathered[:, k] = raw[ts_at]
    del ts_at
    values = gathered.view(">i8")[:, 0].astype(np.int64)
    ok &= values >= 0  # a uint64 at or above 2**63 reads as negative here
    return values, ~ok
