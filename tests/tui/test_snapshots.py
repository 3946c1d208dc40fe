"""Snapshots of each view at 80x24 and 160x48, in the dark and the light theme,
from the fixed scenario.

Update after an intended change with ``pytest tests/tui --snapshot-update`` and
look at every SVG in tests/tui/__snapshots__ before committing it.
"""

from __future__ import annotations

import pytest
from tui_helpers import compare_app, make_app, over_the_wire, replay_to_the_end
from tui_scenario import bert_events, build_events

from aclmon.bus.recording import RecordingWriter
from aclmon.sources.replay_inputs import find_inputs
from aclmon.tui.replay import build_app

THEMES = ("aclmon-dark", "aclmon-light")
SIZES = {"80x24": (80, 24), "160x48": (160, 48)}
# dumps: highlight the overflow record so its explained status shows beside the list
VIEW_KEYS = {
    "devices": ["1"],
    "exceptions": ["2"],
    "profiling": ["3"],
    "dumps": ["4", "up"],
    "logs": ["5"],
    # the last ten seconds of the scenario: executions, syncs, the run's operators, exceptions
    "timeline": ["6"],
    "exception-detail": ["2", "up", "enter"],
    "help": ["question_mark"],
}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("view", list(VIEW_KEYS))
def test_view(snap_compare, view, theme, size):
    assert snap_compare(make_app(theme=theme), press=VIEW_KEYS[view], terminal_size=SIZES[size])


#: the lists with a BERT-shaped job's names (dumps: the first overflow of each step)
BERT_VIEW_KEYS = {
    "exceptions": ["2"],
    "dumps-per-step": ["4", "c"],
    "logs": ["5"],
    "profiling-table": ["3", "tab"],
}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("view", list(BERT_VIEW_KEYS))
def test_bert_names(snap_compare, view, size):
    """Operator names as long as BERT's: names that differ only in the layer stay
    apart at 80x24, each heading over its values."""
    events = bert_events()
    seq = max(e.seq for e in events)
    from tui_scenario import BERT, T0

    from aclmon import events as ev

    events += [
        ev.OpTiming(seq + n, T0 + 10**12 + n, 2, name, "MatMul", 0, 90 + n, 90 + n)
        for n, name in enumerate(BERT, start=1)
    ]
    assert snap_compare(make_app(events=events), press=BERT_VIEW_KEYS[view],
                        terminal_size=SIZES[size])  # fmt: skip


def test_profiling_pending_and_reply(snap_compare):
    async def edit_and_apply(pilot):
        await pilot.press("3", "down", "down", "down", "space", "enter")
        for _ in range(100):
            if pilot.app.store.state.last_reply is not None:
                break
            await pilot.pause(0.02)
        # The header follows the store on the refresh timer, its figures once a second:
        # refresh and draw it now, so the screenshot does not depend on whether a timer
        # tick fell after the reply.
        app = pilot.app
        app.tick()
        app.header.show(app.store, app.source, app.events_per_s, force=True)
        await pilot.pause()

    assert snap_compare(make_app(), run_before=edit_and_apply, terminal_size=(160, 48))


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("theme", THEMES)
def test_replay(snap_compare, tmp_path, theme, size):
    """The scenario as a recording, replayed to its end: the Exceptions view over
    the timeline (its status on one line above the bar, at 80 columns too)."""
    path = tmp_path / "scenario.aclmrec"
    with RecordingWriter(path, {"source": "test"}) as writer:
        for event in over_the_wire(build_events()):
            writer.write(event)
    # no timer in the way: the test drives the app, a still clock
    app = build_app(find_inputs(path), interval=30.0, clock=lambda: 0.0, theme=theme)

    async def to_the_end(pilot):
        await replay_to_the_end(app, pilot, "2")

    assert snap_compare(app, run_before=to_the_end, terminal_size=SIZES[size])


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("theme", THEMES)
def test_host_view(snap_compare, theme, size):
    """Eight chips over a minute and a half (sparklines), five process rows, two
    jobs with the agent, a chip without a power reading, one in Warning with ECC."""
    from host_scenario import host_app

    async def on_a_process(pilot):
        await pilot.press("7", "down", "down")
        await pilot.pause()

    app = host_app(theme=theme)
    assert snap_compare(app, run_before=on_a_process, terminal_size=SIZES[size])


def test_top(snap_compare):
    """``aclmon top``: the Host view alone, at 80 columns."""
    from host_scenario import FixedHost, host_events

    from aclmon.host.source import HostStatus
    from aclmon.store import Store
    from aclmon.tui.top import TopApp

    host = FixedHost(host_events(), HostStatus("ok", None, 0.0))
    app = TopApp(host, Store(), interval=30.0, theme="aclmon-light")  # type: ignore[arg-type]
    assert snap_compare(app, terminal_size=(80, 24))


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("theme", THEMES)
def test_compare(snap_compare, pair, theme, size):
    """A golden pair from the simulator, compared: the cursor on the first divergent
    operator, the metric columns that fit the width."""
    app, compare = compare_app(pair, theme=theme)

    async def compared(pilot):
        assert compare.wait(30)
        view = app.views["compare"]
        while view.selected_row() is None:
            app.tick()
            await pilot.pause(0.02)
        await pilot.pause()

    assert snap_compare(app, run_before=compared, terminal_size=SIZES[size])
