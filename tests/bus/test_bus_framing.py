"""Frames over a byte stream: splitting, limits, hostile input."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclmon import events as ev
from aclmon.bus.framing import (
    FrameDecoder,
    FrameError,
    StreamDecoder,
    encode_frame,
    split_frames,
)
from aclmon.errors import AclmonError

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
