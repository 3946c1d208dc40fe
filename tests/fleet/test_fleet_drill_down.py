"""Inside one rank of the fleet (Enter on its row), every row action works as in
the single-agent app: decode, export, copy, the overflow jumps, the exception
detail and its files, the logs, profiling commands through the feed. The screen
says which rank it shows; the other ranks keep being folded meanwhile. And the
fleet screen itself: ? help, aclmon's own palette, a cursor that stays on its
rank when the rows re-sort."""

from __future__ import annotations

import threading

from test_fleet_store_and_screen import rank_events
from tui_helpers import FakeAgent, over_the_wire, static_text, wait_for, write_overflow_pair
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.bus.states import CONNECTED
from aclmon.errors import CommandRefused
from aclmon.store.fleet import FleetStore, SourceKey
from aclmon.tui.fleet import FleetApp, FleetCommands
from aclmon.tui.fleet_rank import rank_app
from aclmon.tui.screens import ExceptionDetail, HelpScreen
from aclmon.tui.vlist import VirtualList

SIZE = (140, 42)
RANK: SourceKey = ("node-a", 4242)  # the TUI scenario's host and pid
OTHER: SourceKey = ("node-b", 7)


class ScenarioFeed:
    """A feed of two ranks: the TUI scenario (rank 3) and a small one; commands
    to a rank go to a fake agent (the other rank has none)."""

    description = "scenario fleet"
    state = CONNECTED
    state_reason = ""

    def __init__(self, events: list[ev.Event], *, readonly: bool = False) -> None:
        self.readonly = readonly
        self.agent = FakeAgent()
        self.batches = [(RANK, over_the_wire(events)), (OTHER, rank_events(7, "node-b", util=5))]
        self.gone: set[SourceKey] = set()
        self.caught_up = threading.Event()
        self.caught_up.set()
        self.sent: list[tuple[SourceKey, ev.Event]] = []
        self._clock = ev.Clock()

    def start(self) -> None:
        pass

    def poll(self, max_events: int = 100_000) -> list[tuple[SourceKey, list[ev.Event]]]:
        out, self.batches = self.batches, []
        return out

    def send_command(self, key: SourceKey, cls: type, *fields, timeout: float = 5.0) -> ev.Reply:
        if self.readonly or key != RANK:
            raise CommandRefused("read-only: commands are not sent")
        command = self._clock.make(cls, len(self.sent) + 1, *fields)
        self.sent.append((key, command))
        return self.agent(command)

    def decoder_counts(self, key: SourceKey | None = None) -> tuple[int, int]:
        return (0, 0)

    def close(self) -> None:
        pass


def scenario(extra: list[ev.Event] = (), *, without_dumps: bool = False) -> list[ev.Event]:
    events = build_events()
    events[0] = events[0]._replace(rank=3, rank_size=4, job="train")
    if without_dumps:
        events = [e for e in events if type(e) is not ev.DumpFileSeen]
    return [*events, *extra]


def with_real_dumps(tmp_path) -> tuple[list[ev.Event], object, object]:
    """The scenario with a real operator dump (of the exception's task 2001) and
    the overflow record that points at it, instead of the scenario's names."""
    over_path, op_path = write_overflow_pair(tmp_path)
    summary = {"task_id": 2001, "stream_id": 6}
    files = [
        ev.DumpFileSeen(900, T0 + 10**9, str(op_path), "op-dump", op_path.stat().st_size, summary),
        ev.DumpFileSeen(901, T0 + 10**9 + 1, str(over_path), "overflow", 1, {}),
    ]
    return scenario(files, without_dumps=True), over_path, op_path


def open_rank(feed: ScenarioFeed):
    """The rank's screens, as Enter on its row opens them, with the fleet behind."""
    fleet = FleetStore()
    for key, events in feed.poll():
        fleet.apply(key, events)
    return rank_app(feed, fleet, RANK, interval=0.05), fleet


def select_dump(app, predicate) -> None:
    view = app.dumps_view
    for index in range(view.vlist.first_index, view.vlist.first_index + view.vlist.row_count):
        dump = view.dump_at(index)
        if dump is not None and predicate(dump):
            view.vlist.move_cursor_to(index)
            return
    raise AssertionError("no such dump row")


async def test_a_ranks_screen_says_which_rank_it_shows():
    app, _fleet = open_rank(ScenarioFeed(scenario()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        header = static_text(app, "#header")
        assert header.startswith(" aclmon  rank 3 ")
        assert app.source.description.startswith("rank 3 · pid 4242 on node-a")


async def test_enter_decodes_and_e_exports_a_dump_inside_a_rank(tmp_path):
    events, _over_path, op_path = with_real_dumps(tmp_path)
    out = tmp_path / "out"
    app, _fleet = open_rank(ScenarioFeed(events))
    app.export_dir = str(out)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        select_dump(app, lambda d: d.kind == "op-dump")
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "input 0" in static_text(app, "#dump-detail"))
        assert "NaN 1" in static_text(app, "#dump-detail") and app.is_running
        await pilot.press("e")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: any("exported" in n.message for n in app._notifications))
        assert f"{op_path.name}.output.0.npy" in {p.name for p in out.iterdir()}
        select_dump(app, lambda d: d.kind == "overflow")  # its record, then its operator
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "OVERFLOW RECORD 0" in static_text(app, "#dump-detail"))
        assert op_path.name in static_text(app, "#dump-detail") and app.is_running


