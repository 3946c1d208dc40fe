"""1 MB log lines: a row costs what a short line costs, the view keeps answering
keys during a flood of them, and the line's detail shows all of it, drawing
only what is on screen."""

from __future__ import annotations

import time

from rich.text import Text
from tui_helpers import FakeAgent, screen_text, wait_for

from aclmon import events as ev
from aclmon.sources.base import ListSource
from aclmon.tui.app import AclmonApp
from aclmon.tui.inert import LINE_LIMIT
from aclmon.tui.pager import TextPager, row_spans
from aclmon.tui.screens import LogLineDetail
from aclmon.tui.views import LogsView

T0 = 1_764_669_600_000_000_000
MB = 1_000_000


def log_line(seq: int, text: str, level: str = "info") -> ev.LogLine:
    return ev.LogLine(
        seq, T0 + seq * 1_000_000, level, text, "GE", 77, "train", 0, "ge.cc:1", "plog"
    )


def row_of(view: LogsView, line: ev.LogLine) -> Text:
    return view.render_row(line, 160)


async def test_a_row_of_a_1_mb_line_is_the_row_of_its_first_kilobyte() -> None:
    app = AclmonApp(ListSource([], agent=FakeAgent()), clock=lambda: 0.0, start_view="logs")
    async with app.run_test(size=(160, 48)):
        view = app.logs_view
        for unit in ("a", "中", "\x1b[2J", "é\t"):
            huge = (unit * MB)[:MB]
            row = row_of(view, log_line(1, huge))
            short = row_of(view, log_line(1, huge[: LINE_LIMIT + 1]))
            # the work per row is bounded by LINE_LIMIT, not by the line's length
            assert row.plain == short.plain
            assert len(row.plain) < 8 * LINE_LIMIT
        several = "first line\n" + "x" * MB + "\nlast"
        row = row_of(view, log_line(2, several))
        assert "first line" in row.plain and "(+2 lines)" in row.plain and "x" not in row.plain


class Flood(ListSource):
    """A job writing 1 MB log lines as fast as the viewer reads them."""

    def __init__(self) -> None:
        super().__init__([], description="flood", agent=FakeAgent())
        self.seq = 0
        self.line = "y" * MB
        self.polls = 0

    @property
    def state(self) -> str:
        return "connected"

    def poll(self, max_events: int) -> list[ev.Event]:
        self.polls += 1
        out = []
        for _ in range(min(max_events, 16)):
            self.seq += 1
            out.append(log_line(self.seq, self.line))
        return out


async def test_q_quits_the_logs_view_during_a_flood_of_1_mb_lines() -> None:
    source = Flood()
    app = AclmonApp(source, interval=0.05, clock=time.monotonic, start_view="logs")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: source.polls >= 10, timeout=60)
        # the store keeps the newest lines within its byte cap: they are shown
        assert "yyyy" in screen_text(app)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=60)
    assert app.return_code == 0


def test_a_1_mb_line_is_cut_into_rows_of_the_width_and_nothing_is_lost() -> None:
    text = "head\n" + "z" * MB + "\n\n中" * 3
    spans = row_spans(text, 100)
    assert "".join(text[a:b] for a, b in spans) == text.replace("\n", "")
    assert max(b - a for a, b in spans) == 100
    assert len(spans) == 1 + MB // 100 + 6
    assert all(b - a <= 50 for a, b in spans[-3:])  # wide characters: half as many


async def test_enter_on_a_1_mb_line_shows_all_of_it_drawing_only_the_rows_on_screen() -> None:
    huge = "start " + "w" * MB + " the end"
    source = ListSource([log_line(1, huge, "error")], agent=FakeAgent())
    app = AclmonApp(source, clock=lambda: 0.0, start_view="logs")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: bool(app.store.state.logs))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LogLineDetail))
        pager = app.screen.query_one(TextPager)
        await wait_for(pilot, lambda: pager.row_count > 0)
        drawn: list[int] = []
        draw = pager._render_text_row
        pager._renderer = lambda index, width: (drawn.append(index), draw(index, width))[1]
        pager.clear_cache()
        await pilot.pause(0.1)
        assert pager.row_count >= MB // 120  # the whole line is there
        assert 0 < len(drawn) <= 40  # but only what the screen shows was drawn
        assert "start www" in screen_text(app)
        await pilot.press("end")  # the box scrolls to the line's end
        await pilot.pause(0.2)
        await wait_for(pilot, lambda: "the end" in screen_text(app))
        # scrolling there drew the frames on the way, never the whole line
        # (how many frames the animated scroll paints depends on the machine's load)
        assert len(drawn) < pager.row_count // 2
