"""Frames over a byte stream: splitting, limits, hostile input."""

from __future__ import annotations

import struct
import tracemalloc

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclmon import events as ev
from aclmon.errors import AclmonError
from aclmon.events.wire import (
    BatchDecoder,
    FrameDecoder,
    FrameError,
    StreamDecoder,
    encode_columns,
    encode_frame,
    encode_segments,
    split_frames,
)

FUZZ = settings(deadline=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow])

clock = ev.Clock()
SAMPLE_EVENTS = [
    clock.make(ev.HostSample, 12.5, 1 << 30, 17),
    clock.make(ev.DeviceSample, 0, 35, 10, -1, 1 << 33, 1 << 35, "OK", 41.5, None),
    clock.make(ev.LogLine, "warning", "é" * 50),
    clock.make(
        ev.AclException,
        0,
        3,
        1005,
        4242,
        507015,
        "resnet50/conv1/Conv2D",
        "Conv2D",
        (ev.TensorDesc(1, 0, (32, 3, 224, 224), 0x12C0000, 19267584, "x"),),
        (ev.TensorDesc(1, 0, (32, 64, 112, 112), 0x2000000, 51380224, "y"),),
    ),
    clock.make(ev.Reply, 123, 0, "ok", {"a": 1}),
]
STREAM = b"".join(encode_frame(ev.encode(e)) for e in SAMPLE_EVENTS)


def test_frame_is_length_then_payload() -> None:
    payload = ev.encode(SAMPLE_EVENTS[0])
    frame = encode_frame(payload)
    assert struct.unpack("<I", frame[:4])[0] == len(payload)
    assert frame[4:] == payload


@pytest.mark.parametrize("step", [1, 2, 3, 7, 64, len(STREAM)])
def test_decoders_reassemble_any_split(step: int) -> None:
    frames = FrameDecoder()
    stream = StreamDecoder()
    payloads: list[bytes] = []
    events: list[ev.Event] = []
    for i in range(0, len(STREAM), step):
        payloads += frames.feed(STREAM[i : i + step])
        events += stream.feed(STREAM[i : i + step])
    assert payloads == [ev.encode(e) for e in SAMPLE_EVENTS]
    assert events == SAMPLE_EVENTS
    assert frames.pending == 0
    assert stream.frames == len(SAMPLE_EVENTS)


def test_oversized_length_fails_before_buffering() -> None:
    decoder = FrameDecoder(max_frame=1024, source="peer")
    with pytest.raises(FrameError) as info:
        decoder.feed(struct.pack("<I", 1025))
    assert "1025" in str(info.value) and "peer" in str(info.value)
    assert decoder.pending == 0
    # The decoder stays failed: the stream lost sync.
    with pytest.raises(FrameError):
        decoder.feed(encode_frame(b"\x90"))


def test_oversized_length_error_names_the_stream_offset() -> None:
    decoder = FrameDecoder(max_frame=100, source="peer")
    decoder.feed(encode_frame(b"\x90") * 3)
    with pytest.raises(FrameError) as info:
        decoder.feed(struct.pack("<I", 5000))
    assert info.value.offset == 15


def test_huge_declared_length_allocates_nothing_big() -> None:
    decoder = StreamDecoder(max_frame=64 * 1024 * 1024)
    tracemalloc.start()
    try:
        # A peer claims 60 MiB and sends 8 bytes of it.
        decoder.feed(struct.pack("<I", 60 * 1024 * 1024) + b"\x00" * 8)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


def test_malformed_payloads_are_counted_and_skipped() -> None:
    decoder = StreamDecoder()
    good = encode_frame(ev.encode(SAMPLE_EVENTS[0]))
    data = (
        encode_frame(b"\xc1")  # never valid msgpack
        + encode_frame(b"\x93\x01\x02")  # an array cut short inside its frame
        + encode_frame(b"\x01\x02")  # two objects in one frame
        + encode_frame(b"\x91\xcd\x03\xe7")  # a kind nobody knows
        + encode_frame(b"\x92\x03\x01")  # a HostSample with missing fields
        + good
    )
    assert decoder.feed(data) == [SAMPLE_EVENTS[0]]
    assert decoder.malformed == 4
    assert decoder.unknown == 1
    # The decoder is still in step afterwards.
    assert decoder.feed(STREAM) == SAMPLE_EVENTS


