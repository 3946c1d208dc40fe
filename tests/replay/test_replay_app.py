"""Pilot tests: the replay timeline and its keys, the dump-directory view, driven like a user."""

from __future__ import annotations

import asyncio
import io
import os
import threading

import pytest
from recordings import session_events, write_recording
from rich.console import Console

from aclmon import events as ev
from aclmon.sources.replay_inputs import find_inputs
from aclmon.store import Store
from aclmon.tui.replay import SPEEDS, ReplayApp, SeekTimeScreen, build_app
from aclmon.tui.replay import app as replay_module

SIZE = (150, 44)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def text_of(app, selector: str) -> str:
    widget = app.screen.query_one(selector)
    console = Console(width=max(widget.size.width, 60), file=io.StringIO(), record=True)
    console.print(widget.content)
    return console.export_text()


def fold(events) -> dict:
    store = Store()
    store.apply_many(list(events))
    return store.to_json()


async def wait_for(pilot, predicate, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached")
        await pilot.pause(0.02)


@pytest.fixture
def recorded(tmp_path):
    events = session_events(3000)
    return write_recording(tmp_path / "session.aclmrec", events), events


def make_app(path, **kwargs) -> ReplayApp:
    # A long refresh interval: the test drives ticks itself, with a fake clock.
    kwargs.setdefault("interval", 30.0)
    kwargs.setdefault("clock", FakeClock())
    return build_app(find_inputs(path), **kwargs)


async def seek_key(pilot, key: str) -> None:
    """Press a key that seeks (``E``, ``S``…) and wait until the seek is done."""
    await pilot.press(key)
    await wait_for(pilot, lambda: not pilot.app.seeking)


def first_index(events, predicate) -> int:
    return next(i for i, e in enumerate(events) if predicate(e))


async def test_step_back_and_forth_and_speed_keys(recorded):
    path, events = recorded
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        engine = app.engine
        await wait_for(pilot, lambda: engine.index.indexed)
        assert engine.position == 0 and not app.playing
        await wait_for(pilot, lambda: "event 0 / 3,000" in text_of(app, "#timeline"))
        assert "paused" in text_of(app, "#timeline")
        await pilot.press("full_stop", "full_stop", "full_stop")
        assert engine.position == 3
        assert app.store.to_json() == fold(events[:3])
        await pilot.press("comma")
        assert engine.position == 2 and app.store.to_json() == fold(events[:2])
        assert "vm" not in text_of(app, "#header") and "node:4242" in text_of(app, "#header")
        assert app.speed == 1.0
        await pilot.press("plus", "plus")
        assert app.speed == 4.0 and "x4" in text_of(app, "#timeline")
        await pilot.press(*["minus"] * 12)
        assert app.speed == SPEEDS[0] == 0.25
        await pilot.press(*["plus"] * 12)
        assert app.speed == SPEEDS[-1] == 64.0


async def test_end_start_and_ten_second_jumps(recorded):
    path, events = recorded
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        engine = app.engine
        await wait_for(pilot, lambda: engine.index.indexed)
        await pilot.press("E")
        await wait_for(pilot, lambda: not app.seeking)
        assert engine.position == 3000 and app.store.to_json() == fold(events)
        assert "at the end" in text_of(app, "#timeline")
        await pilot.press("S")
        await wait_for(pilot, lambda: not app.seeking)
        assert engine.position == 0 and app.store.to_json() == fold([])
        await pilot.press("full_stop")  # the cursor now has a time: the first event's
        await pilot.press("right_square_bracket")  # +10 s = 10,000 events at 1 ms: the end
        await wait_for(pilot, lambda: not app.seeking)
        assert engine.position == 3000
        await pilot.press("left_square_bracket")  # back 10 s from the last event
        await wait_for(pilot, lambda: not app.seeking)
        assert engine.position == 0


async def test_next_and_previous_exception_or_overflow(recorded):
    path, events = recorded
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        engine = app.engine
        await wait_for(pilot, lambda: engine.index.indexed)
        await wait_for(pilot, lambda: engine.ready)
        first_exc = first_index(events, lambda e: type(e) is ev.AclException)
        first_ovf = first_index(
            events, lambda e: type(e) is ev.DumpFileSeen and e.kind == "overflow"
        )
        markers = sorted(
            i
            for i, e in enumerate(events)
            if type(e) is ev.AclException or (type(e) is ev.DumpFileSeen and e.kind == "overflow")
        )
        assert markers[0] == first_exc < first_ovf
        await pilot.press("n")
        assert engine.position == first_exc + 1
        assert app.current_view == "exceptions"
        assert app.store.to_json() == fold(events[: first_exc + 1])
        assert "1 exception(s)" in text_of(app, "#exceptions-status")
        while engine.position < first_ovf + 1:
            await pilot.press("n")
        assert engine.position == first_ovf + 1 and app.current_view == "dumps"
        await pilot.press("N")
        before_ovf = markers[markers.index(first_ovf) - 1]
        assert engine.position == before_ovf + 1
        assert app.store.to_json() == fold(events[: engine.position])
        await pilot.press("full_stop", "full_stop")  # past the marker: N comes back to it
        await pilot.press("N")
        assert engine.position == before_ovf + 1


async def test_go_to_time_prompt(recorded):
    path, events = recorded
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        engine = app.engine
        await wait_for(pilot, lambda: engine.index.indexed)
        await pilot.press("colon")
        assert isinstance(app.screen, SeekTimeScreen)
        await pilot.press(*"1.5s", "enter")
        await wait_for(pilot, lambda: not app.seeking)
        target = events[0].ts_ns + 1_500_000_000
        want = sum(1 for e in events if e.ts_ns < target)
        assert engine.position == want and app.store.to_json() == fold(events[:want])
        await pilot.press("colon", *"whenever", "enter")  # a bad time: one clear notice
        await pilot.pause()
        assert engine.position == want
        assert any("cannot read" in n.message for n in app._notifications)


async def test_play_folds_by_recording_time_at_the_chosen_speed(recorded):
    path, events = recorded
    clock = FakeClock()
    app = make_app(path, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        engine = app.engine
        await wait_for(pilot, lambda: engine.index.indexed)
        await pilot.press("full_stop")  # at the first event
        await pilot.press("plus")  # x2
        await pilot.press("space")
        assert app.playing and "playing" in text_of(app, "#timeline")
        clock.now += 0.25  # x2: half a second of recording = 500 events at 1 ms
        app.tick()
        target = events[0].ts_ns + 500_000_000
        want = sum(1 for e in events if e.ts_ns < target)
        assert engine.position == want and app.store.to_json() == fold(events[:want])
        await pilot.press("space")
        assert not app.playing
        clock.now += 5
        app.tick()
        assert engine.position == want  # paused: time passes, the state does not
        await pilot.press("space")
        clock.now += 100  # far past the end: playback stops there
        app.tick()
        assert engine.position == 3000 and not app.playing


async def test_the_snapshots_and_the_slices_are_frozen_once_built(recorded, monkeypatch):
    """Once built, the replay's long-lived state leaves the collector's reach (a
    full collection walking it would stop a seek): once for the snapshots, once
    for the timeline's slices, whichever comes first."""
    path, _events = recorded
    app = make_app(path)
    empty = app.slices  # until the recording's slices are built
    calls: list[tuple[bool, bool]] = []
    monkeypatch.setattr(
        replay_module,
        "freeze_long_lived",
        lambda: calls.append((app.engine.ready, app.slices is not empty)) or True,
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(calls) == 2)
        await pilot.pause(0.5)  # the warnings' timer has stopped: no third
    assert len(calls) == 2
    assert any(ready for ready, _ in calls) and any(sliced for _, sliced in calls)


async def test_far_seeks_run_on_a_worker_and_swap_the_state_in(recorded, monkeypatch):
    path, events = recorded
    monkeypatch.setattr(replay_module, "SYNC_SEEK_FRAMES", 5)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.index.indexed)
        app.seek_position(2222)
        assert app.seeking
        await wait_for(pilot, lambda: not app.seeking)
        assert app.engine.position == 2222 and app.store.to_json() == fold(events[:2222])
        app.seek_position(17)
        await wait_for(pilot, lambda: not app.seeking)
        assert app.engine.position == 17 and app.store.to_json() == fold(events[:17])


async def test_a_seek_during_a_worker_seek_wins_and_the_older_state_is_never_shown(
    recorded, monkeypatch
):
    path, events = recorded
    monkeypatch.setattr(replay_module, "SYNC_SEEK_FRAMES", 5)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        engine = app.engine
        await wait_for(pilot, lambda: engine.index.indexed)
        fold_state_at = engine.state_at
        first_started, release_first, first_done = (threading.Event() for _ in range(3))

        def state_at(position, abandoned=None):
            if position == 2222:  # the first seek's fold: held until the second one landed
                first_started.set()
                release_first.wait(10)
                try:
                    return fold_state_at(position, abandoned)
                finally:
                    first_done.set()
            return fold_state_at(position, abandoned)

        monkeypatch.setattr(engine, "state_at", state_at)
        app.seek_position(2222)
        await wait_for(pilot, first_started.is_set)
        app.seek_position(17)  # while the first one folds: no longer ignored
        await wait_for(pilot, lambda: not app.seeking)
        assert engine.position == 17 and app.store.to_json() == fold(events[:17])
        release_first.set()
        await wait_for(pilot, first_done.is_set)
        await pilot.pause()
        assert engine.position == 17 and app.store.to_json() == fold(events[:17])
        assert not app.seeking


async def test_a_second_jump_while_a_worker_seeks_goes_on_from_where_the_first_goes(
    recorded, monkeypatch
):
    path, events = recorded
    monkeypatch.setattr(replay_module, "SYNC_SEEK_FRAMES", 5)
    monkeypatch.setattr(replay_module, "JUMP_NS", 1_000_000_000)  # ] is +1 s here
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        engine = app.engine
        await wait_for(pilot, lambda: engine.index.indexed)
        app.seek_position(1)
        await wait_for(pilot, lambda: not app.seeking)
        app.action_jump(1)
        app.action_jump(1)  # before the first one landed
        await wait_for(pilot, lambda: not app.seeking)
        # where two presses one after the other would have gone
        first = engine.position_of_time(engine.time_at(1) + 1_000_000_000)
        want = engine.position_of_time(engine.time_at(first) + 1_000_000_000)
        assert want > first > 1
        assert engine.position == want and app.store.to_json() == fold(events[:want])


async def test_truncated_recording_opens_with_a_warning_and_every_complete_event(tmp_path):
    events = session_events(800)
    path = write_recording(tmp_path / "cut.aclmrec", events)
    os.truncate(path, os.path.getsize(path) - 3)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.ready)
        await wait_for(pilot, lambda: "truncated" in text_of(app, "#timeline"))
        await pilot.press("E")
        await wait_for(pilot, lambda: not app.seeking)
        assert app.engine.position == 799
        assert app.store.to_json() == fold(events[:799])
        assert "every complete event" in text_of(app, "#timeline")


