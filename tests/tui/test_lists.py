"""Every list view: / filters (Tab: search), n/N go to the matches, s/S and a
click on a column heading sort, a click selects, a double click opens, a click
on a tab switches view; the footer keeps Help and Quit at 80 columns."""

from __future__ import annotations

from tui_helpers import SIZE, make_app, static_text

from aclmon.tui.footer import FooterKey
from aclmon.tui.screens import ExceptionDetail, HelpScreen
from aclmon.tui.views import DumpsView, ExceptionsView, LogsView
from aclmon.tui.views.filterbar import FilterBar


def tasks(view: ExceptionsView) -> list[int]:
    return [view.exception_at(i).task_id for i in range(view.vlist.row_count)]


async def test_a_click_on_a_tab_switches_view():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tabs = static_text(app, "#tabs")
        await pilot.click("#tabs", offset=(1 + tabs.index("4 Dumps"), 0))
        await pilot.pause()
        assert app.current_view == "dumps" and app.focused is app.dumps_view.vlist
        await pilot.click("#tabs", offset=(1 + tabs.index("2 Exceptions"), 0))
        await pilot.pause()
        assert app.current_view == "exceptions"


async def test_a_double_click_opens_the_row_and_a_header_click_sorts():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        view = app.exceptions_view
        header = static_text(app, "#exceptions-header")
        # DEV: the bert exception on device 1 goes last, reversed (second click) first
        await pilot.click("#exceptions-header", offset=(1 + header.index("DEV"), 0))
        await pilot.pause()
        assert view.sort == "device" and tasks(view)[-1] == 37
        # the arrow after the heading, not over its last letter
        assert "DEV▲" in static_text(app, "#exceptions-header")
        await pilot.click("#exceptions-header", offset=(1 + header.index("DEV"), 0))
        await pilot.pause()
        assert view.sort_reverse and tasks(view)[0] == 37
        await pilot.click("#exceptions-header", offset=(1 + header.index("CODE"), 0))
        await pilot.pause()
        assert view.sort == "code" and not view.sort_reverse and tasks(view)[0] == 2001
        # a column that does not sort changes nothing
        await pilot.click("#exceptions-header", offset=(1 + header.index("TASK"), 0))
        await pilot.pause()
        assert view.sort == "code"
        await pilot.double_click("#exceptions-list", offset=(5, 0))
        await pilot.pause()
        assert isinstance(app.screen, ExceptionDetail) and app.screen.exception.task_id == 2001


async def test_s_cycles_the_sort_and_r_reverses_it_in_exceptions_dumps_and_logs():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        view = app.exceptions_view
        assert list(view.SORTS) == ["time", "device", "op", "code", "model"]
        await pilot.press("s", "s")  # op
        assert view.sort == "op" and tasks(view)[0] == 37  # bert/… sorts first
        await pilot.press("r")
        assert view.sort_reverse and tasks(view)[-1] == 37
        assert "sorted by op reversed" in static_text(app, "#exceptions-status")
        await pilot.press("s", "s", "s")  # back to time, still reversed: newest first
        assert view.sort == "time" and tasks(view)[0] == 37 and not view.plain
        await pilot.press("r")
        assert view.plain and view.vlist.first_index == 0

        await pilot.press("4")
        dumps = app.dumps_view
        assert list(dumps.SORTS) == ["time", "kind", "step", "op", "size"]
        await pilot.press("s", "s", "s", "s")  # size
        sizes = [dumps.dump_at(i).size for i in range(dumps.vlist.row_count)]
        assert dumps.sort == "size" and sizes == sorted(sizes)

        await pilot.press("5", "s")
        assert app.logs_view.sort == "level"


async def test_filter_then_n_and_N_go_through_the_matches_and_esc_clears():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "slash", *"conv2d", "enter")
        view = app.exceptions_view
        assert view.filter_text == "conv2d" and view.vlist.row_count == 6
        assert app.focused is view.vlist
        assert "filter “conv2d”: 6 shown" in static_text(app, "#exceptions-status")
        view.vlist.move_cursor_to(0)
        await pilot.press("n", "n")
        assert view.vlist.cursor == 2
        await pilot.press("N", "N", "N")
        assert view.vlist.cursor == 5  # wraps
        await pilot.press("escape")
        assert view.filter_text == "" and view.vlist.row_count == 8


async def test_the_filter_line_shows_what_is_typed_in_one_row_while_focused():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "slash", *"conv")
        await pilot.pause()
        bar = app.query_one("#exceptions-filter", FilterBar)
        assert app.focused is bar and bar.outer_size.height == 1
        assert bar.content_size.height == 1 and "conv" in bar.render_line(0).text


