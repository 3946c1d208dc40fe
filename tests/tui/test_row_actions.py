"""Actions on rows: jump from an overflow to its operator and back, the first
overflow of a step, export a dump's tensors as .npy, copy its path or operator."""

from __future__ import annotations

from tui_helpers import SIZE, FakeAgent, make_app, static_text, wait_for, write_overflow_pair
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.dump.convert import convert_file
from aclmon.tui.screens import ExceptionDetail
from aclmon.tui.vlist import VirtualList

STEP = "/var/dump/20251202100000/0/resnet50/1/0"


def _cursor_dump(app) -> ev.DumpFileSeen | None:
    return app.dumps_view.selected_dump()


def _select(app, predicate) -> None:
    view = app.dumps_view
    vlist = view.query_one("#dumps-list", VirtualList)
    for index in range(vlist.first_index, vlist.first_index + vlist.row_count):
        dump = view.dump_at(index)
        if dump is not None and predicate(dump):
            vlist.move_cursor_to(index)
            return
    raise AssertionError("no such row")


def _later_overflows() -> list[ev.Event]:
    """Two more overflow records of the same step, later than the scenario's one."""
    events = build_events()
    first = next(e for e in events if type(e) is ev.DumpFileSeen and e.kind == "overflow")
    seq = max(e.seq for e in events)
    more = [
        first._replace(
            seq=seq + n,
            ts_ns=first.ts_ns + n * 10**9,
            path=f"{STEP}/Opdebug.Node_OpDebug.{3000 + n}.6.17646696{n}0000000",
        )
        for n in (1, 2)
    ]
    return [*events, *more]


async def test_t_jumps_from_an_overflow_to_its_operator_and_b_comes_back():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "o")  # overflow only: the operator's dump is hidden
        view = app.dumps_view
        _select(app, lambda d: d.kind == "overflow")
        overflow = _cursor_dump(app)
        await pilot.press("t")
        target = _cursor_dump(app)
        assert target is not None and target.kind == "op-dump"
        assert ".2001.6." in target.path  # the task and stream the record names
        assert not view.overflow_only  # shown again to show the operator
        assert "MatMulV2" in static_text(app, "#dump-detail")
        await pilot.press("b")
        assert _cursor_dump(app) is overflow and view.overflow_only
        await pilot.press("t", "backspace")  # Backspace is the same key
        assert _cursor_dump(app) is overflow
        await pilot.press("b")  # nothing left: said, nothing moves
        assert _cursor_dump(app) is overflow


async def test_t_on_an_operator_dump_says_it_needs_an_overflow_record():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        _select(app, lambda d: d.kind == "op-dump")
        before = _cursor_dump(app)
        await pilot.press("t", "F")
        assert _cursor_dump(app) is before
        assert any("overflow record" in n.message for n in app._notifications)


async def test_F_goes_to_the_first_overflow_of_the_step():
    app = make_app(events=_later_overflows())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        _select(app, lambda d: "Node_OpDebug.3002" in d.path)
        await pilot.press("F")
        first = _cursor_dump(app)
        assert first is not None and "Node_OpDebug.2002.6" in first.path
        await pilot.press("F")  # already the first: stays, and says so
        assert _cursor_dump(app) is first
        assert any("first overflow of its step (3" in n.message for n in app._notifications)
        await pilot.press("b")
        assert "Node_OpDebug.3002" in _cursor_dump(app).path


async def test_e_exports_the_tensors_as_convert_names_them_even_read_only(tmp_path):
    over_path, op_path = write_overflow_pair(tmp_path)
    events = [
        *build_events()[:5],
        ev.DumpFileSeen(900, T0 + 10**9, str(op_path), "op-dump", op_path.stat().st_size, {}),
        ev.DumpFileSeen(901, T0 + 10**9 + 1, str(over_path), "overflow", 1, {}),
    ]
    agent = FakeAgent()
    out = tmp_path / "out"
    app = make_app(events=events, agent=agent, readonly=True, export_dir=str(out))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        _select(app, lambda d: d.kind == "op-dump")
        await pilot.press("e")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: any("exported" in n.message for n in app._notifications))
    expected = tmp_path / "expected"
    expected.mkdir()
    convert_file(op_path, expected)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(p.name for p in expected.iterdir())
    assert f"{op_path.name}.output.0.npy" in names
    message = next(n.message for n in app._notifications if "exported" in n.message)
    assert str(out) in message and f"{len(names)} file(s)" in message
    assert agent.commands == []  # local: nothing was sent to the job


