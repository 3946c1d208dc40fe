"""The Timeline view: zoom, pan, Enter, the jumps between an exception and its
moment, following the replay's cursor, and the same slices as the export."""

from __future__ import annotations

import argparse
import json

from textual import events
from tui_helpers import make_app, screen_text, static_text, wait_for
from tui_scenario import build_events

from aclmon import events as ev
from aclmon.bus.recording import RecordingWriter
from aclmon.sources.export import configure_export, export_command
from aclmon.sources.replay_inputs import find_inputs
from aclmon.store.slices import EXCEPTION, OPERATOR
from aclmon.tui.replay import build_app
from aclmon.tui.screens import ExceptionDetail
from aclmon.tui.slicedetail import SliceDetail

SIZE = (160, 48)


def select_lane(view, title: str) -> None:
    view.selected = next(n for n, (lane, _row) in enumerate(view.rows()) if lane.title == title)


def put_cursor_on(view, ts_ns: int, span_ns: int) -> None:
    """The window ``span_ns`` long with its cursor (the middle) at ``ts_ns``."""
    view.following = False
    view.span_ns = span_ns
    view.start_ns = ts_ns - span_ns // 2
    view.redraw()


#: the recording of the scenario's events, in a test's tmp_path
RECORDING = "scenario.aclmrec"


def scenario_replay(tmp_path):
    """The replay app over the scenario's events, recorded (as ``RECORDING``)."""
    recording = tmp_path / RECORDING
    with RecordingWriter(recording, {"tool": "test"}) as writer:
        writer.write_many(build_events())
    return build_app(find_inputs(recording), theme="aclmon-dark")


async def timeline_shown(pilot, app):
    """The Timeline view shown, once its slices are built and its window set."""
    await pilot.press("6")
    view = app.timeline_view
    await wait_for(pilot, lambda: view.timeline is not None and view.span_ns > 0, 10)
    return view


def first_operator(view):
    index = view.timeline.index
    lane = next(lane for lane in index.lanes() if lane.title == "Stream 0")
    first, last = index.span()
    return index.window(lane, first, last, 0)[0]


