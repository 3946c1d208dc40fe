"""FleetStore (one store per source) and the fleet screen, from fixed events."""

from __future__ import annotations

import threading

import pytest

from aclmon import events as ev
from aclmon.errors import CommandRefused
from aclmon.store.fleet import EXITED, FleetStore
from aclmon.tui.fleet import FleetApp
from aclmon.tui.fleet_rows import sort_rows


def hello(pid: int, host: str, rank: int = -1) -> ev.Hello:
    return ev.Hello(1, 1_000, 1, "0.1.0", pid, host, ("train.py",), "sim", "Ascend910B1", 1,
                    "train", rank, 16 if rank >= 0 else -1, rank % 8, rank % 8, {})  # fmt: skip


def rank_events(pid: int, host: str, *, util: int, exception_at: int | None = None) -> list:
    events = [
        hello(pid, host),
        ev.DeviceSample(2, 2_000, pid % 8, util, 0, 0, 1 << 30, 64 << 30, "OK", None, None),
        ev.ModelLoaded(3, 3_000, 1, pid % 8, "resnet", 10),
        ev.ExecuteEnd(4, 4_000, 1, 0, 1_000, 0),
        ev.ExecuteEnd(5, 1_000_004_000, 1, 0, 1_000, 0),
    ]
    if exception_at is not None:
        events.append(
            ev.AclException(6, exception_at, pid % 8, 3, 7, 1, 507015, "conv2", "Conv2D", (), ())
        )
    return events


def test_sources_keep_their_own_state_and_the_earliest_exception_is_found():
    fleet = FleetStore()
    fleet.apply(("a", 1), rank_events(1, "a", util=10, exception_at=9_000))
    # The Hello of another source would restart a single store; here it is its own.
    fleet.apply(("b", 2), rank_events(2, "b", util=90, exception_at=5_000))
    fleet.apply(("a", 1), [ev.ExecuteEnd(7, 2_000_000_000, 1, 0, 1_000, 0)])
    first = fleet.earliest_exception()
    assert first is not None and first[0] == ("b", 2)
    data = fleet.to_json()
    by_pid = {s["pid"]: s for s in data["sources"]}
    assert by_pid[1]["executions"] == 3 and by_pid[2]["executions"] == 2
    assert by_pid[1]["models"][0]["name"] == "resnet"
    assert data["exceptions_total"] == 2
    assert data["earliest_exception"]["pid"] == 2
    fleet.mark(("a", 1), EXITED)
    assert fleet.to_json()["sources"][0]["state"] == EXITED


def test_rows_put_exceptions_first_and_filter_by_text():
    fleet = FleetStore()
    for pid in range(1, 6):
        exception_at = {3: 8_000, 5: 6_000}.get(pid)
        fleet.apply(("h", pid), rank_events(pid, "h", util=pid * 10, exception_at=exception_at))
    first = fleet.earliest_exception()
    assert first is not None
    rows = sort_rows(fleet.rows(), "util", first[0])
    assert [r.pid for r in rows] == [5, 3, 4, 2, 1]
    assert [r.pid for r in sort_rows(fleet.rows(), "util", first[0], "conv2d")] == [5, 3]


class FixedFeed:
    """A feed of fixed per-source batches."""

    description = "fixed"
    state = "connected"
    state_reason = ""
    readonly = True

    def __init__(self, batches):
        self.batches = list(batches)
        self.gone: set = set()
        self.caught_up = threading.Event()

    def start(self):
        pass

    def poll(self, max_events=100_000):
        out, self.batches = self.batches, []
        return out

    def send_command(self, key, cls, *fields, timeout=5.0):
        raise CommandRefused("read-only: commands are not sent")

    def decoder_counts(self, key=None):
        return (0, 0)

    def close(self):
        pass


