"""The Profiling view's checklist keys that the other tests leave out: moving
between its columns, the operator table's keys around it (none sends, none
edits), and what is offered when aclmon may not change anything (a read-only
viewer) or may not start and stop (the job's acl.json owns profiling)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from tui_helpers import SIZE, FakeAgent, make_app, screen_text, static_text, wait_for
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.acl_constants import PROF_FLAGS
from aclmon.tui.palette import AclmonCommands
from aclmon.tui.views.optable import OpList


def palette_names(app) -> list[str]:
    return [command.name for command in AclmonCommands(app.screen)._commands()]


@contextlib.asynccontextmanager
async def profiling_view(**kwargs: Any) -> AsyncIterator[tuple[Any, Any, FakeAgent]]:
    """The scenario app in the Profiling view: (app, pilot, the agent that records commands)."""
    agent = FakeAgent()
    app = make_app(agent=agent, **kwargs)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        yield app, pilot, agent


def footer_keys(app) -> set[str]:
    return {key for key, b in app.screen.active_bindings.items() if b.binding.show}


async def test_arrows_and_h_l_move_the_cursor_through_the_columns_and_send_nothing():
    async with profiling_view() as (app, pilot, agent):
        view = app.profiling_view
        rows = view._rows_per_column()
        assert view._columns() > 1 and view.cursor == 0
        await pilot.press("right")
        assert view.cursor == rows
        await pilot.press("l")
        assert view.cursor == 2 * rows
        await pilot.press("l")  # no column further right: stays
        assert view.cursor == 2 * rows
        await pilot.press("left")
        assert view.cursor == rows
        await pilot.press("h")
        assert view.cursor == 0
        await pilot.press("up")  # from the first flag up: wraps to the last
        assert view.cursor == len(PROF_FLAGS) - 1
        await pilot.press("down")
        assert view.cursor == 0
        await pilot.pause()
        assert agent.commands == [] and view.pending is None
        assert "›[" in static_text(app, "#prof-flags")  # the cursor is drawn


async def test_in_the_operator_table_no_key_edits_or_sends_and_enter_applies_the_pending_set():
    async with profiling_view() as (app, pilot, agent):
        view = app.profiling_view
        before = view.configured.flags
        await pilot.press("space")  # ACL_API: one pending edit
        await pilot.press("tab")
        assert isinstance(app.focused, OpList)
        # Moving around the table, and a space (a page key elsewhere), change nothing.
        await pilot.press("j", "k", "f", "g", "G", "home", "end", "pagedown", "space", "s", "r")
        await pilot.pause()
        assert agent.commands == []
        assert view.pending is not None and view.pending.flags == before ^ PROF_FLAGS[0][1]
        assert "check" not in {
            b.binding.description.lower() for b in app.screen.active_bindings.values()
        }
        # a space typed right behind the Tab that left the checklist (before the
        # view has heard of its blur) does not check anything either
        await pilot.press("shift+tab")
        app.simulate_key("tab")
        app.simulate_key("space")
        await pilot.pause()
        assert isinstance(app.focused, OpList)
        assert view.pending is not None and view.pending.flags == before ^ PROF_FLAGS[0][1]
        await pilot.press("enter")  # applies the checklist's pending set, exactly
        await wait_for(pilot, lambda: len(agent.commands) == 1)
        await pilot.pause(0.05)
        assert len(agent.commands) == 1
        assert isinstance(agent.commands[0], ev.SetProfilingConfig)
        assert agent.commands[0].flags == before ^ PROF_FLAGS[0][1]


async def test_escape_in_the_operator_table_discards_the_pending_set():
    stopped = [e for e in build_events() if not isinstance(e, ev.ProfilingState)]
    async with profiling_view(events=stopped) as (app, pilot, agent):
        await pilot.press("down", "space")
        # p refuses while a change is pending: the line says so
        assert "p starts profiling to files once the change is applied" in static_text(
            app, "#prof-state"
        )
        await pilot.press("tab")
        assert app.profiling_view.pending is not None
        await pilot.press("escape")
        assert app.profiling_view.pending is None
        await pilot.press("enter")  # nothing pending: nothing to apply
        await pilot.pause()
        assert agent.commands == []


async def test_when_the_jobs_acl_json_owns_profiling_nothing_offers_start_or_stop():
    owned = ev.ProfilingState(0, T0 + 10**13, True, True, 1, 1, (), "/out", "acl.json", False,
                              0, 1, ())  # fmt: skip
    async with profiling_view(events=[*build_events(), owned]) as (app, pilot, agent):
        await pilot.pause()
        assert not footer_keys(app) & {"p", "t"}
        names = palette_names(app)
        assert "Profiling: start / stop" not in names
        state = static_text(app, "#prof-state")
        assert "owned by acl.json" in state and "aclmon does not offer start/stop" in state
        assert "t start" not in state and "p starts" not in state
        app.profiling_view.action_start_stop()  # the palette's way, should it be reached anyway
        await pilot.press("p", "t")
        await pilot.pause()
        assert agent.commands == []


async def test_a_readonly_viewer_offers_no_profiling_entry_and_no_cursor():
    async with profiling_view(readonly=True) as (app, pilot, agent):
        await pilot.pause()
        assert not [name for name in palette_names(app) if name.startswith("Profiling:")]
        flags = static_text(app, "#prof-flags")
        assert "›" not in flags and "Enter applies" not in flags
        state = static_text(app, "#prof-state")
        assert "read-only viewer: nothing here can be changed" in state
        assert " m " not in state and "t start" not in state
        await pilot.press("down", "space", "right", "space", "enter", "m", "v", "p", "t")
        await pilot.pause()
        assert agent.commands == [] and app.profiling_view.pending is None
        # the header says so at 80 columns too: before the figures, which are cut first
        await pilot.resize_terminal(80, 24)
        # redrawn for the new width once the resize is laid out (a pause or a tick later)
        await wait_for(pilot, lambda: "read-only" in static_text(app, "#header").splitlines()[0])
        header = static_text(app, "#header").splitlines()[0]
        assert "read-only" in header and header.index("read-only") < header.index("ev/s")


def _before_any_timing(*extra: ev.Event) -> list[ev.Event]:
    """The scenario up to its operator timings (none of them yet), then ``extra``."""
    events = [e for e in build_events() if not isinstance(e, ev.OpTiming)]
    seq = max(e.seq for e in events)
    return [*events, *(e._replace(seq=seq + n) for n, e in enumerate(extra, start=1))]


async def test_hints_fit_the_mode_read_only_and_profiling_to_files():
    from aclmon.acl_constants import ACL_AICORE_PIPE_UTILIZATION, ACL_PROF_TASK_TIME

    async with profiling_view(events=_before_any_timing(), readonly=True) as (app, _pilot, _agent):
        title = static_text(app, "#ops-title")
        assert "none yet" in title and "(t)" not in title  # no key a read-only viewer lacks
        assert " t " not in static_text(app, "#prof-state")
    to_files = ev.ProfilingState(0, T0 + 10**12, True, True, ACL_PROF_TASK_TIME,
                                 ACL_AICORE_PIPE_UTILIZATION, (0,), "/tmp/prof", "aclmon", False,
                                 ACL_PROF_TASK_TIME, ACL_AICORE_PIPE_UTILIZATION, (0,))  # fmt: skip
    async with profiling_view(events=_before_any_timing(to_files)) as (app, _pilot, _agent):
        state = static_text(app, "#prof-state")
        assert "● profiling to files" in state and "not while profiling to files" in state
        assert "t start" not in state
        title = static_text(app, "#ops-title")
        assert "profiling files" in title and "live operator timings" not in title


async def test_the_state_lines_stay_in_sight_while_the_checklist_scrolls_at_80x24():
    agent = FakeAgent()
    app = make_app(agent=agent)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3", *["down"] * 5)
        await pilot.pause()
        state = app.screen.query_one("#prof-state")
        # the state is not in the part that scrolls to the checklist's cursor
        assert state.parent is app.profiling_view
        assert state.region.y == 2 and state.region.height >= 5
        shown = screen_text(app).split("\n")
        assert shown[2].startswith(" PROFILING") and "LIVE OPERATOR TIMINGS" in shown[3]
        assert "›" in "".join(shown[4:16])  # and the cursor's row is on screen too