async def test_y_and_Y_copy_the_path_and_the_operator_name():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        _select(app, lambda d: d.kind == "op-dump" and ".2001.6." in d.path)
        await pilot.press("y")
        assert app.clipboard == _cursor_dump(app).path
        await pilot.press("Y")
        assert app.clipboard == "resnet50/fc/MatMulV2"
        assert any("copied operator name" in n.message for n in app._notifications)
        _select(app, lambda d: d.kind == "overflow")  # an overflow: the operator it names
        await pilot.press("y")
        assert "Opdebug" in app.clipboard
        await pilot.press("Y")
        assert app.clipboard == "resnet50/fc/MatMulV2"


async def _palette(pilot, text: str) -> None:
    await pilot.press("ctrl+p", *text)
    await pilot.pause(0.3)
    await pilot.press("enter")


async def test_palette_offers_the_row_actions_of_the_selected_dump():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        _select(app, lambda d: d.kind == "overflow")
        await pilot.press("2")  # from another view: the palette shows the Dumps view
        await _palette(pilot, "jump to the overflowing")
        await wait_for(pilot, lambda: app.current_view == "dumps")
        assert ".2001.6." in _cursor_dump(app).path
        await _palette(pilot, "dump back")
        await wait_for(pilot, lambda: _cursor_dump(app).kind == "overflow")
        await _palette(pilot, "dump copy its path")
        await wait_for(pilot, lambda: app.clipboard == _cursor_dump(app).path)


async def test_enter_on_a_dump_file_in_the_exception_detail_decodes_it_there(tmp_path):
    over_path, op_path = write_overflow_pair(tmp_path)
    events = build_events()
    exception = next(e for e in events if type(e) is ev.AclException and e.task_id == 2001)
    events = [
        *[e for e in events if type(e) is not ev.DumpFileSeen],
        ev.DumpFileSeen(
            900,
            T0 + 10**9,
            str(op_path),
            "op-dump",
            op_path.stat().st_size,
            {"task_id": 2001, "stream_id": 6},
        ),
        ev.DumpFileSeen(901, T0 + 10**9 + 1, str(over_path), "overflow", 1, {}),
    ]
    app = make_app(events=events, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        view = app.exceptions_view
        vlist = view.query_one("#exceptions-list", VirtualList)
        position = [e.seq for e in app.store.state.exceptions].index(exception.seq)
        vlist.move_cursor_to(vlist.first_index + position)
        await pilot.press("enter")
        assert isinstance(app.screen, ExceptionDetail)
        files = app.screen.query_one("#detail-files", VirtualList)
        assert app.focused is files and files.row_count == 1
        await pilot.press("enter")  # decodes the highlighted file; the detail stays
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "input 0" in static_text(app, "#detail-decoded"))
        decoded = static_text(app, "#detail-decoded")
        assert op_path.name in decoded and "NaN 1" in decoded and "+Inf 1" in decoded
        assert isinstance(app.screen, ExceptionDetail)
        assert app.current_view == "exceptions"  # decoded in place, not in the Dumps view
        await pilot.press("escape")
        assert not isinstance(app.screen, ExceptionDetail)


async def test_a_double_click_on_a_file_in_the_detail_decodes_it(tmp_path):
    _over_path, op_path = write_overflow_pair(tmp_path)
    events = [
        *[e for e in build_events() if type(e) is not ev.DumpFileSeen],
        ev.DumpFileSeen(900, T0 + 10**9, str(op_path), "op-dump", 1, {}),
    ]
    app = make_app(events=events)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        exceptions = app.store.state.exceptions
        vlist = app.exceptions_view.query_one("#exceptions-list", VirtualList)
        position = [e.task_id for e in exceptions].index(2001)
        vlist.move_cursor_to(vlist.first_index + position)
        await pilot.press("enter")
        await pilot.click("#detail-files", offset=(3, 0), times=2)
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "input 0" in static_text(app, "#detail-decoded"))


async def test_the_operator_jumped_to_is_scrolled_into_view():
    events = build_events()
    at = next(i for i, e in enumerate(events) if type(e) is ev.DumpFileSeen)
    fillers = [
        ev.DumpFileSeen(0, events[at].ts_ns - 1, f"{STEP}/Add.filler.{n}.9.1", "op-dump", 1, {})
        for n in range(80)
    ]
    events = [e._replace(seq=n) for n, e in enumerate([*events[:at], *fillers, *events[at:]], 1)]
    app = make_app(events=events)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "o")
        vlist = app.dumps_view.vlist
        await pilot.press("t")
        await pilot.pause()
        assert ".2001.6." in _cursor_dump(app).path
        row = vlist.cursor - vlist.first_index
        top = round(vlist.scroll_y)
        assert row >= 80 and top <= row < top + vlist.scrollable_content_region.height
