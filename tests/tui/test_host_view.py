"""The Host view (and ``aclmon top``): Enter on a process, T/K with a confirmation,
the refusals (read-only, another user's process, readings that are not live),
and the state line of a back end that stalls."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest
from host_scenario import (
    HOST,
    JOB_PID,
    OTHER_AGENT_PID,
    PROCESSES,
    FixedHost,
    host_app,
    host_events,
    samples_with,
    snapshot_at,
)
from tui_helpers import make_app, screen_text, wait_for

from aclmon.host.source import HostStatus
from aclmon.store import Store
from aclmon.tui.app import BEAT_S
from aclmon.tui.top import BACK_BINDING, JobApp, TopApp, run_screens
from aclmon.tui.views.host import SignalConfirm

SIZE = (140, 42)


@pytest.fixture
def child():
    """A process of ours to signal (killed at the end whatever happened)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    process.kill()
    process.wait()


def another_users_process() -> tuple[int, subprocess.Popen[bytes] | None]:
    """A live process of another user: one started as ``nobody`` when we are root,
    else any process that is not ours."""
    if os.getuid() == 0:
        child = subprocess.Popen(["sleep", "60"], user=65534)
        return child.pid, child
    for process in psutil.process_iter(["uids"]):
        if process.info["uids"] and process.info["uids"].real != os.getuid():
            return process.pid, None
    raise AssertionError("no process of another user on this machine")


async def show_host(pilot, pid: int | None = None) -> None:
    """The Host view, the cursor on ``pid``'s first row."""
    await pilot.press("7")
    await pilot.pause()
    view = pilot.app.host_view
    if pid is not None:
        index = next(i for i, row in enumerate(view._rows) if row.reading.pid == pid)
        view.vlist.move_cursor_to(index)
        await pilot.pause()


async def test_enter_on_another_jobs_process_asks_for_its_screens():
    app = host_app(open_jobs=True)
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot, OTHER_AGENT_PID)
        assert "◆" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
    assert app.open_pid == OTHER_AGENT_PID


async def test_enter_on_this_jobs_process_shows_its_devices_and_without_a_loop_says_attach():
    app = host_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")  # the Host view's number key
        assert app.current_view == "npus"
        await show_host(pilot, JOB_PID)
        await pilot.press("enter")
        assert app.current_view == "devices"
        await show_host(pilot, OTHER_AGENT_PID)
        await pilot.press("enter")
        await pilot.pause()
        assert app.is_running and app.open_pid is None
        assert "aclmon attach" in app.host_view.note


async def test_enter_on_a_process_without_an_agent_opens_it_to_be_watched():
    app = host_app(open_jobs=True)
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot, 6161)
        await pilot.press("enter")
        await pilot.pause()
        assert app.open_pid == 6161  # run_screens watches it (aclmon watch)
    alone = host_app(open_jobs=False)
    async with alone.run_test(size=SIZE) as pilot:
        await show_host(pilot, 6161)
        await pilot.press("enter")
        await pilot.pause()
        assert alone.is_running and "aclmon watch" in alone.host_view.note


async def test_T_asks_first_and_y_terminates_the_process(child):
    app = host_app(samples_with(((0, child.pid, "me", "python -c sleep", 100),)))
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot, child.pid)
        await pilot.press("T")
        await pilot.pause()
        assert isinstance(app.screen, SignalConfirm)
        assert f"SIGTERM to pid {child.pid}" in screen_text(app)
        assert child.poll() is None  # nothing sent before the answer
        await pilot.press("y")
        assert child.wait(10) == -signal.SIGTERM
        await pilot.pause()
        assert f"SIGTERM sent to pid {child.pid}" in app.host_view.note


async def test_K_with_n_or_escape_sends_nothing_and_y_kills(child):
    app = host_app(samples_with(((1, child.pid, "me", "python -c sleep", 100),)))
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot, child.pid)
        for answer in ("n", "escape"):
            await pilot.press("K")
            await pilot.pause()
            assert isinstance(app.screen, SignalConfirm)
            await pilot.press(answer)
            await pilot.pause()
            assert not isinstance(app.screen, SignalConfirm)
            assert child.poll() is None and app.host_view.note == "SIGKILL not sent"
        await pilot.press("K")
        await pilot.pause()
        await pilot.press("y")
        assert child.wait(10) == -signal.SIGKILL


