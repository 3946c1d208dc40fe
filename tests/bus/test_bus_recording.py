"""Recordings: round trip, index, seeks, cut files, following, hostile files."""

from __future__ import annotations

import os
import struct
import tracemalloc
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclmon import events as ev
from aclmon.bus import recording
from aclmon.bus.recording import (
    FILE_HEADER,
    MAGIC,
    RecordingReader,
    RecordingWriter,
)
from aclmon.errors import AclmonError, DecodeError

FUZZ = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
T0 = 1_750_000_000_000_000_000


def _events(count: int) -> list[ev.Event]:
    out: list[ev.Event] = []
    for i in range(count):
        ts = T0 + i * 1000
        if i % 7 == 3:
            tensor = ev.TensorDesc(1, 2, (i, 4), 0x1000 + i, 64, "x")
            out.append(
                ev.AclException(i + 1, ts, 0, 1, i, 9, 507015, f"op{i}", "Add", (tensor,), ())
            )
        elif i % 2:
            out.append(ev.HostSample(i + 1, ts, 1.5, i, 3))
        else:
            out.append(ev.LogLine(i + 1, ts, "info", f"line {i}"))
    return out


def _write(path: Path, events: list[ev.Event], info: dict | None = None) -> Path:
    with RecordingWriter(path, info or {"target": "test"}) as writer:
        writer.write_many(events)
    return path


def test_round_trip_with_header(tmp_path: Path) -> None:
    events = _events(100)
    path = _write(tmp_path / "r.aclrec", events, {"target": "unix:/x", "pid": 7})
    with RecordingReader(path) as reader:
        assert reader.wait_indexed(10)
        assert reader.header.source_info == {"target": "unix:/x", "pid": 7}
        assert reader.header.schema_version == ev.SCHEMA_VERSION
        assert reader.header.created_ns > 0
        assert len(reader) == 100
        assert reader.cut is None
        assert list(reader.iter_events()) == events
        assert list(reader.timestamps) == [e.ts_ns for e in events]


def test_seek_by_number_and_time(tmp_path: Path) -> None:
    events = _events(1000)
    path = _write(tmp_path / "r.aclrec", events)
    with RecordingReader(path, background=False) as reader:
        assert reader.read_events(500, 3) == events[500:503]
        assert reader.event_at(999) == events[999]
        assert reader.seek_time(T0 + 500 * 1000) == 500
        assert reader.seek_time(T0 + 500 * 1000 + 1) == 501
        assert reader.seek_time(0) == 0
        assert reader.seek_time(T0 * 2) == 1000
        assert list(reader.iter_events(998)) == events[998:]
        with pytest.raises(IndexError):
            reader.event_at(1000)


def test_time_seek_with_events_out_of_order(tmp_path: Path) -> None:
    # Threads stamp events slightly out of order; the seek stays well defined.
    times = [10, 30, 20, 40, 35, 50]
    events = [ev.LogLine(i + 1, t, "info", "x") for i, t in enumerate(times)]
    path = _write(tmp_path / "r.aclrec", events)
    with RecordingReader(path, background=False) as reader:
        assert reader.seek_time(25) == 1
        assert reader.seek_time(36) == 3
        assert reader.seek_time(45) == 5


def test_unusual_timestamps_still_index(tmp_path: Path) -> None:
    # Small timestamps pack as small msgpack ints: the slow path finds them.
    events = [ev.LogLine(1, 5, "info", "a"), ev.LogLine(300, 70000, "info", "b")]
    path = _write(tmp_path / "r.aclrec", events)
    with RecordingReader(path, background=False) as reader:
        assert list(reader.timestamps) == [5, 70000]


def test_malformed_frames_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "r.aclrec"
    good = _events(3)
    with RecordingWriter(path, {}) as writer:
        writer.write(good[0])
        writer.write_payload(b"\xc1")
        writer.write_payload(msgpack.packb([999, 1, 2]))
        writer.write(good[1])
        writer.write(good[2])
    with RecordingReader(path, background=False) as reader:
        assert len(reader) == 5
        assert list(reader.iter_events()) == good
        assert (reader.decoder.malformed, reader.decoder.unknown) == (1, 1)
        assert reader.event_at(1) is None


def test_file_cut_at_every_byte_replays_complete_frames(tmp_path: Path) -> None:
    events = _events(12)
    full = _write(tmp_path / "full.aclrec", events).read_bytes()
    header_size = len(full) - sum(4 + len(ev.encode(e)) for e in events)
    ends = []
    position = header_size
    for event in events:
        position += 4 + len(ev.encode(event))
        ends.append(position)
    cut_path = tmp_path / "cut.aclrec"
    for cut in range(len(full) + 1):
        cut_path.write_bytes(full[:cut])
        if cut < header_size:
            with pytest.raises(DecodeError):
                RecordingReader(cut_path, background=False)
            continue
        with RecordingReader(cut_path, background=False) as reader:
            complete = sum(end <= cut for end in ends)
            assert list(reader.iter_events()) == events[:complete]
            if cut in ends or cut == header_size:
                assert reader.cut is None
            else:
                last_end = max([header_size] + [e for e in ends if e <= cut])
                assert reader.cut is not None
                assert reader.cut.offset == last_end
                assert not reader.cut.damaged
                assert "file ends inside a frame" in reader.cut.reason