async def test_128_ranks_fit_a_160x48_screen_and_enter_opens_one():
    batches = []
    for host in range(16):
        for local in range(8):
            pid = 1000 + host * 8 + local
            batches.append(
                (
                    (f"node{host:02}", pid),
                    rank_events(pid, f"node{host:02}", util=(pid * 7) % 100,
                                exception_at=5_000 if pid == 1042 else None),
                )
            )  # fmt: skip
    feed = FixedFeed(batches)
    app = FleetApp(feed, FleetStore(), interval=0.05)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert len(app.heat.lines) == 17  # one line per host and the legend
        assert app.heat.region.height <= 18
        assert app.vlist.region.height >= 20  # the list keeps room on screen
        assert len(app.rows) == 128
        assert app.rows[0].pid == 1042  # the rank with the exception comes first
        await pilot.press("slash", *"node03", "enter")
        await pilot.pause()
        assert {r.host for r in app.rows} == {"node03"}
        assert len(app.rows) == 8
        await pilot.press("down", "enter")
        await pilot.pause()
    assert app.return_value == ("node03", 1000 + 3 * 8 + 1)


def fleet_of(hosts: int, per_host: int, failing: set[int]) -> FixedFeed:
    batches = []
    for host in range(hosts):
        for local in range(per_host):
            pid = 1000 + host * per_host + local
            name = f"node{host:02}"
            events = rank_events(pid, name, util=(pid * 37) % 101,
                                 exception_at=4_000 + pid if pid in failing else None)  # fmt: skip
            events[0] = hello(pid, name, rank=pid - 1000)
            later = [ev.ExecuteEnd(10 + i, 1_000_004_000 + i * 10_000_000 * (1 + pid % 3), 1, 0,
                                   1_000, 0) for i in range(20)]  # fmt: skip
            batches.append(((name, pid), events))
            batches.append(((name, pid), later))
    return FixedFeed(batches)


@pytest.mark.parametrize("theme", ["aclmon-dark", "aclmon-light"])
@pytest.mark.parametrize(("size", "hosts"), [((160, 48), 16), ((80, 24), 2)])
def test_fleet_screen_snapshot(snap_compare, size, hosts, theme):
    feed = fleet_of(hosts, 8, failing={1009, 1003})
    app = FleetApp(feed, FleetStore(), interval=0.05, theme=theme)
    assert snap_compare(app, terminal_size=size)


def test_a_device_that_cannot_measure_does_not_pull_the_fleet_sparkline_down():
    from aclmon.store.fleet import mean_history

    # two devices: one measures 80 %, one cannot say (-1)
    assert mean_history([[80, 80, 80], [-1, -1, -1]]) == (80, 80, 80)
    # newest points line up; a point nobody measured stays "not supported"
    assert mean_history([[10, 20, -1], [30, -1]]) == (25, -1)
    assert mean_history([]) == ()


async def test_fleet_keys_s_sorts_slash_filters_escape_clears_and_q_or_ctrl_c_quit():
    feed = FixedFeed(
        [((f"node{h}", 100 + h), rank_events(100 + h, f"node{h}", util=10 * h)) for h in range(3)]
    )
    fleet = FleetStore()
    app = FleetApp(feed, fleet, interval=0.05)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert len(app.rows) == 3 and app.sort == "rank"
        await pilot.press("s")
        assert app.sort == "host"
        await pilot.press("s", "s", "s")
        assert app.sort == "util" and [r.pid for r in app.rows] == [102, 101, 100]
        await pilot.press("slash", *"node1", "enter")
        assert [r.pid for r in app.rows] == [101]
        await pilot.press("escape")
        assert len(app.rows) == 3 and app.filter_text == "" and app.is_running
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value is None and not app.is_running
    app = FleetApp(feed, fleet, interval=0.05)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value is None and not app.is_running


async def test_escape_in_one_ranks_screens_clears_a_filter_first_then_goes_back_to_the_fleet():
    from aclmon.tui.fleet_rank import rank_app

    feed = FixedFeed([])
    fleet = FleetStore()
    fleet.apply(("node0", 100), rank_events(100, "node0", util=5, exception_at=5_000))
    app = rank_app(feed, fleet, ("node0", 100), interval=0.05)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("2", "slash", *"conv", "enter")
        assert app.exceptions_view.filter_text == "conv"
        await pilot.press("escape")
        assert app.exceptions_view.filter_text == "" and app.is_running
        await pilot.press("escape")
        await pilot.pause()
    assert app.went_back