async def test_readonly_refuses_T_and_K_without_asking(child):
    app = host_app(samples_with(((0, child.pid, "me", "sleep", 100),)), readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot, child.pid)
        for key in ("T", "K"):
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, SignalConfirm)
            assert app.host_view.note.startswith("read-only")
    assert child.poll() is None


async def test_another_users_process_is_refused_without_asking():
    pid, child = another_users_process()
    try:
        app = host_app(samples_with(((0, pid, "nobody", "sleep", 100),)))
        async with app.run_test(size=SIZE) as pilot:
            await show_host(pilot, pid)
            await pilot.press("T")
            await pilot.pause()
            assert not isinstance(app.screen, SignalConfirm)
            assert "aclmon signals only your own processes" in app.host_view.note
        assert psutil.pid_exists(pid)
    finally:
        if child is not None:
            child.kill()
            child.wait()


async def test_recorded_readings_are_never_signalled(child):
    app = host_app(samples_with(((0, child.pid, "me", "sleep", 100),)), status=None)
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot, child.pid)
        await pilot.press("K")
        await pilot.pause()
        assert not isinstance(app.screen, SignalConfirm)
        assert "not live" in app.host_view.note
        assert "read 10:00:01 UTC" in screen_text(app)  # a recording's time, not "now"
    assert child.poll() is None


async def test_a_stalled_back_end_is_said_while_no_sample_comes():
    now = [0.0]
    app = host_app(clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot)
        assert "ok" in screen_text(app)
        host = app.source.host  # type: ignore[attr-defined]
        host.state = HostStatus("stalled", "the refresh has not returned for 7 s", 8.0)
        app.tick()  # no beat yet: the line waits
        await pilot.pause()
        assert "stalled" not in screen_text(app)
        now[0] += BEAT_S  # the next beat follows the source's state
        app.tick()
        await wait_for(pilot, lambda: "stalled" in screen_text(app))
        text = screen_text(app)
        assert "the refresh has not returned for 7 s (showing data from 8 s ago)" in text
        assert "910B3" in text  # the last readings stay on screen


async def test_without_readings_the_view_says_where_they_come_from():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot)
        assert "no readings of this machine's NPUs here" in screen_text(app)


async def test_unknown_values_show_as_a_dash_never_zero():
    app = host_app()
    async with app.run_test(size=SIZE) as pilot:
        await show_host(pilot)
        row = next(line for line in screen_text(app).splitlines() if line.startswith("     6 "))
        assert " – " in row and "0.0W" not in row  # chip 6 reports no power


async def test_the_chips_rows_fit_again_after_the_terminal_narrows():
    app = host_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await show_host(pilot)
        await pilot.resize_terminal(80, 24)
        scroll = app.query_one("#host-devices-scroll")
        # rows still laid out for 160 columns would leave a horizontal scroll bar
        await wait_for(pilot, lambda: scroll.virtual_size.width <= scroll.size.width, 30.0)
        assert not scroll.show_horizontal_scrollbar
        assert "  0 910B3" in screen_text(app) and "ECC" not in screen_text(app)


# ---------------------------------------------------------------- aclmon top
def top_app(**kwargs) -> TopApp:
    host = FixedHost(host_events(), HostStatus("ok", None, 0.0))
    return TopApp(host, Store(), interval=0.05, **kwargs)  # type: ignore[arg-type]


async def test_top_shows_the_host_and_enter_on_an_agents_process_asks_for_its_job():
    app = top_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert (
            "aclmon top" in text and "8 chips" in text and "infer.py --batch 64  (python)" in text
        )
        await pilot.press("down", "down", "enter")
        await pilot.pause()
    assert app.open_pid == OTHER_AGENT_PID


