"""The mouse where the other tests do not take it: a click on a row of the Dumps
and Logs lists and of the operator table selects it, a double click opens it,
a click on a Dumps or Logs column heading sorts, a click on a footer key does
what the key does."""

from __future__ import annotations

from tui_helpers import SIZE, make_app, overflow_pair_app, static_text, wait_for
from tui_scenario import build_events

from aclmon import events as ev
from aclmon.tui.footer import FittingFooter
from aclmon.tui.screens import ExceptionDetail, HelpScreen, LogLineDetail
from aclmon.tui.views.optable import OpList, OpTable


async def click_footer(app, pilot, description: str) -> None:
    """Click the footer's key that says ``description``."""
    footer = app.screen.query_one(FittingFooter)
    keys = [w for w in footer.walk_children() if description in str(w.render())]
    assert keys, f"no footer key {description!r}"
    await pilot.click(keys[0])
    await pilot.pause()


async def test_a_click_on_a_footer_key_does_what_the_key_does():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        assert not app.exceptions_view.grouped
        await click_footer(app, pilot, "Group")
        assert app.exceptions_view.grouped
        await click_footer(app, pilot, "Help")
        assert isinstance(app.screen, HelpScreen)


async def test_in_the_dumps_list_a_click_selects_a_double_click_decodes_a_heading_sorts(tmp_path):
    app, _over_path, op_path = overflow_pair_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        view = app.dumps_view
        assert view.vlist.cursor == 1  # following: the newest file
        await pilot.click("#dumps-list", offset=(5, 0))
        assert view.vlist.cursor == 0 and not view.detail_shown
        assert op_path.name in static_text(app, "#dump-detail")  # its summary
        await pilot.double_click("#dumps-list", offset=(5, 1))
        assert view.vlist.cursor == 1 and view.detail_shown
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "OVERFLOW RECORD" in static_text(app, "#dump-detail"))
        # a click on a column heading sorts by it, a second reverses
        header = static_text(app, "#dumps-header")
        await pilot.click("#dumps-header", offset=(1 + header.index("SIZE"), 0))
        sizes = [view.dump_at(i).size for i in range(view.vlist.row_count)]
        assert view.sort == "size" and sizes == sorted(sizes) and sizes[0] != sizes[1]
        await pilot.click("#dumps-header", offset=(1 + header.index("SIZE"), 0))
        sizes = [view.dump_at(i).size for i in range(view.vlist.row_count)]
        assert view.sort_reverse and sizes == sorted(sizes, reverse=True)


async def test_in_the_logs_list_a_click_selects_a_double_click_opens_the_line():
    events = build_events()
    exception = [e for e in events if isinstance(e, ev.AclException)][-3]
    pid = events[0].pid
    line = ev.LogLine(50_001, exception.ts_ns + 10**6, "error",
                      f"aicore kernel execute failed, stream_id={exception.stream_id},"
                      f" task_id={exception.task_id}", "RUNTIME", pid, "python",
                      exception.ts_ns, "stream.cc:1043", "/plog/plog-1.log")  # fmt: skip
    app = make_app(events=[*events, line])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        view = app.logs_view
        assert view.vlist.row_count == 2 and view.vlist.follow
        # in the order each line was logged: the error line (logged at the exception) first
        assert view.line_at(view.vlist.first_index).seq == 50_001
        await pilot.click("#logs-list", offset=(5, 1))
        assert view.vlist.cursor == view.vlist.first_index + 1 and view.vlist.follow
        await pilot.click("#logs-list", offset=(5, 0))
        assert view.vlist.cursor == view.vlist.first_index and not view.vlist.follow
        assert not isinstance(app.screen, LogLineDetail)
        await pilot.double_click("#logs-list", offset=(5, 0))
        await pilot.pause()
        assert isinstance(app.screen, LogLineDetail)
        await pilot.press("e")
        assert isinstance(app.screen, ExceptionDetail)
        assert app.screen.exception.seq == exception.seq
        await pilot.press("escape")
        # a click on a column heading sorts by it, a second reverses
        header = static_text(app, "#logs-header")
        await pilot.click("#logs-header", offset=(1 + header.index("LEVEL"), 0))
        assert view.sort == "level" and not view.sort_reverse
        assert view.line_at(view.vlist.first_index).level == "error"
        await pilot.click("#logs-header", offset=(1 + header.index("LEVEL"), 0))
        assert view.sort_reverse and view.line_at(view.vlist.first_index).level == "warning"


async def test_a_click_on_an_operator_row_selects_it_and_focuses_the_table():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        table = app.query_one(OpTable)
        assert app.focused is app.profiling_view
        await pilot.click("#ops-list", offset=(5, 2))
        assert isinstance(app.focused, OpList)
        assert app.query_one(OpList).cursor == 2 and table.selected() is table.rows[2]
