"""The Logs view in the order of the time each line states, and readable at 80 columns."""

from __future__ import annotations

from tui_helpers import make_app, screen_text, static_text
from tui_scenario import T0

from aclmon import events as ev
from aclmon.tui.pager import TextPager
from aclmon.tui.screens import LogLineDetail
from aclmon.tui.views.logs import line_time

PID = 4242
MS = 1_000_000


def stdout(seq: int, at: int, text: str) -> ev.LogLine:
    """A line of the job's stdout: stamped when the agent read it (it states no time)."""
    return ev.LogLine(seq, at, "info", text, "stdout", PID)


def plog(seq: int, read: int, logged: int, text: str) -> ev.LogLine:
    """A CANN log line: read at the tail's next poll, logged earlier."""
    return ev.LogLine(seq, read, "error", text, "RUNTIME", PID, "python", logged, "stream.cc:9",
                      "/plog/plog-4242_1.log")  # fmt: skip


async def test_stdout_lines_that_arrive_before_earlier_plog_lines_are_shown_in_time_order():
    t = T0 + 200 * 10**9
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        view = app.logs_view
        assert view.vlist.follow
        # the job prints at once; its plog lines of the same moment come a poll later
        app.store.apply_many([stdout(9001, t + 5 * MS, "exception callback: task 7"),
                              stdout(9002, t + 9 * MS, "device 0 resnet run failed")])  # fmt: skip
        app.refresh_view(force=True)
        await pilot.pause()
        app.store.apply_many(
            [
                plog(9003, t + 60 * MS, t + 1 * MS, "ProcessCoreErrorInfo: task 7 failed"),
                plog(9004, t + 60 * MS, t + 7 * MS, "aclrtSynchronizeStream failed"),
            ]
        )
        app.refresh_view(force=True)
        await pilot.pause()
        rows = [view.line_at(view.vlist.first_index + n) for n in range(view.vlist.row_count)]
        times = [line_time(line) for line in rows]
        assert times == sorted(times)
        assert [line.seq for line in rows[-4:]] == [9003, 9001, 9004, 9002]
        # still following: the cursor on the newest line by time, the screen in that order
        assert view.vlist.follow and view.vlist.cursor == view.vlist.first_index + len(rows) - 1
        shown = screen_text(app)
        order = [shown.index(text) for text in ("ProcessCoreError", "exception callback",
                                                "aclrtSynchronize", "device 0 resnet")]  # fmt: skip
        assert order == sorted(order)
        assert "following" in static_text(app, "#logs-status")
        # one process: no PID column; short level names, the message has the room
        header = static_text(app, "#logs-header")
        assert "PID" not in header and "LEVEL" in header
        assert "ERROR  RUNTIME  ProcessCoreErrorInfo: task 7 failed  stream.cc:9" in shown


async def test_enter_opens_any_line_whole():
    long = "first line of a long entry\n" + "\n".join(f"detail {n}" for n in range(12))
    events = [ev.LogLine(1, T0, "info", long, "GE", PID, "python", T0, "graph.cc:3", "/p.log")]
    app = make_app(events=events)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        assert "(+12 lines)" in screen_text(app)
        await pilot.press("enter")
        assert isinstance(app.screen, LogLineDetail)
        body = static_text(app, "#detail-body")
        assert "detail 11" in app.screen.query_one(TextPager).text  # every line of its text
        assert "graph.cc:3" in body and "/p.log" in body
        assert "belongs to" not in body  # an INFO line of no exception: nothing to go on to
        await pilot.press("escape")
        assert not isinstance(app.screen, LogLineDetail)