async def test_tab_in_the_filter_line_searches_instead_and_n_jumps_between_matches():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "home", "slash", "tab", *"matmul", "enter")
        view = app.exceptions_view
        # nothing hidden, the cursor on the match
        assert not view.filter_hides and view.vlist.row_count == 8
        assert view.exception_at(view.vlist.cursor).task_id == 2001
        assert "search “matmul”: 1 match(es)" in static_text(app, "#exceptions-status")
        await pilot.press("home", "n")
        assert view.exception_at(view.vlist.cursor).task_id == 2001
        await pilot.press("N")
        assert view.exception_at(view.vlist.cursor).task_id == 2001  # the only one
        # the match is marked in its row
        row = view._render_row(view.vlist.cursor, 140)
        marked = [
            row.plain[s.start : s.end] for s in row.spans if s.style and "underline" in str(s.style)
        ]
        assert "MatMul" in marked


async def test_without_a_filter_n_does_nothing_in_a_list():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "home", "n")
        assert app.exceptions_view.vlist.cursor == 0


async def test_dumps_and_logs_filter_through_the_same_line():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "slash", *"overflow", "enter")
        dumps: DumpsView = app.dumps_view
        assert dumps.vlist.row_count == 1 and dumps.selected_dump().kind == "overflow"
        await pilot.press("5", "slash", *"health", "enter")
        logs: LogsView = app.logs_view
        assert logs.filter_text == "health" and logs.vlist.row_count == 1


async def test_the_footer_keeps_help_and_quit_at_80_columns_in_every_view():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for key in "12345":
            await pilot.press(key)
            await pilot.pause()
            shown = {k.action for k in app.screen.query(FooterKey)}
            assert {"help", "quit"} <= shown, key
            right = max(k.region.right for k in app.screen.query(FooterKey) if k.action == "quit")
            assert right <= 80


def test_log_lines_near_an_exception_come_in_the_order_they_were_logged():
    """stdout lines arrive at once, the plog's at the tail's next poll: the detail's
    ±1 s window lists them by the time each was logged, not by arrival."""
    from aclmon import events as ev
    from aclmon.tui.views.logs import lines_near

    exception = ev.AclException(9, 5_000_000_000, 0, 3, 7, 11, 507015, "conv", "Conv2D", (), ())
    arrived = [
        ev.LogLine(1, 5_100_000_000, "info", "stdout: callback", "stdout", 42),
        ev.LogLine(2, 5_400_000_000, "error", "plog: core error", "RUNTIME", 42, "", 4_990_000_000),
        ev.LogLine(
            3, 5_400_000_000, "error", "plog: sync failed", "RUNTIME", 42, "", 5_050_000_000
        ),
    ]
    near = lines_near(arrived, exception, 42)
    assert [line.seq for line in near] == [2, 3, 1]


async def test_the_cursor_row_is_drawn_otherwise_once_its_list_loses_the_focus():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        vlist = app.exceptions_view.vlist
        row = vlist.cursor - vlist.first_index - round(vlist.scroll_y)
        focused = list(vlist.render_line(row))
        await pilot.press("slash")  # the focus goes to the filter line
        await pilot.pause()
        assert app.focused is not vlist
        assert list(vlist.render_line(row)) != focused


async def test_a_click_on_a_footer_key_does_what_the_key_does():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        keys = {k.action: k for k in app.screen.query(FooterKey)}
        assert not app.devices_view.show_destroyed
        await pilot.click(keys["toggle_destroyed"])
        await pilot.pause()
        assert app.devices_view.show_destroyed
        await pilot.click(keys["help"])
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_slash_matches_what_the_columns_show_and_nothing_hidden():
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("2")
        view = app.exceptions_view

        async def shown_for(text: str) -> int:
            await pilot.press("slash", *text, "enter")
            count = view.vlist.row_count
            await pilot.press("escape")
            return count

        assert await shown_for("dev") == 0  # no "device N" behind the DEV column
        assert await shown_for("stream") == 0
        # the time as it reads (its seconds here) and whole; the model's run; a code;
        # an error's name as it is cut to fit, and whole
        assert await shown_for("03.7") == 3
        assert await shown_for("10:01:03") == 4
        assert await shown_for("run 45") == 1
        assert await shown_for("bert_base") == 1
        assert await shown_for("aic_trap_exc") == 1
        assert await shown_for("aicore_trap_exception") == 1
        assert await shown_for("9/37") == 1
        await pilot.press("4")
        dumps = app.dumps_view
        await pilot.press("slash", *"opdebug", "enter")
        assert dumps.vlist.row_count == 0  # an overflow file's own name is not shown
        await pilot.press("escape", "slash", *"overflow", "enter")
        assert dumps.vlist.row_count == 1


async def test_tab_goes_into_the_dumps_pane_and_back_and_f_says_it_toggles():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        dumps = app.dumps_view
        pane = app.query_one("#dump-detail-scroll")
        assert dumps.vlist.has_focus
        await pilot.press("tab")
        assert pane.has_focus
        await pilot.press("tab")
        assert dumps.vlist.has_focus
        await pilot.press("2")
        shown = {k.hint.description for k in app.screen.query(FooterKey)}
        assert "Follow on/off" in shown