async def test_copy_and_the_overflow_jumps_inside_a_rank():
    app, _fleet = open_rank(ScenarioFeed(scenario()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        select_dump(app, lambda d: d.kind == "overflow")
        await pilot.press("F")  # the first overflow of its step: this one
        await pilot.press("t")
        assert ".2001.6." in app.dumps_view.selected_dump().path
        await pilot.press("y")
        assert app.clipboard == app.dumps_view.selected_dump().path
        await pilot.press("Y")
        assert app.clipboard == "resnet50/fc/MatMulV2"
        await pilot.press("b")
        assert app.dumps_view.selected_dump().kind == "overflow" and app.is_running


async def test_an_exceptions_files_decode_in_its_detail_inside_a_rank(tmp_path):
    events, _over_path, op_path = with_real_dumps(tmp_path)
    app, _fleet = open_rank(ScenarioFeed(events))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        vlist = app.exceptions_view.query_one("#exceptions-list", VirtualList)
        position = [e.task_id for e in app.store.state.exceptions].index(2001)
        vlist.move_cursor_to(vlist.first_index + position)
        await pilot.press("enter")
        assert isinstance(app.screen, ExceptionDetail)
        await pilot.press("enter")  # the highlighted file: decoded in the detail
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "input 0" in static_text(app, "#detail-decoded"))
        assert op_path.name in static_text(app, "#detail-decoded")
        await pilot.press("l")  # on to the Logs view around it
        await pilot.pause()
        assert app.current_view == "logs" and app.is_running


async def test_profiling_commands_reach_the_ranks_agent_through_the_feed():
    feed = ScenarioFeed(scenario())
    app, _fleet = open_rank(feed)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "p")  # the scenario's live timings run: stop them
        await wait_for(pilot, lambda: feed.sent)
        key, command = feed.sent[0]
        assert key == RANK and isinstance(command, ev.StopProfiling)
        assert feed.agent.commands == [command]


async def test_the_other_ranks_are_folded_while_one_is_open_and_esc_goes_back():
    feed = ScenarioFeed(scenario())
    app, fleet = open_rank(feed)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = fleet.sources[OTHER].executions()
        feed.batches.append((OTHER, [ev.ExecuteEnd(9, 2_000_000_000, 1, 0, 1_000, 0)]))
        await wait_for(pilot, lambda: fleet.sources[OTHER].executions() == before + 1)
        await pilot.press("escape")
        await pilot.pause()
    assert app.went_back


# ------------------------------------------------------------ the fleet screen
def ranks_feed(utils: list[int]) -> ScenarioFeed:
    feed = ScenarioFeed([])
    feed.batches = [
        ((f"node{n}", 100 + n), rank_events(100 + n, f"node{n}", util=u))
        for n, u in enumerate(utils)
    ]
    return feed


async def test_question_mark_shows_the_fleet_keys_and_the_palette_is_aclmons():
    app = FleetApp(ranks_feed([10, 20]), FleetStore(), interval=0.05)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = static_text(app, "#help-body")
        for binding_id in ("fleet.anomaly", "fleet.sort", "fleet.filter", "fleet.help",
                           "fleet.quit", "fleet.back"):  # fmt: skip
            assert binding_id in shown
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        names = [c.name for c in FleetCommands(app.screen)._commands()]
        assert "PID 100 on node0: open its screens" in names and "Sort: by util" in names
        assert not any("screenshot" in n.lower() for n in names)
        await pilot.press("ctrl+p", *"sort by util")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.sort == "util")
        await pilot.press("ctrl+p", *"pid 100 on")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value == ("node0", 100)


async def test_the_cursor_stays_on_its_rank_when_the_rows_re_sort():
    feed = ranks_feed([10, 20, 30])
    app = FleetApp(feed, FleetStore(), interval=0.05, sort="util")
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert [r.pid for r in app.rows] == [102, 101, 100]
        app.vlist.move_cursor_to(2)  # the last row: pid 100
        assert app.selected_key() == ("node0", 100)
        sample = ev.DeviceSample(9, 3_000, 100 % 8, 90, 0, 0, 1 << 30, 64 << 30, "OK", None, None)
        feed.batches.append((("node0", 100), [sample]))  # now the busiest: first row
        await wait_for(pilot, lambda: app.rows[0].pid == 100)
        assert app.selected_key() == ("node0", 100) and app.vlist.cursor == 0
        feed.batches.append((("node1", 101), [sample._replace(device_id=101 % 8, cube_util=95)]))
        await wait_for(pilot, lambda: app.rows[0].pid == 101)
        assert app.selected_key() == ("node0", 100)
