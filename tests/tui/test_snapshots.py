"""Snapshots of each view in the dark and the light theme, from the fixed scenario.

Update after an intended change with ``pytest tests/tui --snapshot-update`` and
look at every SVG in tests/tui/__snapshots__ before committing it.
"""

from __future__ import annotations

import pytest
from tui_helpers import SIZE, make_app

THEMES = ("aclmon-dark", "aclmon-light")
# dumps: highlight the overflow record so its explained status shows beside the list
VIEW_KEYS = {"devices": ["1"], "exceptions": ["2"], "profiling": ["3"], "dumps": ["4", "up"]}


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("view", list(VIEW_KEYS))
def test_view(snap_compare, view, theme):
    assert snap_compare(make_app(theme=theme), press=VIEW_KEYS[view], terminal_size=SIZE)


@pytest.mark.parametrize("theme", THEMES)
def test_exception_detail(snap_compare, theme):
    assert snap_compare(make_app(theme=theme), press=["2", "up", "enter"], terminal_size=SIZE)


def test_profiling_reply(snap_compare):
    async def toggle(pilot):
        await pilot.press("3", "d")
        for _ in range(100):
            if pilot.app.store.state.last_reply is not None:
                break
            await pilot.pause(0.02)
        # The header follows the store on the refresh timer: refresh once now, so the
        # screenshot does not depend on whether a timer tick fell after the reply.
        pilot.app.tick()
        await pilot.pause()

    assert snap_compare(make_app(), run_before=toggle, terminal_size=SIZE)


def test_help(snap_compare):
    assert snap_compare(make_app(), press=["question_mark"], terminal_size=SIZE)
