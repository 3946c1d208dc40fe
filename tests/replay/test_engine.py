"""The replay engine: the state at any position is the fold of the events before it."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recordings import T0, session_events, write_recording

from aclmon import events as ev
from aclmon.bus.recording import RecordingReader
from aclmon.store import Store
from aclmon.store.replay import (
    EXCEPTION,
    OVERFLOW,
    RESTORE_COST,
    ReplayEngine,
    SeekSuperseded,
)
from aclmon.store.seek_time import SeekTimeError, parse_seek_time
from aclmon.store.snapshots import NEAR_EVERY, NEAR_LIMIT

GARBAGE_EVERY = 50


def fold(events, malformed: int = 0) -> dict:
    store = Store()
    store.apply_many(list(events))
    store.note_decoder_counts(malformed, 0)
    return store.to_json()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """3000 events with a malformed frame after every 50th: (path, events, frame of each event)."""
    events = session_events(3000)
    path = write_recording(
        tmp_path_factory.mktemp("rec") / "r.aclmrec", events, garbage_every=GARBAGE_EVERY
    )
    frames = [n + n // GARBAGE_EVERY for n in range(len(events))]
    return path, events, frames


def open_engine(path, snapshot_every=256, build=True):
    reader = RecordingReader(path, background=False)
    engine = ReplayEngine(reader, path, snapshot_every=snapshot_every)
    if build:
        engine.build()
    return reader, engine


def expected_at(events, frames, position):
    """The fold of the events in frames before ``position`` and the bad frames skipped."""
    before = [e for e, f in zip(events, frames, strict=True) if f < position]
    return fold(before, malformed=position - len(before))


def test_seek_to_the_end_equals_the_fold_of_every_event(recording):
    path, events, _frames = recording
    reader, engine = open_engine(path)
    try:
        assert len(engine) == len(events) + len(events) // GARBAGE_EVERY
        engine.seek(len(engine))
        assert engine.store.to_json() == fold(events, malformed=len(events) // GARBAGE_EVERY)
    finally:
        engine.close()
        reader.close()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(targets=st.lists(st.integers(min_value=0, max_value=3100), min_size=1, max_size=6))
def test_seeking_backwards_and_forwards_gives_the_fold(recording, targets):
    path, events, frames = recording
    reader, engine = open_engine(path, build=False)
    try:
        engine.build()
        for target in targets:
            engine.seek(target)
            position = min(target, len(engine))
            assert engine.position == position
            assert engine.store.to_json() == expected_at(events, frames, position)
    finally:
        engine.close()
        reader.close()


def test_seeks_without_snapshots_and_state_at_from_another_store(recording):
    path, events, frames = recording
    reader, engine = open_engine(path, build=False)  # only the empty snapshot exists
    try:
        for target in (2500, 10, 1800, 1801, 0):
            engine.seek(target)
            assert engine.store.to_json() == expected_at(events, frames, target)
        state = engine.state_at(1234)
        store = Store()
        store.state = state
        assert store.to_json() == expected_at(events, frames, 1234)
        assert engine.position == 0  # state_at leaves the cursor alone
    finally:
        engine.close()
        reader.close()


def test_a_seek_leaves_a_snapshot_near_its_target_and_going_back_from_there_folds_little(
    recording,
):
    path, events, frames = recording
    reader, engine = open_engine(path, snapshot_every=2000)  # the builder's: 0, 2000, the end
    try:
        engine.seek(1777)  # from the snapshot at 0: leaves one at 1500 on the way
        assert list(engine.near.states) == [1500]
        assert engine.cost(1776) <= 1776 - 1500 + RESTORE_COST
        for _ in range(3):
            engine.step_back()
        assert engine.position == 1774
        assert engine.store.to_json() == expected_at(events, frames, 1774)
        for target in (1500, 1501, 1999, 1499):  # from it, and from before it
            engine.seek(target)
            assert engine.store.to_json() == expected_at(events, frames, target)
        store = Store()
        store.state = engine.state_at(1600)  # from another thread's store: the same
        assert store.to_json() == expected_at(events, frames, 1600)
        # 1499 came from the snapshot at 0 (one left at 1000); 1600 from the one at 1500
        assert list(engine.near.states) == [1500, 1000]
        engine.seek(len(engine))
        assert engine.store.to_json() == expected_at(events, frames, len(engine))
        for target in range(2 * NEAR_EVERY, 2000 - NEAR_EVERY, 7):
            engine.seek(target)  # many places: the newest are kept, never more
        assert len(engine.near.states) <= NEAR_LIMIT
        engine.seek(1777)
        assert engine.store.to_json() == expected_at(events, frames, 1777)
    finally:
        engine.close()
        reader.close()


def test_a_superseded_fold_stops_without_touching_the_cursor(recording):
    path, events, frames = recording
    reader, engine = open_engine(path, snapshot_every=2000)
    try:
        asked = []

        def abandoned() -> bool:
            asked.append(True)
            return len(asked) > 1  # the newer seek arrives during the fold

        with pytest.raises(SeekSuperseded):
            engine.state_at(1999, abandoned)
        assert engine.position == 0 and engine.store.to_json() == expected_at(events, frames, 0)
        store = Store()
        store.state = engine.state_at(1999, lambda: False)
        assert store.to_json() == expected_at(events, frames, 1999)
    finally:
        engine.close()
        reader.close()


def test_snapshots_are_not_changed_by_later_folds(recording):
    path, events, frames = recording
    reader, engine = open_engine(path, snapshot_every=100)
    try:
        engine.seek(250)  # restores the 200 snapshot, folds on
        engine.seek(len(engine))
        engine.seek(205)
        assert engine.store.to_json() == expected_at(events, frames, 205)
    finally:
        engine.close()
        reader.close()


def test_seek_time_is_the_fold_of_the_events_before_that_time(recording):
    path, events, _frames = recording
    reader, engine = open_engine(path)
    try:
        for n in (0, 1, 777, 2999):
            t = events[n].ts_ns  # the event at exactly t is not before t
            engine.seek_time(t)
            assert engine.store.to_json() == fold(events[:n], malformed=n // GARBAGE_EVERY)
        engine.seek_time(T0 + 10**15)
        assert engine.position == len(engine)
        engine.seek_time(0)
        assert engine.position == 0 and engine.store.to_json() == fold([])
    finally:
        engine.close()
        reader.close()


def test_step_applies_one_event_skipping_bad_frames_and_back_undoes(recording):
    path, events, frames = recording
    reader, engine = open_engine(path)
    try:
        engine.seek(frames[49] + 1)  # just after event 50: the next frame is garbage
        assert engine.step(1) == 1
        assert engine.store.to_json() == fold(events[:51], malformed=1)
        assert engine.position == frames[50] + 1
        engine.step_back(1)
        assert engine.store.to_json() == fold(events[:50], malformed=1)
        assert engine.step(5) == 5
        assert engine.store.to_json() == fold(events[:55], malformed=1)
    finally:
        engine.close()
        reader.close()


def test_play_to_folds_in_time_order_and_respects_the_batch_limit(recording):
    path, events, _frames = recording
    reader, engine = open_engine(path)
    try:
        limited = engine.play_to(events[100].ts_ns, max_frames=40)
        assert limited and engine.position == 40
        assert engine.play_to(events[100].ts_ns, max_frames=10_000) is False
        assert engine.store.to_json() == fold(events[:100], malformed=2)
    finally:
        engine.close()
        reader.close()


def test_markers_find_every_exception_and_overflow_but_no_garbage(recording):
    path, events, frames = recording
    reader, engine = open_engine(path)
    try:
        want_exc = [f for e, f in zip(events, frames, strict=True) if type(e) is ev.AclException]
        want_ovf = [
            f
            for e, f in zip(events, frames, strict=True)
            if type(e) is ev.DumpFileSeen and e.kind == "overflow"
        ]
        assert want_exc and want_ovf
        # the garbage frames start with kind byte 17 (exception): they must not count
        assert engine.markers(EXCEPTION) == want_exc
        assert engine.markers(OVERFLOW) == want_ovf
        both = sorted(want_exc + want_ovf)
        assert engine.next_marker((EXCEPTION, OVERFLOW), 0) == both[0]
        assert engine.next_marker((EXCEPTION, OVERFLOW), both[0] + 1) == both[1]
        assert engine.previous_marker((EXCEPTION, OVERFLOW), both[3]) == both[2]
        assert engine.next_marker((EXCEPTION,), want_exc[-1] + 1) is None
    finally:
        engine.close()
        reader.close()


def test_markers_ahead_of_the_builder_are_found_by_scanning(recording):
    path, events, frames = recording
    reader, engine = open_engine(path, build=False)
    try:
        first_exception = next(
            f for e, f in zip(events, frames, strict=True) if type(e) is ev.AclException
        )
        assert engine.next_marker((EXCEPTION,), 0) == first_exception
        exceptions = [f for e, f in zip(events, frames, strict=True) if type(e) is ev.AclException]
        assert engine.previous_marker((EXCEPTION,), len(engine)) == exceptions[-1]
        # The builder half way: what it has not covered is scanned, and a later
        # marker found there beats the ones it listed.
        engine.build()
        half = len(engine) // 2
        engine._scanned = half
        for kind in (EXCEPTION, OVERFLOW):
            engine._markers[kind] = [f for f in engine._markers[kind] if f < half]
        assert engine.previous_marker((EXCEPTION,), len(engine)) == exceptions[-1]
        inside = [f for f in exceptions if f < half]
        assert engine.previous_marker((EXCEPTION,), half) == inside[-1]
        assert engine.next_marker((EXCEPTION,), inside[-1] + 1) == exceptions[len(inside)]
    finally:
        engine.close()
        reader.close()


def test_background_builder_matches_the_foreground_fold(recording):
    path, events, frames = recording
    reader = RecordingReader(path)  # indexes on its own thread too
    engine = ReplayEngine(reader, path, snapshot_every=300)
    try:
        engine.start_background()
        assert engine.wait_ready(30)
        assert engine.scanned == len(engine)
        engine.seek(len(engine) - 5)
        assert engine.store.to_json() == expected_at(events, frames, len(engine) - 5)
    finally:
        engine.close()
        reader.close()


def test_truncated_recording_replays_every_complete_event(tmp_path):
    events = session_events(500)
    path = write_recording(tmp_path / "cut.aclmrec", events)
    size = os.path.getsize(path)
    os.truncate(path, size - 7)  # the last frame loses its tail
    reader, engine = open_engine(path)
    try:
        assert reader.cut is not None and not reader.cut.damaged
        assert len(engine) == 499
        engine.seek(len(engine))
        assert engine.store.to_json() == fold(events[:499])
    finally:
        engine.close()
        reader.close()


def test_empty_recording_has_no_times_and_seeks_stay_at_zero(tmp_path):
    path = write_recording(tmp_path / "empty.aclmrec", [])
    reader, engine = open_engine(path)
    try:
        assert len(engine) == 0 and engine.first_ts is None and engine.last_ts is None
        assert engine.seek(10) == 0 and engine.step(3) == 0
        assert engine.next_marker((EXCEPTION,), 0) is None
    finally:
        engine.close()
        reader.close()


# ---------------------------------------------------------------- times
FIRST = 1_796_203_689_054_967_224  # 2026-12-02 09:28:09.054967224 UTC
LAST = FIRST + 60 * 10**9


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("start", FIRST),
        ("end", LAST + 1),
        ("+1.5s", FIRST + 10 * 10**9 + 1_500_000_000),
        ("-250ms", FIRST + 10 * 10**9 - 250_000_000),
        ("2m", FIRST + 120 * 10**9),
        ("30", FIRST + 30 * 10**9),
        ("09:28:10.5", FIRST - 54_967_224 + 1_500_000_000),
        ("2026-12-02T09:28:11Z", FIRST - 54_967_224 + 2 * 10**9),
        ("2026-12-02T10:28:11+01:00", FIRST - 54_967_224 + 2 * 10**9),
    ],
)
def test_parse_seek_time(text, expected):
    assert parse_seek_time(text, FIRST, LAST, FIRST + 10 * 10**9) == expected


@pytest.mark.parametrize("text", ["", "soon", "25:00", "+x", "12:61", "1e9999", "0000-01-01"])
def test_parse_seek_time_rejects_what_it_cannot_read(text):
    with pytest.raises(SeekTimeError):
        parse_seek_time(text, FIRST, LAST, FIRST)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_parse_seek_time_never_raises_anything_else(text):
    try:
        value = parse_seek_time(text, FIRST, LAST, FIRST)
    except SeekTimeError:
        return
    assert isinstance(value, int) and 0 <= value < 1 << 63


def test_a_file_cut_after_indexing_gives_one_clear_error(tmp_path):
    from aclmon.errors import AclmonError

    events = session_events(400)
    path = write_recording(tmp_path / "shrinks.aclmrec", events)
    reader, engine = open_engine(path, build=False)
    try:
        os.truncate(path, os.path.getsize(path) // 2)
        with pytest.raises(AclmonError, match="no longer readable"):
            engine.seek(len(engine))
        assert engine.seek(1) == 1  # what is still there replays
    finally:
        engine.close()
        reader.close()


@settings(max_examples=30, deadline=None)
@given(
    frames=st.lists(
        st.one_of(
            st.integers(min_value=0, max_value=399).map(lambda n: ("event", n)),
            st.binary(max_size=40).map(lambda b: ("junk", b)),
        ),
        max_size=60,
    ),
    target=st.integers(min_value=0, max_value=70),
)
def test_hostile_frames_are_skipped_and_counted_never_raised(tmp_path_factory, frames, target):
    """Any payload bytes at all: the fold is that of the valid events, the
    rest counted as skipped, and markers never point at junk."""
    from aclmon.bus.recording import RecordingWriter

    pool = session_events(400)
    path = tmp_path_factory.mktemp("fuzz") / "f.aclmrec"
    decoder = ev.EventDecoder()
    with RecordingWriter(path, {}) as writer:
        for what, value in frames:
            writer.write_payload(ev.encode(pool[value]) if what == "event" else value)
    reader, engine = open_engine(path, snapshot_every=7)
    try:
        position = engine.seek(target)
        wanted = []
        for what, value in frames[:position]:
            payload = ev.encode(pool[value]) if what == "event" else value
            event = decoder.decode_payload(payload)
            if event is not None:
                wanted.append(event)
        store = Store()
        store.apply_many(wanted)
        skipped = position - len(wanted)
        got = engine.store.state.counters
        assert got.malformed + got.unknown == skipped
        store.note_decoder_counts(got.malformed, got.unknown)
        assert engine.store.to_json() == store.to_json()
        for frame in engine.markers(EXCEPTION):
            assert frames[frame][0] == "event" or decoder.decode_payload(frames[frame][1])
    finally:
        engine.close()
        reader.close()


def test_snapshots_hold_ring_items_once_and_restores_stay_independent(recording):
    path, events, frames = recording
    reader, engine = open_engine(path, snapshot_every=500)
    try:
        first, second = engine.state_at(1000), engine.state_at(1500)  # restores, no fold
        common = [d for d in second.dumps if any(d is e for e in first.dumps)]
        assert common  # dump files seen before frame 1000 are held once
        for name in ("exceptions", "dumps"):
            journal = engine.snapshots.journals[name].items
            assert journal and len({id(x) for x in journal}) == len(journal)
        first.dumps.clear()  # a restored ring is its own
        engine.seek(len(engine))
        engine.seek(1000)
        assert engine.store.to_json() == expected_at(events, frames, 1000)
        assert len(engine.store.state.dumps) == len(second.dumps) - (
            sum(type(e) is ev.DumpFileSeen for e, f in zip(events, frames, strict=True)
                if 1000 <= f < 1500)
        )  # fmt: skip
    finally:
        engine.close()
        reader.close()


@pytest.mark.parametrize("snapshot_every", [7, 100, 1000])
def test_snapshot_rings_are_the_store_rings_when_the_rings_wrap(recording, snapshot_every):
    """Small ring limits: items come and go between snapshots, and every restored
    ring is still exactly the fold's."""
    path, events, frames = recording

    def small() -> Store:
        return Store(exception_limit=3, dump_limit=5, log_limit=2)

    reader = RecordingReader(path, background=False)
    engine = ReplayEngine(reader, path, snapshot_every=snapshot_every, store_factory=small)
    try:
        engine.build()
        for position in [*engine.snapshots.at, 1, 1234, len(engine)]:
            state = engine.state_at(position)
            fresh = small()
            fresh.apply_many([e for e, f in zip(events, frames, strict=True) if f < position])
            for name in ("exceptions", "dumps", "logs"):
                # as JSON: decoded events hold tuples where the written ones held lists
                got, want = ([json.dumps(ev.to_json(x)) for x in getattr(st_, name)]
                             for st_ in (state, fresh.state))  # fmt: skip
                assert got == want, name
                assert getattr(state, f"{name}_dropped") == getattr(fresh.state, f"{name}_dropped")
    finally:
        engine.close()
        reader.close()


