"""What a refresh of a large fleet does again: only the rows of the sources that
changed (or whose liveness did), the heat map's lines only when they changed, and
a repaint from the timer no sooner than its own cost allows."""

from __future__ import annotations

from rich.style import Style
from test_fleet_store_and_screen import FixedFeed, rank_events

from aclmon import events as ev
from aclmon.store.fleet import STALE, STALE_AFTER_S, FleetStore
from aclmon.tui.fleet import PAINT_SPACING, FleetApp
from aclmon.tui.heatmap import HeatMap


def test_a_row_is_made_again_only_when_its_source_changed_or_went_stale():
    fleet = FleetStore()
    fleet.apply(("a", 1), rank_events(1, "a", util=10), now=100.0)
    fleet.apply(("b", 2), rank_events(2, "b", util=20), now=100.0)
    first = {row.key: row for row in fleet.rows()}
    again = {row.key: row for row in fleet.rows()}
    assert again[("a", 1)] is first[("a", 1)] and again[("b", 2)] is first[("b", 2)]

    fleet.apply(("a", 1), [ev.ExecuteEnd(7, 2_000_000_000, 1, 0, 1_000, 0)], now=100.0)
    changed = {row.key: row for row in fleet.rows()}
    assert changed[("a", 1)].executions == first[("a", 1)].executions + 1
    assert changed[("b", 2)] is first[("b", 2)]  # nothing new from b: the same row

    # Nothing heard from b for a while: its row says so with no event of its own.
    fleet.sources[("b", 2)].heard -= STALE_AFTER_S + 1
    stale = {row.key: row for row in fleet.rows()}
    assert stale[("b", 2)].state == STALE and stale[("b", 2)].executions_per_s == 0.0


def test_a_refused_source_leaves_no_row_behind():
    fleet = FleetStore()
    fleet.apply(("a", 1), rank_events(1, "a", util=10))
    assert [row.key for row in fleet.rows()] == [("a", 1)]
    forged = rank_events(1, "a", util=10)[0]._replace(host="elsewhere")
    fleet.apply(("a", 1), [forged])
    assert fleet.rows() == []


async def test_the_timer_repaints_no_sooner_than_the_last_repaint_cost_allows():
    now = [100.0]

    def clock() -> float:
        now[0] += 0.25  # every reading of the clock: a repaint costs 0.25 s
        return now[0]

    feed = FixedFeed([(("a", 1), rank_events(1, "a", util=10))])
    fleet = FleetStore()
    app = FleetApp(feed, fleet, interval=3600, clock=clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert [row.executions for row in app.rows] == [2]
        due = now[0] + PAINT_SPACING * 0.25  # after the first repaint
        feed.batches.append((("a", 1), [ev.ExecuteEnd(7, 2_000_000_000, 1, 0, 1_000, 0)]))
        app.tick()  # folded, but too soon to repaint
        assert fleet.rows()[0].executions == 3
        assert [row.executions for row in app.rows] == [2]
        now[0] = due
        app.tick()
        assert [row.executions for row in app.rows] == [3]
        await pilot.press("s")  # a key repaints at once, whatever the timer waits for
        assert app.sort == "host"


async def test_the_heat_map_redraws_only_lines_that_changed():
    feed = FixedFeed([((f"n{i}", i), rank_events(i, f"n{i}", util=10 * i)) for i in range(1, 4)])
    app = FleetApp(feed, FleetStore(), interval=3600)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        heat: HeatMap = app.heat
        lines = list(heat.lines)
        assert len(lines) == 4  # a line per host and the legend
        assert "".join(text for text, _ in lines[0]).startswith("n1  ")
        strips = [heat.render_line(y) for y in range(len(lines))]
        heat.show(list(lines))  # the same lines: nothing to draw
        assert all(heat.render_line(y) is strip for y, strip in enumerate(strips))
        changed = [(("n1  ", Style()), ("!!", Style(bold=True))), *lines[1:]]
        heat.show(changed)
        assert heat.render_line(0) is not strips[0] and heat.render_line(1) is strips[1]
