"""The timeline keys' other names (``=``, ``>``, ``<``, ``t``) and Esc in the
go-to-time prompt, pressed as a user would; the first names are in test_replay_app."""

from __future__ import annotations

import asyncio

from recordings import session_events, write_recording

from aclmon import events as ev
from aclmon.sources.replay_inputs import find_inputs
from aclmon.tui.replay import SeekTimeScreen, build_app


async def settle(pilot, predicate) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + 10.0
    while not predicate():
        assert loop.time() < end, "condition not reached"
        await pilot.pause(0.02)


async def test_equals_greater_less_t_and_escape_in_the_time_prompt(tmp_path):
    events = session_events(1000)
    path = write_recording(tmp_path / "session.aclmrec", events)
    markers = [i for i, e in enumerate(events) if type(e) is ev.AclException]
    app = build_app(find_inputs(path), interval=30.0, clock=lambda: 1000.0)
    async with app.run_test(size=(150, 44)) as pilot:
        engine = app.engine
        await settle(pilot, lambda: engine.index.indexed and engine.ready)
        await pilot.press("equals_sign")
        assert app.speed == 2.0
        await pilot.press("greater_than_sign", "greater_than_sign")
        assert engine.position == markers[1] + 1 and app.current_view == "exceptions"
        await pilot.press("less_than_sign")
        assert engine.position == markers[0] + 1
        await pilot.press("t")
        assert isinstance(app.screen, SeekTimeScreen)
        await pilot.press("escape")  # cancelled: nowhere to go
        await pilot.pause()
        assert not isinstance(app.screen, SeekTimeScreen)
        assert engine.position == markers[0] + 1 and not app.seeking


async def test_in_the_dumps_view_t_goes_to_the_operator_on_an_overflow_else_to_a_time(tmp_path):
    path = write_recording(tmp_path / "session.aclmrec", session_events(1000))
    app = build_app(find_inputs(path), interval=30.0, clock=lambda: 1000.0)
    async with app.run_test(size=(150, 44)) as pilot:
        await settle(pilot, lambda: app.engine.index.indexed and app.engine.ready)
        await pilot.press("E")
        await settle(pilot, lambda: not app.seeking)
        await pilot.press("4")
        dumps = app.dumps_view
        assert dumps.selected_dump().kind == "op-dump"
        await pilot.press("t")  # nothing to go to from an operator dump: the replay's key
        assert isinstance(app.screen, SeekTimeScreen)
        await pilot.press("escape")
        rows = range(dumps.vlist.first_index, dumps.vlist.first_index + dumps.vlist.row_count)
        dumps.vlist.move_cursor_to(next(i for i in rows if dumps.dump_at(i).kind == "overflow"))
        await pilot.press("t")  # an overflow record: to its operator (none seen here: said)
        await pilot.pause()
        assert not isinstance(app.screen, SeekTimeScreen)
        assert any("no operator dump seen" in n.message for n in app._notifications)
