"""The fleet screen's alert line: the job's first anomaly on the ranks' clocks corrected
to one, and ``a``, which opens that rank's screens on it."""

from __future__ import annotations

from rich.style import Style
from test_fleet_store_and_screen import FixedFeed, hello, rank_events

from aclmon import events as ev
from aclmon.store.fleet import EXCEPTION, Anomaly, FleetStore
from aclmon.tui import fmt
from aclmon.tui.anomaly import alert_text, reveal_at_start
from aclmon.tui.fleet import FleetApp, FleetCommands
from aclmon.tui.fleet_rank import rank_app
from aclmon.tui.screens import ExceptionDetail

MS = 1_000_000
T = 1_000_000_000


def ranks(exceptions: dict[int, int], offsets: dict[int, int]) -> FixedFeed:
    """Three ranks on three hosts; ``exceptions``: rank -> host time of its exception;
    ``offsets``: host -> its clock's measured offset to the server's."""
    batches = []
    for rank in range(3):
        pid, host = 100 + rank, f"node{rank}"
        events = rank_events(pid, host, util=40 + rank, exception_at=exceptions.get(rank))
        events[0] = hello(pid, host, rank=rank)
        events.insert(1, ev.ClockOffset(0, T, host, offsets.get(rank, 0), MS // 10))
        batches.append(((host, pid), [e._replace(seq=n) for n, e in enumerate(events, 1)]))
    return FixedFeed(batches)


async def test_the_alert_line_names_the_first_anomaly_and_a_opens_its_rank():
    # rank 0's exception reads earliest, but its host's clock is 30 ms behind the
    # server's: on the one clock rank 2 went bad first
    feed = ranks({0: T + 10 * MS, 2: T + 25 * MS}, {0: 30 * MS})
    fleet = FleetStore()
    app = FleetApp(feed, fleet, interval=0.05)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.alert.display
        alert = str(app.alert.render())
        assert "FIRST ANOMALY" in alert and "rank 2 (node2) dev 6 · exception" in alert
        assert "Conv2D conv2" in alert and "then rank 0 +15.0 ms" in alert
        assert "a: go to it" in alert
        assert app.rows[0].rank == 2  # the rank the alert names leads the list
        await pilot.press("a")
        await pilot.pause()
    assert app.return_value == ("node2", 102)
    assert app.jump is not None and app.jump.item.op_name == "conv2"


async def test_the_palette_goes_to_the_first_anomaly_too():
    app = FleetApp(ranks({0: T + 10 * MS, 2: T + 25 * MS}, {0: 30 * MS}), FleetStore(),
                   interval=0.05)  # fmt: skip
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        names = [c.name for c in FleetCommands(app.screen)._commands()]
        assert names[0] == "First anomaly: Rank 2 on node2, go to it"
        await pilot.press("ctrl+p", *"first anomaly")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value == ("node2", 102)
    assert app.jump is not None and app.jump.item.op_name == "conv2"


async def test_the_alert_line_fits_80_columns():
    app = FleetApp(ranks({1: T + 5 * MS}, {}), FleetStore(), interval=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        alert = str(app.alert.render())
        assert alert.startswith(" ▲ first  rank 1 dev 5 exception Conv2D conv2 ")
        assert alert.rstrip().endswith("a: go to it") and len(alert.rstrip()) <= 80


def test_a_long_operator_name_takes_the_room_the_rest_leaves():
    """A BERT-shaped name on the alert line: cut by path segments to the room the
    rest leaves, so the time and the key stay on the line at 80 columns; whole
    where it fits."""
    name = "bert/encoder/layer_11/attention/self/query/MatMul"
    first = Anomaly(("node3", 103), 3, EXCEPTION, 5, "MatMul", name, T + 5 * MS, 0)
    then = Anomaly(("node0", 100), 0, EXCEPTION, 1, "MatMul", name, T + 9 * MS, 0)
    for width in (80, 120, 160):
        alert = alert_text([first, then], width, Style(), Style(), "a").plain
        assert len(alert) <= width and ("…/MatMul" in alert or name in alert)
        assert fmt.utc_time(first.server_ns) in alert and alert.endswith("a: go to it")
        assert "MatMul …" not in alert  # the type is not said twice
    assert name in alert_text([first, then], 160, Style(), Style(), "a").plain


async def test_no_anomaly_no_alert_line_and_a_says_so():
    app = FleetApp(ranks({}, {}), FleetStore(), interval=0.05)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert not app.alert.display
        await pilot.press("a")
        await pilot.pause()
        assert app.is_running and app.jump is None


async def test_the_rank_opens_on_the_exceptions_detail_over_its_row():
    fleet = FleetStore()
    feed = ranks({1: T + 5 * MS}, {})
    for key, events in feed.poll():
        fleet.apply(key, events)
    anomaly = fleet.first_anomaly()
    assert anomaly is not None
    app = rank_app(feed, fleet, anomaly.key, interval=0.05)
    reveal_at_start(app, anomaly)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.current_view == "exceptions"
        view = app.exceptions_view
        assert view.exception_at(view.vlist.cursor) is anomaly.item
        assert isinstance(app.screen, ExceptionDetail)
        assert app.screen.exception is anomaly.item


async def test_an_overflow_file_first_opens_the_dumps_view_on_it():
    fleet = FleetStore()
    overflow = ev.DumpFileSeen(9, T + 2 * MS, "/dump/Opdebug.Node_OpDebug.9.2.1000002",
                               "overflow", 4096, {"kind": "overflow", "timestamp": (T + MS) // 1000,
                                                  "op_type": "Add", "op_name": "add1"})  # fmt: skip
    events = rank_events(100, "node0", util=10, exception_at=T + 9 * MS)
    fleet.apply(("node0", 100), [*events, overflow])
    anomaly = fleet.first_anomaly()
    assert anomaly is not None and anomaly.kind == "overflow" and anomaly.item is overflow
    app = rank_app(FixedFeed([]), fleet, anomaly.key, interval=0.05)
    reveal_at_start(app, anomaly)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.current_view == "dumps"
        assert app.dumps_view.selected_dump() is overflow


async def test_an_overflow_a_call_returned_first_opens_that_calls_detail():
    from aclmon.tui.screens import CallFailureDetail

    fleet = FleetStore()
    failed = ev.CallFailed(9, T + MS, "rt.synchronize_stream", 207003, "overflow", 1, 0x77)
    fleet.apply(("node0", 100), [*rank_events(100, "node0", util=10), failed])
    anomaly = fleet.first_anomaly()
    assert anomaly is not None and anomaly.kind == "overflow"
    app = rank_app(FixedFeed([]), fleet, anomaly.key, interval=0.05)
    reveal_at_start(app, anomaly)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, CallFailureDetail)
        assert app.screen.failure.event is failed