def test_reads_are_bounded_in_bytes_whatever_the_frame_sizes(tmp_path, monkeypatch):
    from aclmon.store import replay as replay_module

    monkeypatch.setattr(replay_module, "READ_BYTES", 1000)
    big = [ev.LogLine(n + 1, T0 + n, "info", "x" * (50 if n % 3 else 3000)) for n in range(60)]
    path = write_recording(tmp_path / "big.aclmrec", big)
    reader, engine = open_engine(path, snapshot_every=16)
    try:
        pieces = list(engine.frames.pieces(0, len(engine)))
        assert pieces[0][0] == 0 and pieces[-1][1] == 60
        assert all(b > a for a, b in pieces) and len(pieces) > 10
        offsets = reader.offsets
        for a, b in pieces:
            if b - a > 1:  # several frames only when they fit the budget
                assert offsets[b - 1] - offsets[a] < 1000
        engine.seek(60)
        assert engine.store.to_json() == fold(big)
        assert len(engine.frames.kinds(0, 60)) == 60
    finally:
        engine.close()
        reader.close()


def test_snapshot_count_stays_bounded_and_seeks_still_give_the_fold(recording):
    path, events, frames = recording
    reader = RecordingReader(path, background=False)
    engine = ReplayEngine(reader, path, snapshot_every=10, max_snapshots=8)
    try:
        engine.build()
        n = len(engine)
        # 3060 frames at one per 10 would be 306 snapshots: 7 spaced out, 1 at the end.
        assert len(engine.snapshots.at) <= 9 and engine.snapshots.spacing == -(-n // 7)
        assert engine.snapshots.at[-1] == n
        assert sorted(engine.snapshots.states) == engine.snapshots.at
        for target in (n, 1, n // 3 + 5, engine.snapshots.at[-1], 0, n - 1):
            engine.seek(target)
            assert engine.store.to_json() == expected_at(events, frames, target)
    finally:
        engine.close()
        reader.close()


class GrowingIndex:
    """A reader's index revealed a few frames at a time, as while a job still records."""

    def __init__(self, reader: RecordingReader, step: int) -> None:
        self.reader, self.step, self.shown = reader, step, 0

    def __len__(self) -> int:
        return self.shown

    @property
    def indexed(self) -> bool:
        self.shown = min(len(self.reader), self.shown + self.step)  # the builder polls this
        return self.shown == len(self.reader)

    @property
    def offsets(self):
        return self.reader.offsets[: self.shown]

    @property
    def timestamps(self):
        return self.reader.timestamps[: self.shown]

    def seek_time(self, ts_ns: int) -> int:
        return min(self.reader.seek_time(ts_ns), self.shown)


def test_snapshots_of_a_growing_recording_are_thinned_to_the_bound(recording):
    path, events, frames = recording
    reader = RecordingReader(path, background=False)
    index = GrowingIndex(reader, step=7)
    engine = ReplayEngine(index, path, snapshot_every=5, max_snapshots=6)
    try:
        engine.build()
        assert len(engine) == len(reader) and engine.ready
        assert 2 <= len(engine.snapshots.at) <= 7 and engine.snapshots.spacing > 5
        assert sorted(engine.snapshots.states) == engine.snapshots.at
        for at in engine.snapshots.at:
            engine.seek(at)
            assert engine.store.to_json() == expected_at(events, frames, at)
        engine.seek(len(engine) // 2 + 3)
        assert engine.store.to_json() == expected_at(events, frames, len(engine) // 2 + 3)
    finally:
        engine.close()
        reader.close()


def test_max_snapshots_below_two_is_refused(recording):
    path, _events, _frames = recording
    reader = RecordingReader(path, background=False)
    try:
        with pytest.raises(ValueError, match="max_snapshots"):
            ReplayEngine(reader, path, max_snapshots=1)
    finally:
        reader.close()


def test_shared_parts_keep_events_equal_and_hold_repeated_parts_once():
    from aclmon.store.snapshots import SharedParts

    def exception(seq: int, name: str) -> ev.AclException:
        tensor = ev.TensorDesc(1, 2, (4, int("8")), 1 << 40, 64, "x" + "y" * (seq % 2))
        return ev.AclException(seq, T0 + seq, 0, 3, seq, 7, 507015, "".join(name), "Conv2D",
                               (tensor, tensor), (tensor,))  # fmt: skip

    decoded = [exception(n, ["layer", "/conv"]) for n in range(6)]
    other = ev.LogLine(9, T0, "info", "text")
    parts = SharedParts(limit=4)
    shared = parts.share([*decoded, other])
    assert shared == [*decoded, other] and shared[-1] is other
    assert shared[0].op_name is shared[4].op_name and shared[0].inputs is shared[2].inputs
    assert shared[0].inputs[0] is shared[2].outputs[0]
    # Past the limit nothing new is remembered, yet every event stays equal.
    assert len(parts._parts) == 4  # name, type, tensor, inputs: not the outputs
    more = [exception(n, ["other", "/op"]) for n in range(10, 14)]
    assert parts.share(list(more)) == more and len(parts._parts) == 4


def test_shared_parts_hold_the_repeated_words_of_dump_records_once():
    from aclmon.store.snapshots import SharedParts

    def dump(seq: int) -> ev.DumpFileSeen:
        explained = ("AI Core: floating-point computation overflow " + "(0x020)",)
        record = {"output": 0, "explained": explained, "record": {"task_id": seq}}
        summary = {"kind": "over" + "flow", "task_id": seq, "records": (record,)}
        return ev.DumpFileSeen(seq, T0 + seq, f"/d/Opdebug.{seq}", "over" + "flow", 2099, summary)

    decoded = [dump(n) for n in range(3)]
    shared = SharedParts().share(list(decoded))
    assert shared == decoded
    assert shared[0].kind is shared[2].kind is shared[1].summary["kind"]
    records = [d.summary["records"][0] for d in shared]
    assert records[0]["explained"] is records[2]["explained"]
    assert records[0]["record"] == {"task_id": 0} and decoded[0].summary["records"][0] is not None


@pytest.mark.parametrize("max_snapshots", [2, 3, 5])
def test_the_end_gets_its_own_snapshot_within_the_bound(recording, max_snapshots):
    path, events, frames = recording
    reader = RecordingReader(path, background=False)
    engine = ReplayEngine(reader, path, snapshot_every=1, max_snapshots=max_snapshots)
    try:
        engine.build()
        n = len(engine)
        assert engine.snapshots.at[-1] == n and len(engine.snapshots.at) <= max_snapshots + 1
        assert engine.cost(n) == RESTORE_COST  # restore only, nothing to fold
        engine.seek(n)
        assert engine.store.to_json() == expected_at(events, frames, n)
    finally:
        engine.close()
        reader.close()


def _plog_line(ts_ns: int, text: str, seq: int = 0) -> ev.LogLine:
    return ev.LogLine(
        seq,
        ts_ns,
        "error",
        text,
        "RUNTIME",
        4242,
        "python",
        ts_ns,
        "stream.cpp:1",
        "/l/plog-4242_1.log",
    )


def test_log_lines_beside_the_recording_join_its_timeline_once(tmp_path):
    """CANN log lines read from files fold in at their times, wherever a seek
    lands; the copy the agent also published (a frame later) is not shown twice;
    a line after the last frame is there at the end."""
    events = session_events(400)
    # the agent published the entry logged at event 100's time a little later
    published = _plog_line(events[99].ts_ns, "published too")._replace(
        seq=events[149].seq, ts_ns=events[149].ts_ns + 1
    )
    events.insert(150, published)
    events = [e._replace(seq=n) for n, e in enumerate(events, start=1)]
    path = write_recording(tmp_path / "r.aclmrec", events, garbage_every=GARBAGE_EVERY)
    frames = [n + n // GARBAGE_EVERY for n in range(len(events))]
    side = [
        _plog_line(T0 - 5, "before the first event"),
        _plog_line(events[99].ts_ns, "published too"),
        _plog_line(events[299].ts_ns - 1, "between two events"),
        _plog_line(events[-1].ts_ns + 10**9, "after the last event"),
    ]
    reader = RecordingReader(path, background=False)
    engine = ReplayEngine(reader, path, snapshot_every=64, side_events=side)
    try:
        engine.build()

        def texts_at(position: int) -> list[str]:
            engine.seek(position)
            return [line.text for line in engine.store.state.logs]

        end = len(engine)
        assert texts_at(end) == [line.text for line in side]  # once each, in time order
        assert texts_at(frames[99]) == ["before the first event"]
        assert texts_at(frames[99] + 1) == ["before the first event", "published too"]
        assert texts_at(frames[299] + 1)[-1] == "between two events"
        assert texts_at(frames[299])[-1] == "published too"  # seeking back takes it away
        assert texts_at(end - 1)[-1] == "between two events"
        # the builder's snapshots hold the same as folding from the start
        fresh = ReplayEngine(reader, path, snapshot_every=10**6, side_events=side)
        fresh.seek(frames[320])
        assert list(engine.state_at(frames[320]).logs) == list(fresh.store.state.logs)
        fresh.close()
        # side events are outside the recording's sequence: no gaps from them
        assert engine.store.state.counters.gaps == 0
    finally:
        engine.close()
        reader.close()