def test_follow_a_growing_file(tmp_path: Path) -> None:
    events = _events(50)
    path = tmp_path / "live.aclrec"
    writer = RecordingWriter(path, {})
    writer.write_many(events[:20])
    writer.flush()
    with RecordingReader(path, background=False) as reader:
        assert len(reader) == 20
        # Half a frame written: not indexed, reported as the current end.
        frame = struct.pack("<I", len(ev.encode(events[20]))) + ev.encode(events[20])
        with open(path, "ab") as raw:
            raw.write(frame[:5])
        assert reader.refresh() == 0
        assert reader.cut is not None
        with open(path, "ab") as raw:
            raw.write(frame[5:])
        assert reader.refresh() == 1
        assert reader.cut is None
        writer._file.seek(0, os.SEEK_END)
        writer.write_many(events[21:])
        writer.flush()
        assert reader.refresh() == 29
        assert list(reader.iter_events(15)) == events[15:]
    writer.close()


def test_oversized_length_marks_damage_but_keeps_what_came_before(tmp_path: Path) -> None:
    events = _events(5)
    path = _write(tmp_path / "r.aclrec", events)
    with open(path, "ab") as raw:
        raw.write(struct.pack("<I", 0xFFFFFFF0) + b"rest of a damaged file")
    with RecordingReader(path, background=False) as reader:
        assert list(reader.iter_events()) == events
        assert reader.cut is not None and reader.cut.damaged
        assert "exceeds" in reader.cut.reason
        assert str(reader.cut).startswith(f"at byte {reader.cut.offset}")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b"NOTAREC\0" + b[8:], "bad magic"),
        (lambda b: b[:8] + struct.pack("<H", 99) + b[10:], "version 99"),
        (lambda b: b[:20] + struct.pack("<I", 1 << 30) + b[24:], "exceeds"),
        (lambda b: b[:20] + struct.pack("<I", 4000) + b[24:], "inside the source info"),
        (lambda b: b[:10], "too short"),
        (lambda b: b[:24] + b"\xc1" + b[25:], "source info"),
    ],
)
def test_bad_headers_are_one_clear_error(tmp_path: Path, mutate, message: str) -> None:
    data = _write(tmp_path / "good.aclrec", _events(3)).read_bytes()
    path = tmp_path / "bad.aclrec"
    path.write_bytes(mutate(data))
    with pytest.raises(DecodeError, match=message) as info:
        RecordingReader(path)
    assert str(path) in str(info.value)


def test_missing_file_is_an_aclmon_error(tmp_path: Path) -> None:
    with pytest.raises(DecodeError, match="cannot open"):
        RecordingReader(tmp_path / "nope.aclrec")


def test_huge_claims_allocate_nothing_big(tmp_path: Path) -> None:
    path = tmp_path / "r.aclrec"
    path.write_bytes(
        FILE_HEADER.pack(MAGIC, 1, 1, 0, 1) + b"\x80" + struct.pack("<I", 3_000_000) + b"abc"
    )
    tracemalloc.start()
    try:
        with RecordingReader(path, background=False) as reader:
            assert len(reader) == 0
            assert reader.cut is not None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


SMALL = b""


def _small_recording() -> bytes:
    global SMALL
    if not SMALL:
        import io

        buffer = io.BytesIO()
        info = msgpack.packb({"t": 1})
        buffer.write(FILE_HEADER.pack(MAGIC, 1, 1, 5, len(info)) + info)
        for event in _events(8):
            payload = ev.encode(event)
            buffer.write(struct.pack("<I", len(payload)) + payload)
        SMALL = buffer.getvalue()
    return SMALL


def _read_everything(path: Path) -> None:
    size = path.stat().st_size
    tracemalloc.start()
    try:
        _read_checked(path)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    # Fixed costs (index columns, an Unpacker) plus what the file really holds,
    # whatever sizes it claims.
    assert peak < 256 * 1024 + 16 * size


def _read_checked(path: Path) -> None:
    try:
        with RecordingReader(path, background=False, max_frame=1 << 30) as reader:
            events = list(reader.iter_events())
            assert len(events) <= len(reader)
            for event in events:
                assert type(event) in ev.KINDS.values()
            if len(reader):
                reader.event_at(len(reader) - 1)
                reader.seek_time(T0)
    except AclmonError:
        pass