async def test_top_says_a_stalled_back_end_while_no_sample_comes():
    app = top_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert "stalled" not in screen_text(app)
        app.host.state = HostStatus("stalled", "the refresh has not returned for 7 s", 8.0)  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: "stalled" in screen_text(app))  # on its next tick
        assert "8 chips" in screen_text(app)  # the last readings stay on screen


async def test_top_help_lists_its_keys_and_q_or_ctrl_c_quit():
    for quit_key in ("q", "ctrl+c"):
        app = top_app()
        async with app.run_test(size=(120, 40)) as pilot:
            for help_key in ("question_mark", "f1"):
                await pilot.press(help_key)
                await pilot.pause()
                assert "host.terminate" in screen_text(app)
                await pilot.press("escape")
                await pilot.pause()
            await pilot.press(quit_key)
            await pilot.pause()
        assert app.return_code == 0 and app.open_pid is None


async def test_escape_in_a_jobs_screens_goes_back_after_clearing_a_filter():
    app = host_app()
    job = JobApp(app.source, clock=lambda: 0.0)
    async with job.run_test(size=SIZE) as pilot:
        await pilot.press("2", "slash", *"conv", "enter")
        assert job.exceptions_view.filter_text == "conv"
        await pilot.press("escape")
        assert job.is_running and not job.went_back
        await pilot.press("escape")
        await pilot.pause()
    assert job.went_back
    assert BACK_BINDING.key == "escape"


class Screen:
    """A stand-in app for run_screens: what the user does in it is given."""

    def __init__(self, name: str, open_pid: int | None = None, went_back: bool = False) -> None:
        self.name = name
        self.open_pid = open_pid
        self.went_back = went_back


def test_run_screens_goes_from_home_to_jobs_and_back_until_quit():
    script = iter(
        [
            Screen("home", open_pid=11),  # Enter on job 11
            Screen("job 11", open_pid=12),  # its Host view: Enter on job 12
            Screen("job 12", went_back=True),  # Esc
            Screen("home", open_pid=99),  # Enter on a job whose agent has gone
            Screen("home"),  # q
        ]
    )
    shown: list[str] = []
    notes: list[str] = []

    def home(note: str) -> Screen:
        notes.append(note)
        return next(script)

    def job(pid: int) -> Screen:
        if pid == 99:
            raise LookupError("no agent runs in pid 99")
        return next(script)

    def run(app: Screen) -> int:
        shown.append(app.name)
        return 0

    assert run_screens(home, job, run) == 0  # type: ignore[arg-type]
    assert shown == ["home", "job 11", "job 12", "home", "home"]
    assert notes == ["", "", "pid 99: no agent runs in pid 99"]


async def test_a_replay_shows_the_recorded_host_and_never_signals(tmp_path):
    from tui_helpers import over_the_wire
    from tui_scenario import build_events

    from aclmon.bus.recording import RecordingWriter
    from aclmon.sources.replay_inputs import find_inputs
    from aclmon.tui.replay import build_app

    path = tmp_path / "with-host.aclmrec"
    with RecordingWriter(path, {"source": "test"}) as writer:
        events = sorted(build_events() + host_events(), key=lambda e: e.ts_ns)
        writer.write_many(over_the_wire(events))
    app = build_app(find_inputs(path), interval=30.0, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.index.indexed and app.engine.ready, 20)
        await pilot.press("E")
        await wait_for(pilot, lambda: app.engine.position == len(app.engine), 20)
        app.tick()
        await show_host(pilot, OTHER_AGENT_PID)
        text = screen_text(app)
        assert (
            "8 chips" in text
            and "infer.py --batch 64  (python)" in text
            and "read 10:01:29 UTC" in text
        )
        await pilot.press("T")
        await pilot.pause()
        assert not isinstance(app.screen, SignalConfirm)
        assert "no signal is sent" in app.host_view.note