def test_split_frames_reports_incomplete_tail() -> None:
    offsets, stop = split_frames(STREAM, 0, len(STREAM) - 1, 1 << 20, "s")
    assert len(offsets) == len(SAMPLE_EVENTS) - 1
    assert stop == offsets[-1] + 4 + len(ev.encode(SAMPLE_EVENTS[-2]))


@FUZZ
@given(st.binary(max_size=400), st.integers(1, 50))
def test_random_bytes_never_escape_as_anything_but_aclmon_error(data: bytes, step: int) -> None:
    decoder = StreamDecoder(max_frame=1 << 30)  # the limit must not be what saves us
    total = 0
    tracemalloc.start()
    try:
        for i in range(0, len(data), step):
            total += len(decoder.feed(data[i : i + step]))
    except AclmonError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    # Whatever lengths the bytes claim, memory follows what was really sent.
    assert peak < 64 * 1024 + 16 * len(data)
    # Never holds more than it was given.
    assert decoder.pending <= len(data)
    assert total <= len(data) // 5


@FUZZ
@given(st.integers(0, len(STREAM)))
def test_truncation_yields_exactly_the_complete_frames(cut: int) -> None:
    decoder = StreamDecoder()
    events = decoder.feed(STREAM[:cut])
    ends = []
    position = 0
    for event in SAMPLE_EVENTS:
        position += 4 + len(ev.encode(event))
        ends.append(position)
    assert events == SAMPLE_EVENTS[: sum(end <= cut for end in ends)]


