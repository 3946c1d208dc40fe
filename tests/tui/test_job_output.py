"""The Logs view's sources: the job's stdout/stderr, its CANN log, the agent's lines."""

from __future__ import annotations

from tui_helpers import SIZE, FakeAgent, make_app, static_text, wait_for
from tui_scenario import build_events

from aclmon import events as ev


def _with_output() -> list[ev.Event]:
    events = build_events()
    seq, ts, pid = max(e.seq for e in events), events[-1].ts_ns, events[0].pid
    return [
        *events,
        ev.LogLine(seq + 1, ts + 1, "info", "epoch 1 loss 0.25", "stdout", pid),
        ev.LogLine(seq + 2, ts + 2, "info", "Traceback (most recent call last):", "stderr", pid),
        ev.LogLine(
            seq + 3,
            ts + 3,
            "error",
            "aicore kernel execute failed",
            "RUNTIME",
            pid,
            "python",
            ts,
            "stream.cc:12",
            "/log/plog-1.log",
        ),
    ]


def _shown(app) -> list[str]:
    view = app.logs_view
    rows = range(view.vlist.first_index, view.vlist.first_index + view.vlist.row_count)
    return [view.line_at(i).text for i in rows]


async def test_o_cycles_the_sources_of_the_lines_shown():
    agent = FakeAgent()
    app = make_app(events=_with_output(), agent=agent, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        assert len(_shown(app)) == 4
        await pilot.press("o")
        assert app.logs_view.source == "job output"
        assert _shown(app) == ["epoch 1 loss 0.25", "Traceback (most recent call last):"]
        assert "job output (o)" in static_text(app, "#logs-status")
        assert not app.query_one("#logs-note").display
        await pilot.press("o")
        assert _shown(app) == ["aicore kernel execute failed"]
        await pilot.press("o")
        assert _shown(app) == ["device 2 health Alarm"]  # the agent's own line
        await pilot.press("o")
        assert app.logs_view.source == "all" and len(_shown(app)) == 4
        assert agent.commands == []


async def test_without_forwarded_output_the_view_says_why():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5", "o")
        note = app.query_one("#logs-note")
        assert note.display and _shown(app) == []
        text = static_text(app, "#logs-note")
        assert "No stdout/stderr from this job" in text and "--capture-output" in text
        await pilot.press("o")
        assert not note.display


async def test_palette_shows_the_jobs_output():
    app = make_app(events=_with_output())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p", *"job's stdout")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.current_view == "logs")
        assert app.logs_view.source == "job output" and len(_shown(app)) == 2