async def test_top_readonly_refuses_signals_too():
    app = top_app(readonly=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await pilot.pause()
        assert not isinstance(app.screen, SignalConfirm)
        assert app.view.note.startswith("read-only")


async def test_all_seven_tabs_fit_80_columns_with_their_counts():
    app = host_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        tabs = str(app.tabs.render())
        # the shown tab whole, the others by their first letters, every count kept
        for number, title in enumerate(
            ("Devices", "Exce", "Prof", "Dump", "Logs", "Time", "Host"), 1
        ):
            assert f" {number} {title}" in tabs
        assert "Exce 8" in tabs and "Host 8" in tabs and "…" not in tabs
        await pilot.press("7")
        await pilot.pause()
        tabs = str(app.tabs.render())
        assert " 7 Host 8" in tabs and " 1 Devi 4" in tabs and "…" not in tabs


async def test_a_sample_of_the_job_redraws_the_status_and_a_live_reading_waits_for_the_beat():
    """The job's section moves twice a second with its own samples; the Host view
    shows of it only where the job runs (its status line). A new live reading of
    the host (once a second, on the host source's own clock) is drawn on the app's
    beat, in the frame of the header's figures, not in a frame of its own."""
    from aclmon.store.sections import HOST, JOB
    from aclmon.tui.views.host import HostView

    now = [0.0]
    app = host_app(clock=lambda: now[0])
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("7")
        await wait_for(pilot, lambda: "chips" in screen_text(app))
        app.tick()  # the first tick has beaten: the next beat is a second from now
        view = app.query_one(HostView)
        drawn: list[str] = []
        view.draw_devices = lambda: drawn.append("chips")  # type: ignore[method-assign]
        view.draw_status = lambda: drawn.append("status")  # type: ignore[method-assign]
        view.redraw_sections(frozenset({JOB}))
        assert drawn == ["status"]
        drawn.clear()
        now[0] = 0.5
        view.redraw_sections(frozenset({HOST, JOB}))  # a reading between two beats
        app.tick()
        assert drawn == []
        now[0] = 1.0
        app.tick()  # the beat
        assert "chips" in drawn and "status" in drawn
        drawn.clear()
        now[0] = 1.25
        app.tick()  # nothing new since: nothing drawn
        assert "chips" not in drawn


async def test_a_recorded_reading_is_drawn_at_once() -> None:
    """Recorded readings move with the user's seeks: they do not wait for a beat."""
    from aclmon.store.sections import HOST
    from aclmon.tui.views.host import HostView

    app = host_app(status=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("7")
        await wait_for(pilot, lambda: "chips" in screen_text(app))
        app.tick()
        view = app.query_one(HostView)
        drawn: list[str] = []
        view.draw_devices = lambda: drawn.append("chips")  # type: ignore[method-assign]
        view.redraw_sections(frozenset({HOST}))
        assert drawn == ["chips"]


async def test_a_new_reading_paints_again_only_the_process_rows_that_changed() -> None:
    """Rows are cached by what they show: of a new reading of the host, only the
    lines whose process changed are painted again (the cursor's row, kept where
    it is, among the others paints nothing)."""
    from aclmon import events as ev
    from aclmon.tui.views.host import HostView

    app = host_app(status=None)  # recorded readings: drawn at once
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("7")
        await wait_for(pilot, lambda: "vllm" in screen_text(app))
        view = app.query_one(HostView)
        vlist = view.vlist
        assert vlist.cursor >= 0
        view.redraw()  # at the width the list settled at
        await pilot.pause()
        painted: list[int] = []
        render_line = vlist.render_line

        def spy(y: int):
            painted.append(y)
            return render_line(y)

        vlist.render_line = spy  # type: ignore[method-assign]
        bigger = tuple(
            (chip, pid, user, command, mb + 1024 if chip == 2 else mb)
            for chip, pid, user, command, mb in PROCESSES
        )
        last = snapshot_at(200, bigger)
        agents = (JOB_PID, OTHER_AGENT_PID)
        app.store.apply(ev.HostNpuSample(0, last.taken_ns, HOST, last.to_plain(), agents))
        view.redraw()
        await pilot.pause()
        changed = [n for n, row in enumerate(view._rows) if row.reading.memory_mb == 13_824]
        assert len(changed) == 1
        assert painted and set(painted) == {changed[0] - round(vlist.scroll_y)}
        assert "13.5 GiB" in screen_text(app) and "12.5 GiB" not in screen_text(app)
