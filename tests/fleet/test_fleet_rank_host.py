"""The Host view inside one rank of the fleet: this machine's NPUs when the rank
runs here (one host feed for every such rank, one reader per rank kept across
visits), and a plain statement when it runs on another host."""

from __future__ import annotations

from host_scenario import LIVE, FixedHost, host_events
from test_fleet_drill_down import RANK, SIZE, ScenarioFeed, open_rank, scenario
from tui_helpers import static_text, wait_for

from aclmon.tui.fleet_rank import RankHosts, rank_app

#: generous: a deadline for a busy machine, never a speed asserted
WAIT = 30.0
SAMPLES = 5


class CountingHostFeed:
    """Stands in for a HostFeed: fixed readings, and what was asked of it."""

    def __init__(self) -> None:
        self.started = 0
        self.closed = 0
        self.readers: list[FixedHost] = []

    def start(self) -> None:
        self.started += 1

    def close(self) -> None:
        self.closed += 1

    def reader(self) -> FixedHost:
        reader = FixedHost(host_events(SAMPLES), LIVE)
        self.readers.append(reader)
        return reader


def hosts_at(here: str) -> tuple[RankHosts, CountingHostFeed, list[bool]]:
    """RankHosts for a viewer on ``here``, its feed, and the ``sim`` of each feed opened."""
    feed = CountingHostFeed()
    opened: list[bool] = []

    def open_feed(sim: bool) -> CountingHostFeed:
        opened.append(sim)
        return feed

    return RankHosts(here, open_feed), feed, opened  # type: ignore[arg-type]


async def show_host_view(app, pilot, awaited: str) -> None:
    """Press 6 and wait until the Host view's state line says ``awaited``."""
    await pilot.press("7")
    await wait_for(pilot, lambda: awaited in static_text(app, "#npus-status"), WAIT)


async def test_a_rank_on_this_host_shows_this_hosts_npus_and_keeps_its_reader():
    hosts, host_feed, opened = hosts_at("node-a.example.com")  # the rank's host, fully named
    feed = ScenarioFeed(scenario())
    _app, fleet = open_rank(feed)
    for visit in range(2):
        app = rank_app(feed, fleet, RANK, interval=0.05, hosts=hosts)
        async with app.run_test(size=SIZE) as pilot:
            await show_host_view(app, pilot, "8 chips")
            assert "910B3" in static_text(app, "#host-devices")
            assert "another host" not in static_text(app, "#host-note")
            npus = app.store.state.host_npus
            # the second visit reads on from where the first stopped: no reading twice
            assert len(npus.chips[(0, 0)].aicore_pct) == SAMPLES, visit
            await pilot.press("escape")
            await pilot.pause()
        assert app.went_back
    # the scenario's job runs on the simulator: the simulated host, opened once
    assert opened == [True] and host_feed.started == 1 and len(host_feed.readers) == 1
    hosts.close()
    assert host_feed.closed == 1


async def test_a_rank_on_another_host_says_its_host_readings_are_not_here():
    hosts, host_feed, opened = hosts_at("viewer-box")
    feed = ScenarioFeed(scenario())
    _app, fleet = open_rank(feed)
    app = rank_app(feed, fleet, RANK, interval=0.05, hosts=hosts)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")
        await wait_for(pilot, lambda: "another host" in static_text(app, "#host-note"), WAIT)
        note = " ".join(static_text(app, "#host-note").split())
        assert "host readings are not available for a rank on another host (node-a)" in note
        assert app.store.state.host_npus.snapshot is None
    assert opened == [] and host_feed.started == 0  # this machine is not read for it