async def test_open_at_the_end_and_play_flags(recorded):
    path, events = recorded
    app = make_app(path, start_at="end", interval=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app._start_at is None and not app.seeking)
        assert app.engine.position == 3000 and app.store.to_json() == fold(events)
    app = make_app(path, play=True)
    async with app.run_test(size=SIZE):
        assert app.playing


async def test_help_lists_the_timeline_keys(recorded):
    path, _ = recorded
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        sections = dict((title, rows) for title, rows in app.help_sections())
        keys = {row[0] for row in sections["Replay timeline"]}
        assert {"space", ".", ",", "+,=", ">,n", ":,t", "]", "["} <= keys


async def test_a_file_cut_while_open_gives_a_notice_not_a_traceback(recorded):
    path, events = recorded
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.ready)
        await seek_key(pilot, "E")
        await pilot.press("S")
        os.truncate(path, os.path.getsize(path) // 3)
        await pilot.press("space")
        app._clock.now += 3600  # an hour later: everything is due
        app.tick()
        await pilot.pause()
        assert not app.playing
        assert any("no longer readable" in n.message for n in app._notifications)
        await pilot.press("full_stop")  # the start of the file is still there
        assert app.engine.position == 1 and app.store.to_json() == fold(events[:1])


async def test_play_started_before_the_index_has_a_frame_starts_at_the_first_event(recorded):
    path, events = recorded
    clock = FakeClock()
    app = make_app(path, clock=clock)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.index.indexed)
        app.set_playing(True)
        app._play_ts = 0  # as if the indexer had not reached the first frame yet
        clock.now += 0.1
        app.tick()
        clock.now += 0.1
        app.tick()
        assert 0 < app.engine.position < 3000  # moving from the first event, not stuck at 0
        want = sum(1 for e in events if e.ts_ns < events[0].ts_ns + 200_000_000)
        assert app.engine.position == want


@pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24", "100x30"])
async def test_the_timeline_status_never_wraps_over_its_bar(recorded, size):
    path, _ = recorded
    app = make_app(path)
    async with app.run_test(size=size) as pilot:
        timeline = app.screen.query_one("#timeline")

        def shown() -> list[str]:
            lines = timeline.render_lines(timeline.region.reset_offset)
            return ["".join(s.text for s in line).rstrip() for line in lines]

        # the recording indexed whole (the counts ahead grow while it is indexed)
        await wait_for(
            pilot,
            lambda: (
                app.engine.index.indexed and "ahead" in shown()[0] and "indexing" not in shown()[0]
            ),
        )
        status, bar = shown()
        assert status.startswith(" ⏸ paused x1  10:00:00") and "ahead 29✖ 13▲" in status
        assert bar.lstrip().startswith("●") and "✖" in bar and "ahead" not in bar
        # the keys to start with: a wording that fits (none at 80 columns), never cut short
        assert "…" not in status and ("space plays" in status) == (size[0] >= 100)


async def test_r_reverses_a_lists_sort_in_a_replay_as_live_and_S_still_seeks_the_start(recorded):
    path, _events = recorded
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.ready)
        await seek_key(pilot, "E")
        await pilot.press("2", "s", "r")
        view = app.exceptions_view
        assert view.sort == "device" and view.sort_reverse
        assert "sorted by device reversed" in text_of(app, "#exceptions-status")
        await seek_key(pilot, "S")
        assert app.engine.position == 0 and view.sort_reverse  # S seeks, it does not reverse
        await pilot.press("r")
        assert not view.sort_reverse
