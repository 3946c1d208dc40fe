"""The fleet screen says what the fleet store knows: stale and exited ranks as
such, why it cannot connect; a quit in the middle of a long catch-up is taken
before the rest of the backlog; a signal leaves it as the quit key does."""

from __future__ import annotations

import fcntl
import io
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fleethelpers import UNREACHABLE, unreachable
from rich.console import Console
from test_fleet_store_and_screen import FixedFeed, rank_events
from textual import events

from aclmon import events as ev
from aclmon.fleet import subjects as sj
from aclmon.fleet.nats_source import NatsFeed
from aclmon.store.fleet import RELAY_SILENT_AFTER_S, STALE_AFTER_S, FleetStore
from aclmon.tui.fleet import FOLD_CHUNK, FleetApp


def screen(app: FleetApp) -> str:
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


async def until(pilot: Any, condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await pilot.pause(0.05)


def row_of(app: FleetApp, pid: int) -> str:
    return next(line for line in screen(app).splitlines() if f" {pid} " in line)


async def test_a_rank_that_went_silent_shows_stale_without_any_new_event() -> None:
    fleet = FleetStore()
    feed = FixedFeed([(("h", pid), rank_events(pid, "h", util=60)) for pid in (101, 102, 103)])
    feed.gone = {("h", 103)}
    app = FleetApp(feed, fleet, interval=0.05)  # type: ignore[arg-type]
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: len(app.rows) == 3)
        assert "(2 live, 1 exited)" in screen(app)
        assert "exited" in row_of(app, 103)
        version = fleet.version
        # nothing more from rank 2 for longer than the store waits: stale, with
        # no event to say so (the store's version does not move)
        fleet.sources[("h", 102)].heard -= STALE_AFTER_S + 1
        await until(pilot, lambda: "1 stale" in screen(app))
        assert fleet.version == version
        assert "stale" in row_of(app, 102) and "live" in row_of(app, 101)
        assert "~~" in screen(app)  # its heat-map cell


async def test_ranks_behind_a_silent_relay_turn_stale() -> None:
    fleet = FleetStore()
    feed = FixedFeed([(("h", 101), rank_events(101, "h", util=60))])
    app = FleetApp(feed, fleet, interval=0.05)  # type: ignore[arg-type]
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: len(app.rows) == 1)
        fleet.heard_relay("h")
        await pilot.pause(0.2)
        assert "stale" not in row_of(app, 101)
        fleet.relay_heard["h"] -= RELAY_SILENT_AFTER_S + 1
        await until(pilot, lambda: "stale" in row_of(app, 101))


@pytest.mark.slow
@pytest.mark.parametrize("case", UNREACHABLE)
async def test_the_fleet_screen_says_why_it_cannot_connect(case, nats, tmp_path: Path) -> None:
    url, credentials, expected = unreachable(case, nats.url, tmp_path)
    feed = NatsFeed(url, sj.Scope("unit"), credentials)
    app = FleetApp(feed, FleetStore(), interval=0.05)
    feed.start()
    try:
        async with app.run_test(size=(200, 30)) as pilot:
            await until(pilot, lambda: expected in screen(app).lower())
            assert "connecting" not in screen(app)
    finally:
        feed.close()


class Backlog(FixedFeed):
    """A feed with far more history waiting than the screen folds in one step
    (a ``--since all`` catch-up); counts what the screen takes, and after what."""

    def __init__(self, app_of: Any) -> None:
        super().__init__([])
        self.app_of = app_of
        self.asked: list[int] = []
        self.taken_after_quit = 0
        self.seq = 1
        self.state_event = threading.Event()

    def poll(self, max_events: int = 100_000) -> list[Any]:
        self.asked.append(max_events)
        if getattr(self.app_of(), "_exit", False):
            self.taken_after_quit += max_events
        events = []
        if self.seq == 1:
            events.append(rank_events(1, "h", util=50)[0])
        while len(events) < max_events:
            self.seq += 1
            events.append(ev.ExecuteEnd(self.seq, self.seq * 1000, 1, 0, 1_000, 0))
        return [(("h", 1), events)]


async def test_quit_during_a_long_catch_up_waits_for_one_chunk_not_the_backlog() -> None:
    holder: list[FleetApp] = []
    feed = Backlog(lambda: holder[0])
    app = FleetApp(feed, FleetStore(), interval=0.05)  # type: ignore[arg-type]
    holder.append(app)
    async with app.run_test(size=(120, 30)) as pilot:
        # it catches up continuously, a chunk at a time (not one chunk per tick)
        await until(pilot, lambda: len(feed.asked) >= 20)
        # typed as a terminal sends it (Pilot's press waits for an idle app, and
        # an app catching up is never idle)
        app.post_message(events.Key("q", "q"))
        await until(pilot, lambda: not app.is_running)
    # every step was bounded, and once the quit key was taken nothing more was read
    assert max(feed.asked) <= FOLD_CHUNK
    assert feed.taken_after_quit == 0
    assert app.return_value is None


def _drawn(master: int, proc: subprocess.Popen[bytes], until: Any, timeout: float) -> bytes:
    """What the viewer wrote to its terminal until ``until(output)`` or it exited."""
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not until(out):
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                out += os.read(master, 65536)
            except OSError:  # the viewer is gone and so is the pty's other side
                break
        elif proc.poll() is not None:
            break
    return out


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_leaves_the_fleet_screen_with_the_terminal_put_back(
    signum: int, runtime_dir: Path
) -> None:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    proc = subprocess.Popen(
        [sys.executable, "-m", "aclmon", "attach", "--all"],
        stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    try:
        shown = _drawn(master, proc, lambda out: b"waiting for ranks" in out, 60)
        assert b"waiting for ranks" in shown, shown[-400:]
        os.kill(proc.pid, signum)
        shown += _drawn(master, proc, lambda out: False, 10)
        assert proc.wait(10) == 128 + signum
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    # the alternate screen was left after it was entered: the shell is back
    assert shown.rindex(b"\x1b[?1049l") > shown.rindex(b"\x1b[?1049h")