async def test_w_s_plus_minus_and_the_wheel_zoom_keeping_the_time_under_the_cursor():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        view = app.timeline_view
        assert view.span_ns == 10_000_000_000 and view.following  # the last ten seconds
        await pilot.press("a")  # pan first: a window that follows moves with the newest
        span, at = view.span_ns, view.cursor_ns
        await pilot.press("w")
        assert view.span_ns == span // 2 and abs(view.cursor_ns - at) <= 1
        await pilot.press("plus", "equals_sign")
        assert view.span_ns == span // 8 and abs(view.cursor_ns - at) <= 1
        await pilot.press("s", "minus")
        assert view.span_ns == span // 2 and abs(view.cursor_ns - at) <= 2
        # the wheel zooms at the pointer: the time under it stays under it
        x = view.label_width + 1 + view.canvas_width // 4
        await pilot._post_mouse_events([events.MouseScrollUp], "#timeline-canvas", offset=(x, 3))
        await pilot.pause()
        assert view.span_ns == int(span // 2 * 0.8)
        assert view.cursor_column == view.canvas_width // 4
        await pilot._post_mouse_events([events.MouseScrollDown], "#timeline-canvas", offset=(x, 3))
        await pilot.pause()
        assert abs(view.span_ns - span // 2) <= 2
        assert "window 5 s" in static_text(app, "#timeline-status")


async def test_a_d_and_the_arrows_pan_and_f_follows_the_newest_again():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        view = app.timeline_view
        start, span = view.start_ns, view.span_ns
        await pilot.press("a")
        assert view.start_ns == start - span // 8 and not view.following
        await pilot.press("left")
        assert view.start_ns == start - span // 4
        await pilot.press("d", "right", "right")
        assert view.start_ns == start + span // 8
        assert "f: follow" in static_text(app, "#timeline-status")
        await pilot.press("f")
        assert view.following and view.start_ns == start
        await pilot.press("a", "end")
        assert view.following and view.start_ns == start
        # the whole span, then back down a row and up
        await pilot.press("z")
        first, last = view.timeline.index.span()
        assert view.start_ns <= first and view.start_ns + view.span_ns >= last
        await pilot.press("home", "down", "down", "j", "up", "k")
        assert view.selected == 1
        await pilot.press("pagedown", "pageup")
        assert view.selected == 0


async def test_enter_on_an_operator_shows_its_op_model_run_and_duration():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        view = app.timeline_view
        op = first_operator(view)
        select_lane(view, "Stream 0")
        put_cursor_on(view, (op.start_ns + op.end_ns) // 2, 2_000_000)
        await pilot.pause()
        under = static_text(app, "#timeline-under")
        assert "resnet50/conv1/Conv2D" in under and "resnet50_bs32 run 60" in under
        # the operators of the run are drawn with their names, cut to fit
        assert "resnet50/conv1/Conv2D" in screen_text(app)
        await pilot.press("enter")
        assert isinstance(app.screen, SliceDetail)
        body = static_text(app, "#detail-body")
        for text in ("NPU 0 Stream 0", "duration", "412.0 µs", "Conv2D", "resnet50_bs32",
                     "Execution", "60"):  # fmt: skip
            assert text in body, text
        await pilot.press("e")  # not an exception: nothing to go on to
        assert isinstance(app.screen, SliceDetail)
        await pilot.press("escape")
        assert not isinstance(app.screen, SliceDetail)


async def test_an_exceptions_detail_jumps_to_its_moment_and_back_to_the_exception():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "up", "enter")  # the newest exception's detail
        assert isinstance(app.screen, ExceptionDetail)
        exception = app.screen.exception
        await pilot.press("t")
        view = app.timeline_view
        assert app.current_view == "timeline" and not view.following
        lane, row = view.rows()[view.selected]
        assert (lane.stream, row) == ((exception.device_id, exception.stream_id), 0)
        assert abs(view.cursor_ns - exception.ts_ns) <= view.span_ns // view.canvas_width
        item = view.item_under_cursor()
        assert item.kind == EXCEPTION and item.event == exception
        await pilot.press("enter")
        assert isinstance(app.screen, SliceDetail)
        assert "Task Id" in static_text(app, "#detail-body")
        await pilot.press("e")  # on to the exception's own detail
        await wait_for(pilot, lambda: isinstance(app.screen, ExceptionDetail))
        assert app.screen.exception == exception


async def test_a_click_puts_the_cursor_and_a_second_opens():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        view = app.timeline_view
        x = view.label_width + 1 + 10
        await pilot.click("#timeline-canvas", offset=(x, 3))
        assert view.selected == 2 and view.cursor_column == 10
        await pilot.click("#timeline-canvas", offset=(x, 3))
        await pilot.pause()
        # nothing there: a notice, no detail
        assert not isinstance(app.screen, SliceDetail)


async def test_the_view_and_the_export_show_the_same_slices_for_a_window(tmp_path):
    app = scenario_replay(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        view = await timeline_shown(pilot, app)
        op = first_operator(view)
        put_cursor_on(view, op.start_ns, 30_000_000)  # the end of one run, half of another
        await pilot.pause()
        t0, t1 = view.start_ns, view.start_ns + view.span_ns
        shown = {(s.name, s.start_ns) for s in view.slices_in_window()}
    kinds = {s.kind for s in view.slices_in_window()}
    assert OPERATOR in kinds and len(shown) > 40
    parser = argparse.ArgumentParser()
    configure_export(parser)
    out = tmp_path / "trace.json"
    # the export's --window in seconds from the recording's first event
    first = build_events()[0].ts_ns
    args = parser.parse_args(["--trace", str(out), str(tmp_path / RECORDING), "--window",
                              f"{(t0 - first) / 1e9:.9f}..{(t1 - first) / 1e9:.9f}"])  # fmt: skip
    assert export_command(args) == 0
    trace = json.loads(out.read_text())
    origin = trace["otherData"]["session_start_ns"]
    exported = {
        (e["name"], origin + round(e["ts"] * 1000))
        for e in trace["traceEvents"]
        if e.get("ph") in ("X", "b")
    }
    assert exported == shown


async def test_replay_builds_the_timeline_and_follows_the_cursor(tmp_path):
    app = scenario_replay(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        view = await timeline_shown(pilot, app)
        app.seek_text("10")  # ten seconds in
        await wait_for(pilot, lambda: app.cursor_ts == view.pinned_ns and not app.seeking, 10)
        view.redraw()
        assert abs(view.cursor_ns - app.position_ts()) <= view.span_ns // view.canvas_width
        assert "following the replay" in static_text(app, "#timeline-status")
        exceptions = [e for e in build_events() if isinstance(e, ev.AclException)]
        assert view.timeline.index.find(exceptions[0]) is not None


async def test_a_replay_moving_while_the_timeline_is_hidden_draws_it_once_shown(
    tmp_path, monkeypatch
):
    """Seeks and playback in another view leave the hidden Timeline alone; shown
    again, it follows the replay's cursor from where it is now."""
    app = scenario_replay(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        view = await timeline_shown(pilot, app)
        await pilot.press("1")
        await pilot.pause()
        redraws: list[int | None] = []  # the replay's time at each drawing of the lines
        draw = view._refresh_changed_lines
        monkeypatch.setattr(
            view, "_refresh_changed_lines", lambda: (redraws.append(view.pinned_ns), draw())
        )
        for where in ("10", "5", "end"):
            app.seek_text(where)
            await wait_for(pilot, lambda: app.cursor_ts == view.pinned_ns and not app.seeking, 10)
        assert redraws == []  # hidden: nothing drawn
        await pilot.press("6")
        await pilot.pause()
        assert redraws and redraws[-1] == app.cursor_ts  # shown: drawn where the replay is
        assert abs(view.cursor_ns - app.position_ts()) <= view.span_ns // view.canvas_width


async def test_operator_bars_are_cut_by_path_segments_so_layers_stay_apart():
    """Two operators whose names differ only in the layer, in bars too narrow for
    their names: each bar keeps the layer (…/layer_11/…), as every list does."""
    events = build_events()
    begins = [e for e in events if isinstance(e, ev.ExecuteBegin) and e.model_id == 2]
    ends = [e for e in events if isinstance(e, ev.ExecuteEnd) and e.model_id == 2]
    run_start_ns = ends[-1].ts_ns - 88_000_000
    assert begins[-1].ts_ns <= run_start_ns < ends[-1].ts_ns
    start_us = run_start_ns // 1000 + 100
    seq, ts = events[-1].seq, events[-1].ts_ns
    for layer in (1, 11, 1, 11):
        name = f"bert/encoder/layer_{layer}/attention/self/query/MatMul"
        seq, ts = seq + 1, ts + 1
        events.append(ev.OpTiming(seq, ts, 2, name, "MatMul", start_us, start_us + 20_000, 20_000))
        start_us += 21_000
    app = make_app(events=events)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        view = app.timeline_view
        await wait_for(pilot, lambda: view.timeline is not None and view.timeline.index.span())
        put_cursor_on(view, run_start_ns + 44_000_000, 100_000_000)
        await pilot.pause()
        shown = screen_text(app)
        assert "…/layer_1/…/query/MatMul" in shown and "…/layer_11/…/query/MatMul" in shown
        assert "bert/encoder/lay…" not in shown  # no cut in the middle of a segment


async def test_a_redraw_draws_again_only_the_lines_that_changed(monkeypatch):
    import aclmon.tui.views.timeline as timeline_module

    drawn_rows: list[int] = []
    draw_row = timeline_module.draw_row

    def counting(palette, cells, marks, cursor, fit):  # type: ignore[no-untyped-def]
        drawn_rows.append(len(cells))
        return draw_row(palette, cells, marks, cursor, fit)

    monkeypatch.setattr(timeline_module, "draw_row", counting)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        view = app.timeline_view
        lanes = len(view.rows())
        assert lanes >= 3 and len(drawn_rows) >= lanes  # the first drawing: every row
        # Rows drawn before the names of later rows were known may cut a name
        # otherwise now: the first redraw draws those again, the next none.
        view.redraw()
        await pilot.pause()
        drawn_rows.clear()
        view.redraw()  # nothing moved (the scenario's job has ended)
        await pilot.pause()
        assert drawn_rows == []
        view.action_row(1)  # the selection moves down a row: its old and new rows
        await pilot.pause()
        assert len(drawn_rows) == 2
        shown = screen_text(app)
        # what a drawing of every line from scratch shows
        view._strips.clear()
        view.canvas.refresh()
        await pilot.pause()
        assert screen_text(app) == shown


async def test_a_line_asked_for_at_another_width_than_its_redraw_is_drawn_at_that_width():
    """A redraw notes what each changed line is drawn from, for the canvas's width
    then; a line Textual asks for after a resize, before the next redraw, is drawn
    for the width it is asked at, never from the noted source of the old width."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        view = app.timeline_view
        width = view.canvas.container_size.width
        view._strips.clear()
        view._refresh_changed_lines()  # every line noted, for ``width``
        assert view._sources
        narrower = width - 10
        for y in sorted(view._sources):
            assert len(view.strip(y, narrower).text) == narrower
