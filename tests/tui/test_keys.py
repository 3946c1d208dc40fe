"""Keys of the single-agent app that no other test presses: grouping identical
exceptions, the other keys that close the detail and the help, the modal
scroll keys' other names, the Devices view's arrow keys and the picker's q."""

from __future__ import annotations

from tui_helpers import SIZE, make_app, static_text
from tui_scenario import build_events

from aclmon import events as ev
from aclmon.tui.screens import ExceptionDetail, HelpScreen


async def scrolled(pilot, selector: str, *keys: str) -> float:
    """Press ``keys``, then how far the scrolling widget ``selector`` is scrolled."""
    await pilot.press(*keys)
    await pilot.pause()
    return float(pilot.app.screen.query_one(selector).scroll_y)


async def test_c_groups_identical_exceptions_with_a_count_and_enter_opens_the_newest():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        view = app.exceptions_view
        assert view.vlist.row_count == 8
        await pilot.press("c")
        assert view.grouped
        # six on resnet50/conv1/Conv2D with one code on device 0; the other two alone
        assert view.vlist.row_count == 3
        assert "3 group(s)" in static_text(app, "#exceptions-status")
        assert "COUNT" in static_text(app, "#exceptions-header")
        conv = next(i for i in range(3) if view.row_at(i).size == 6)
        assert view.row_at(conv).first.task_id == 1000 and view.row_at(conv).last.task_id == 1005
        # the COUNT column takes its room from the others: every row still fits
        width = view.vlist.scrollable_content_region.width
        assert all(view.render_row(view.row_at(i), width).cell_len <= width for i in range(3))
        view.vlist.move_cursor_to(conv)
        await pilot.press("enter")
        assert isinstance(app.screen, ExceptionDetail) and app.screen.exception.task_id == 1005
        await pilot.press("escape")
        await pilot.press("c")
        assert not view.grouped and view.vlist.row_count == 8


async def test_l_lists_the_lines_near_the_exception_in_the_order_they_were_logged():
    events = build_events()
    e = [x for x in events if isinstance(x, ev.AclException)][-3]
    pid = events[0].pid
    # the job's stdout arrives at once; the plog line logged before it a poll later
    said = ev.LogLine(
        60_001,
        e.ts_ns + 10**6,
        "info",
        "exception callback",
        "stdout",
        pid,
        "python",
        e.ts_ns + 5 * 10**6,
        "",
        "",
    )
    logged = ev.LogLine(
        60_002,
        e.ts_ns + 10**8,
        "error",
        f"task_id={e.task_id} failed",
        "RUNTIME",
        pid,
        "python",
        e.ts_ns + 10**6,
        "stream.cc:1",
        "/plog/p.log",
    )
    app = make_app(events=[*events, said, logged])  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        view = app.exceptions_view
        view.vlist.move_cursor_to(next(i for i in range(8) if view.exception_at(i) == e))
        await pilot.press("l")
        logs = app.logs_view
        assert app.current_view == "logs" and logs.window is not None
        shown = [logs.line_at(logs.vlist.first_index + i) for i in range(logs.vlist.row_count)]
        assert [line.seq for line in shown if line.seq > 60_000] == [60_002, 60_001]
        times = [line.logged_ns or line.ts_ns for line in shown]
        assert times == sorted(times)


async def test_the_detail_without_files_closes_on_enter_and_scrolls_with_space():
    app = make_app()
    async with app.run_test(size=(140, 24)) as pilot:
        await pilot.press("2", "G")  # the newest: the bert exception, no dump file seen
        await pilot.press("enter")
        assert isinstance(app.screen, ExceptionDetail) and not app.screen.dumps
        paged = await scrolled(pilot, "#detail-scroll", "space")
        assert paged > 1
        assert await scrolled(pilot, "#detail-scroll", "up") == paged - 1
        await pilot.press("enter")
        assert not isinstance(app.screen, ExceptionDetail) and app.is_running


async def test_help_closes_on_q_question_mark_and_f1_and_the_devices_arrows_scroll():
    app = make_app()
    async with app.run_test(size=(140, 20)) as pilot:
        await pilot.press("down", "down")  # the devices' arrows move the tree's cursor
        assert app.devices_view.cursor == 1
        await pilot.press("up")
        assert app.devices_view.cursor == 0
        for opens, closes in (("question_mark", "q"), ("f1", "question_mark")):
            await pilot.press(opens)
            assert isinstance(app.screen, HelpScreen)
            await pilot.press(closes)
            assert not isinstance(app.screen, HelpScreen) and app.is_running
        await pilot.press("question_mark")
        assert await scrolled(pilot, "#help-scroll", "space", "down") == 11
        assert await scrolled(pilot, "#help-scroll", "up") == 10
        await pilot.press("f1")
        assert not isinstance(app.screen, HelpScreen) and app.is_running


async def test_q_in_the_agent_picker_cancels():
    from aclmon.bus.registry import AgentInfo
    from aclmon.tui.screens import PickerApp

    agents = [AgentInfo(101, "/run/a.sock", "node-a", ("python", "a.py"), 0.0)] * 2
    app = PickerApp(agents)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value is None and not app.is_running