@FUZZ
@given(st.integers(0, len(STREAM) * 8 - 1), st.integers(1, 3))
def test_bit_flips_only_raise_aclmon_errors(bit: int, flips: int) -> None:
    data = bytearray(STREAM)
    for k in range(flips):
        position = (bit + k * 997) % (len(data) * 8)
        data[position // 8] ^= 1 << (position % 8)
    decoder = StreamDecoder(max_frame=4096)
    try:
        events = decoder.feed(bytes(data))
    except AclmonError:
        return
    for event in events:
        assert type(event) in ev.KINDS.values()


def test_junk_frame_never_swallows_the_next_event() -> None:
    # Regression: b"\x00\x00\x81" is two ints and the start of a one-entry map;
    # batch unpacking took the next frame's event as that map's key, the two
    # ints kept the object count equal to the frame count, and the valid event
    # was lost (0 events, 2 malformed) with the unpacker left mid-object.
    decoder = StreamDecoder()
    good = SAMPLE_EVENTS[1]
    data = encode_frame(b"\x00\x00\x81") + encode_frame(ev.encode(good))
    assert decoder.feed(data) == [good]
    assert decoder.malformed == 1
    # Nothing of the junk is left behind in the decoder's unpacker.
    assert decoder.feed(STREAM) == SAMPLE_EVENTS
    assert decoder.malformed == 1


def _is_junk(payload: bytes) -> bool:
    return ev.EventDecoder().decode_payload(payload) is None


# Junk payloads that are hard for a batch unpacker: random bytes, valid events
# cut short (an unfinished array that would take the next frame's objects), bare
# container headers, several objects in one frame.
junk_payloads = st.one_of(
    st.binary(max_size=24),
    st.builds(
        lambda event, cut: ev.encode(event)[: max(1, cut % len(ev.encode(event)))],
        st.sampled_from(SAMPLE_EVENTS),
        st.integers(0, 1 << 16),
    ),
    st.sampled_from([b"\x81", b"\x91", b"\x9f", b"\xdc\x00\x10", b"\x00\x00\x81", b"\x92\x01"]),
    st.lists(st.integers(-(1 << 40), 1 << 40), min_size=2, max_size=4).map(
        lambda values: b"".join(msgpack.packb(v) for v in values)
    ),
).filter(_is_junk)


@FUZZ
@given(
    st.lists(st.one_of(st.sampled_from(SAMPLE_EVENTS), junk_payloads), min_size=1, max_size=30),
    st.integers(1, 400),
)
def test_valid_frames_survive_any_interleaved_junk(items: list[object], step: int) -> None:
    """Every complete frame is decoded on its own: the valid events come out
    exactly, in order, whatever junk payloads (with well-formed length
    prefixes) sit between them; the junk is counted, never delivered."""
    reference = ev.EventDecoder()  # what decoding each junk frame alone counts
    expected: list[ev.Event] = []
    stream = b""
    for item in items:
        if isinstance(item, bytes):
            assert reference.decode_payload(item) is None
            stream += encode_frame(item)
        else:
            expected.append(item)  # type: ignore[arg-type]
            stream += encode_frame(ev.encode(item))  # type: ignore[arg-type]
    decoder = StreamDecoder()
    events: list[ev.Event] = []
    for i in range(0, len(stream), step):
        events += decoder.feed(stream[i : i + step])
    assert events == expected
    assert decoder.malformed == reference.malformed
    assert decoder.unknown == reference.unknown
    assert decoder.pending == 0
    # And the decoder stays in step for what follows.
    assert decoder.feed(STREAM) == SAMPLE_EVENTS


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_stream_decoder_takes_any_bytes_like(kind: type) -> None:
    decoder = StreamDecoder()
    middle = len(STREAM) // 2 + 3
    events = decoder.feed(kind(STREAM[:middle])) + decoder.feed(kind(STREAM[middle:]))
    assert events == SAMPLE_EVENTS
    assert decoder.pending == 0 and decoder.malformed == 0


@FUZZ
@given(
    st.lists(st.one_of(st.sampled_from(SAMPLE_EVENTS), junk_payloads), min_size=1, max_size=30),
    st.binary(max_size=9),
)
def test_batch_decoder_agrees_with_frame_by_frame_decoding(
    items: list[object], lead: bytes
) -> None:
    """The batch path replay uses (frames anywhere in a buffer, a fresh
    decoder per read) gives exactly what decoding each payload alone gives."""
    payloads = [item if isinstance(item, bytes) else ev.encode(item) for item in items]
    data = lead + b"".join(encode_frame(p) for p in payloads)  # type: ignore[arg-type]
    starts, stop = split_frames(data, len(lead), len(data), 1 << 20, "s")
    reference = ev.EventDecoder()
    expected = [e for e in map(reference.decode_payload, payloads) if e is not None]  # type: ignore[arg-type]
    batch = BatchDecoder(max_buffer=len(data) + 1)
    assert batch.decode(data, starts, stop) == expected
    assert (batch.events.malformed, batch.events.unknown) == (
        reference.malformed,
        reference.unknown,
    )


_column_items = st.one_of(
    st.integers(-(1 << 63), (1 << 64) - 1),
    st.integers(-(1 << 70), 1 << 70),  # also beyond what msgpack carries
)


@FUZZ
@given(
    rows=st.integers(1, 20),
    shape=st.lists(
        st.one_of(st.integers(-(1 << 63), (1 << 64) - 1), st.just("column")), max_size=8
    ),
    first=st.integers(1, 1 << 40),
    data=st.data(),
)
def test_frames_made_by_column_decode_to_the_arrays_packed_one_by_one(rows, shape, first, data):
    columns = [
        data.draw(st.lists(_column_items, min_size=rows, max_size=rows))
        if item == "column"
        else item
        for item in [12, range(first, first + rows), *shape]
    ]
    arrays = list(zip(*([c] * rows if type(c) is int else c for c in columns), strict=True))
    packed = encode_columns(columns, rows)
    # one form per column: all of it in uint64, or all of it in int64
    carried = all(
        all(0 <= v < (1 << 64) for v in c) or all(-(1 << 63) <= v < (1 << 63) for v in c)
        for c in columns
        if type(c) is list
    )
    if not carried:
        assert packed is None  # the caller packs those arrays one by one
        return
    assert packed is not None
    decoded = [tuple(msgpack.unpackb(p)) for p in FrameDecoder().feed(packed)]
    assert decoded == arrays
    # segments keep their order: arrays packed one by one, then frames made by column
    head, failed = encode_segments([arrays[:1]])
    assert not failed
    assert encode_segments([arrays[:1], packed])[0] == head + packed


@FUZZ
@given(
    st.lists(st.one_of(st.sampled_from(SAMPLE_EVENTS), junk_payloads), min_size=1, max_size=30),
    st.integers(1, 300),
    st.integers(0, 30),
)
def test_batch_decoder_in_slices_agrees_with_frame_by_frame_decoding(
    items: list[object], slice_bytes: int, cut: int
) -> None:
    """Payloads unpacked a few bytes at a time (objects across slices, junk in
    any slice) give exactly what decoding each payload alone gives, and each bad
    frame is counted once; the decoder stays in step for the next batch."""
    payloads = [item if isinstance(item, bytes) else ev.encode(item) for item in items]
    reference = ev.EventDecoder()
    expected = [e for e in map(reference.decode_payload, payloads) if e is not None]  # type: ignore[arg-type]
    batch = BatchDecoder(slice_bytes=slice_bytes)
    # Two batches through the same decoder: its unpacker is kept between them.
    cut = min(cut, len(payloads))
    events: list[ev.Event] = []
    for part in (payloads[:cut], payloads[cut:]):
        data = b"".join(encode_frame(p) for p in part)  # type: ignore[arg-type]
        starts, stop = split_frames(data, 0, len(data), 1 << 20, "s")
        events += batch.decode(data, starts, stop)
    assert events == expected
    assert (batch.events.malformed, batch.events.unknown) == (
        reference.malformed,
        reference.unknown,
    )
    data = b"".join(encode_frame(ev.encode(e)) for e in SAMPLE_EVENTS)
    starts, stop = split_frames(data, 0, len(data), 1 << 20, "s")
    assert batch.decode(data, starts, stop) == SAMPLE_EVENTS


def test_junk_in_a_later_slice_costs_only_its_own_frame() -> None:
    # Many slices of good frames, then an unfinished array that swallows the
    # next frames: the slices before it are kept, the frames after it are
    # decoded one by one, the junk is counted once.
    good = [clock.make(ev.HostSample, float(i), i, i) for i in range(3000)]
    payloads = [ev.encode(e) for e in good]
    payloads.insert(2000, b"\x9f\x01")
    data = b"".join(encode_frame(p) for p in payloads)
    starts, stop = split_frames(data, 0, len(data), 1 << 20, "s")
    batch = BatchDecoder(slice_bytes=4096)
    assert batch.decode(data, starts, stop) == good
    assert batch.events.malformed == 1


def test_a_batch_decoder_needs_slices_of_at_least_a_byte() -> None:
    with pytest.raises(ValueError, match="slices of 0 bytes"):
        BatchDecoder(slice_bytes=0)


def test_a_frame_longer_than_the_reads_gathers_from_a_reused_buffer() -> None:
    # The subscriber reads into one buffer again and again: what the decoder
    # keeps of a frame still incomplete must be its own copy.
    big = clock.make(ev.LogLine, "info", "x" * 300_000)
    stream = encode_frame(ev.encode(big)) + STREAM
    buffer = bytearray(4096)
    decoder = StreamDecoder()
    events: list[ev.Event] = []
    for i in range(0, len(stream), len(buffer)):
        chunk = stream[i : i + len(buffer)]
        buffer[: len(chunk)] = chunk
        events += decoder.feed(memoryview(buffer)[: len(chunk)])
        buffer[:] = bytes(len(buffer))  # the next read overwrites it
    assert events == [big, *SAMPLE_EVENTS]
    assert decoder.pending == 0