@FUZZ
@given(st.binary(max_size=300))
def test_random_files_only_raise_aclmon_errors(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "r.aclrec"
    path.write_bytes(data)
    _read_everything(path)
    path.write_bytes(_small_recording()[:24] + data)  # a valid header, then garbage
    _read_everything(path)


@FUZZ
@given(st.data())
def test_bit_flipped_recordings_only_raise_aclmon_errors(tmp_path_factory, data) -> None:
    original = _small_recording()
    flipped = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        bit = data.draw(st.integers(0, len(original) * 8 - 1))
        flipped[bit // 8] ^= 1 << (bit % 8)
    cut = data.draw(st.integers(0, len(flipped)))
    path = tmp_path_factory.mktemp("fuzz") / "r.aclrec"
    path.write_bytes(bytes(flipped[:cut]))
    _read_everything(path)


def test_background_index_is_usable_while_it_grows(tmp_path: Path) -> None:
    events = _events(20_000)
    path = _write(tmp_path / "r.aclrec", events)
    with RecordingReader(path) as reader:
        seen = []
        while not reader.indexed:
            n = len(reader)
            seen.append(n)
            if n:
                # Whatever is indexed can be read, even before the scan ends.
                assert reader.event_at(n - 1) == events[n - 1]
                assert reader.timestamps[n - 1] == events[n - 1].ts_ns
        assert seen == sorted(seen)
        assert reader.wait_indexed(10)
        assert len(reader) == 20_000
        assert reader.read_events(19_990, 10) == events[19_990:]


def test_index_temporaries_follow_the_chunk_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: indexing held ~200 bytes of numpy/list temporaries per frame
    # of a 16 MiB chunk (about 200 MiB for a 35 MiB, 1M-event file). With
    # small chunks and lean timestamp extraction the traced peak is the index
    # itself (24 bytes a frame, plus one column's copy while it grows) and a
    # few times one chunk: 64 KiB here, where the file is ~1.2 MB.
    monkeypatch.setattr(recording, "CHUNK_SIZE", 64 * 1024)
    events = [ev.HostSample(i + 1, T0 + i * 1000, 1.5, i, 3) for i in range(40_000)]
    path = _write(tmp_path / "lean.aclrec", events)
    file_size = path.stat().st_size
    tracemalloc.start()
    try:
        reader = RecordingReader(path, background=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    try:
        assert len(reader) == len(events) and reader.cut is None
        assert reader.timestamps.tolist() == [e.ts_ns for e in events]
        assert reader.read_events(20_000, 2) == events[20_000:20_002]
    finally:
        index_bytes = reader.index_nbytes
        reader.close()
    assert file_size > 16 * recording.CHUNK_SIZE
    assert peak - index_bytes < 16 * recording.CHUNK_SIZE, (peak, index_bytes, file_size)


def test_frames_larger_than_a_chunk_are_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recording, "CHUNK_SIZE", 1024)
    events = [
        ev.LogLine(1, T0, "info", "short"),
        ev.LogLine(2, T0 + 1, "info", "x" * 5000),
        ev.LogLine(3, T0 + 2, "info", "y" * 3000),
        ev.HostSample(4, T0 + 3, 1.0, 2, 3),
    ]
    path = _write(tmp_path / "big.aclrec", events)
    with RecordingReader(path, background=False) as reader:
        assert len(reader) == 4 and reader.cut is None
        assert reader.timestamps.tolist() == [e.ts_ns for e in events]
        assert list(reader.iter_events()) == events
    # Cut inside the big frame: the frames before it, and where it was cut.
    data = path.read_bytes()
    cut_path = tmp_path / "big-cut.aclrec"
    cut_path.write_bytes(data[:-200])
    with RecordingReader(cut_path, background=False) as reader:
        assert list(reader.iter_events()) == events[:2]
        assert reader.cut is not None and "ends inside a frame" in reader.cut.reason


# ---------------------------------------------------------------- where a recording goes
def _writer(path: Path) -> None:
    recording.RecordingWriter(path, {"tool": "test"}).close()


def test_a_symlink_where_the_recording_goes_is_not_followed(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    link = tmp_path / "job.aclrec"
    link.symlink_to(precious)
    with pytest.raises(OSError, match="symbolic link"):
        _writer(link)
    assert precious.read_text() == "keep me"


def test_in_a_shared_sticky_directory_the_recording_must_be_a_new_file(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "job.aclrec"
    planted.write_text("planted first")
    with pytest.raises(OSError, match="other users can write to"):
        _writer(planted)
    assert planted.read_text() == "planted first"
    fresh = shared / "new.aclrec"
    _writer(fresh)
    assert recording.is_recording(str(fresh))


def test_a_fifo_where_the_recording_goes_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "job.aclrec"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="FIFO"):
        _writer(fifo)


def test_an_own_file_in_an_own_directory_is_overwritten_owner_only(tmp_path: Path) -> None:
    old = tmp_path / "job.aclrec"
    old.write_bytes(b"x" * 10_000)
    old.chmod(0o644)
    _writer(old)
    assert recording.is_recording(str(old))
    assert old.stat().st_size < 10_000
    assert old.stat().st_mode & 0o777 == 0o600
