"""Pilot tests: every view and every key binding, driven like a user would."""

from __future__ import annotations

import pytest
from tui_helpers import (
    SIZE,
    FakeAgent,
    make_app,
    overflow_pair_app,
    static_text,
    wait_for,
    write_overflow_pair,
)
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.acl_constants import AICORE_METRICS, PROF_FLAGS
from aclmon.tui.app import AclmonApp
from aclmon.tui.pager import TextPager
from aclmon.tui.screens import CallFailureDetail, ExceptionDetail, HelpScreen, LogLineDetail
from aclmon.tui.views.optable import OpTable
from aclmon.tui.vlist import VirtualList


async def test_number_keys_switch_views_and_show_their_content():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.current_view == "devices"
        assert "Ascend910B1" in static_text(app, "#device-table")
        assert "stream 0" in static_text(app, "#device-tree-0")
        await pilot.press("2")
        assert app.current_view == "exceptions"
        assert isinstance(app.focused, VirtualList)
        assert "8 exception(s)" in static_text(app, "#exceptions-status")
        await pilot.press("3")
        assert app.current_view == "profiling"
        assert "LIVE OPERATOR TIMINGS  ● on" in static_text(app, "#prof-state")
        assert "resnet50/conv1/Conv2D" in [o.op_name for o in app.query_one(OpTable).rows]
        await pilot.press("4")
        assert app.current_view == "dumps"
        assert "3 dump file(s)" in static_text(app, "#dumps-status")
        await pilot.press("1")
        assert app.current_view == "devices"


async def test_header_shows_target_connection_and_counters():
    app = make_app()
    async with app.run_test(size=SIZE):
        header = static_text(app, "#header")
        assert "node-a:4242" in header and "sim" in header and "Ascend910B1" in header
        assert "ended" in header  # the fixed list has been delivered
        assert "dropped 0" in header and "gaps 0" in header
        assert "10:01:03 UTC" in header  # newest event time, not the wall clock


async def test_devices_view_shows_states_sync_times_and_errors():
    app = make_app()
    async with app.run_test(size=SIZE):
        tree0 = static_text(app, "#device-tree-0")
        assert "busy" in tree0 and "ACL_ERROR_RT_AICORE_EXCEPTION" in tree0
        assert "synchronizing" in static_text(app, "#device-tree-1")
        assert "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT" in static_text(app, "#device-tree-2")
        assert "2.4 ms" in static_text(app, "#device-tree-3")
        assert "Alarm" in static_text(app, "#device-table")
        assert "threads 24" in static_text(app, "#host-line")
        assert "2 loaded" in static_text(app, "#models")
        assert "resnet50_bs32" in tree0 and "running" in tree0


async def test_exception_list_cursor_keys_and_detail():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        vlist = app.query_one("#exceptions-list", VirtualList)
        last = vlist.cursor
        assert vlist.follow and last == 7
        await pilot.press("up")
        assert vlist.cursor == 6 and not vlist.follow
        await pilot.press("k")
        assert vlist.cursor == 5
        await pilot.press("down", "j")
        assert vlist.cursor == 7 and vlist.follow  # back on the newest row: following again
        await pilot.press("home")
        assert vlist.cursor == 0
        await pilot.press("pagedown")
        assert vlist.cursor == 7
        await pilot.press("pageup", "end")
        assert vlist.cursor == 7 and vlist.follow
        await pilot.press("g", "G")
        assert vlist.cursor == 7
        await pilot.press("up", "enter")
        assert isinstance(app.screen, ExceptionDetail)
        body = static_text(app, "#detail-body")
        assert "ACL_ERROR_RT_AICORE_OVER_FLOW" in body
        assert (
            "x1" in body and "FLOAT" in body and "[2048, 1000]" in body and "0x12c200040000" in body
        )
        # the matching op dump and the overflow record that points at task 2001 stream 6
        files = app.screen.query_one("#detail-files", VirtualList)
        paths = [files._renderer(i, 200).plain for i in range(files.row_count)]
        assert any("MatMulV2.resnet50_fc_MatMulV2.2001.6" in p for p in paths)
        assert any("Opdebug.Node_OpDebug" in p for p in paths)
        await pilot.press("pagedown", "pageup")  # scrolls the detail
        await pilot.press("escape")
        assert not isinstance(app.screen, ExceptionDetail)


async def test_follow_mode_and_new_count_when_scrolled_away():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "up")
        assert "paused" in static_text(app, "#exceptions-status")
        more = [
            ev.AclException(
                10_000 + n, T0 + 10**12 + n, 0, 0, 1, 1, 507015, f"op{n}", "Add", (), ()
            )
            for n in range(3)
        ]
        app.source.extend(more)
        app.tick()
        await pilot.pause()
        assert "3 new" in static_text(app, "#exceptions-status")
        vlist = app.query_one("#exceptions-list", VirtualList)
        assert vlist.cursor == 6  # stayed where the user was
        await pilot.press("f")
        assert vlist.follow and vlist.cursor == 10
        assert "following" in static_text(app, "#exceptions-status")
        await pilot.press("f")
        assert not vlist.follow


async def test_exception_ring_bound_is_visible():
    from aclmon.store import Store

    app = make_app(store=Store(exception_limit=5))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        status = static_text(app, "#exceptions-status")
        assert "8 exception(s)" in status and "3 older dropped" in status
        vlist = app.query_one("#exceptions-list", VirtualList)
        assert vlist.row_count == 5 and vlist.first_index == 3


async def test_stray_keys_in_the_profiling_view_send_nothing():
    agent = FakeAgent()
    app = make_app(agent=agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        view = app.profiling_view
        assert app.focused is view
        # Follow / down / up / first elsewhere: here they move the cursor, nothing more.
        await pilot.press("j", "k", "f", "g", "G", "down", "j", "n", "s", "c", "o", "slash")
        await pilot.pause()
        assert agent.commands == [] and view.pending is None
        assert view.cursor == 2
        await pilot.press("space")  # an edit: pending, shown, not sent
        await pilot.pause()
        assert agent.commands == []
        assert (
            view.pending is not None
            and view.pending.flags == view.configured.flags ^ (PROF_FLAGS[2][1])
        )
        assert "Enter applies, Esc discards" in static_text(app, "#prof-state")
        assert "AICORE_METRICS*" in static_text(app, "#prof-flags")
        await pilot.press("escape")
        assert view.pending is None and agent.commands == []
        await pilot.press("enter")  # nothing pending: nothing to apply
        await pilot.pause()
        assert agent.commands == []


async def test_enter_applies_exactly_the_pending_set():
    agent = FakeAgent()
    app = make_app(agent=agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        view = app.profiling_view
        configured = view.configured
        await pilot.press("space")  # ACL_API off
        await pilot.press("down", "down", "down", "space")  # AICPU on
        await pilot.press("m", "v", "v")  # next metric; devices: all -> 0
        await pilot.pause()
        assert agent.commands == []
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(agent.commands) == 1)
        await pilot.pause(0.1)
        command = agent.commands[0]
        assert isinstance(command, ev.SetProfilingConfig) and len(agent.commands) == 1
        assert command.flags == configured.flags ^ PROF_FLAGS[0][1] ^ PROF_FLAGS[3][1]
        metrics = list(AICORE_METRICS)
        assert command.aicore_metrics == metrics[metrics.index(configured.metric) + 1]
        assert command.devices == (0,)
        # The agent refused (acl.json owns it): said once, the edit stays pending beside it.
        await wait_for(pilot, lambda: "owned by acl.json" in static_text(app, "#prof-reply"))
        reply = static_text(app, "#prof-reply")
        assert reply.count("ACL_ERROR_PROF_ALREADY_RUN") == 1
        assert view.pending is not None
        assert not app.query("Toast")  # the view shows it: no toast repeats it


@pytest.mark.parametrize("index", range(len(PROF_FLAGS)))
async def test_each_flag_is_checked_by_space_or_a_click_and_sent_by_enter(index):
    agent = FakeAgent()
    app = make_app(agent=agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        view = app.profiling_view
        before = view.configured.flags
        rows = view._rows_per_column()
        await pilot.click("#prof-flags", offset=(1 + (index // rows) * 28 + 3, index % rows))
        await pilot.pause()
        assert view.cursor == index and view.pending is not None
        assert view.pending.flags == before ^ PROF_FLAGS[index][1]
        await pilot.press("space")  # and back
        assert view.pending is None
        await pilot.press("space", "enter")
        await wait_for(pilot, lambda: len(agent.commands) == 1)
        assert agent.commands[0].flags == before ^ PROF_FLAGS[index][1]


class AcceptingAgent:
    """Accepts every command and answers with the state an agent would publish."""

    def __init__(self, source_events: list) -> None:
        self.commands: list[object] = []
        self.config = (0, 1, ())
        self.running = False
        self.live = False
        self.app: AclmonApp | None = None

    def state(self) -> ev.ProfilingState:
        flags, metric, devices = self.config
        return ev.ProfilingState(
            0, T0 + 10**13, self.running and not self.live, self.running,
            0 if self.live or not self.running else flags, metric, devices if self.running else (),
            "", "aclmon" if self.running else "", self.running and self.live,
            flags, metric, devices,
        )  # fmt: skip

    def __call__(self, command: object) -> ev.Reply:
        self.commands.append(command)
        if isinstance(command, ev.SetProfilingConfig):
            self.config = (command.flags, command.aicore_metrics, tuple(command.devices))
        elif isinstance(command, ev.StartProfiling):
            self.running, self.live = True, self.config[0] == 0
        elif isinstance(command, ev.StopProfiling):
            self.running = self.live = False
        assert self.app is not None
        self.app.source.extend([self.state()])
        return ev.Reply(0, 0, command.request_id, 0, "ok", {})


async def test_start_stop_live_timings_and_choices_that_survive_a_stop():
    agent = AcceptingAgent([])
    events = [e for e in build_events() if not isinstance(e, ev.ProfilingState)]
    app = make_app(agent=agent, events=events)
    agent.app = app
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        view = app.profiling_view
        # No state yet: the view says what the agent starts with, no hidden flags.
        assert "live operator timings (no flag checked)" in static_text(app, "#prof-state")
        await pilot.press("space", "m", "v", "enter")  # ACL_API, next metric, device 0
        await wait_for(pilot, lambda: view.pending is None and view.configured.flags == 1)
        app.tick()
        assert "devices 0" in static_text(app, "#prof-state")
        await pilot.press("p")  # start profiling to files, as configured
        await wait_for(pilot, lambda: isinstance(agent.commands[-1], ev.StartProfiling))
        await wait_for(pilot, lambda: app.store.state.profiling.running)
        app.tick()
        await pilot.pause()
        assert "● profiling to files" in static_text(app, "#prof-state")
        assert "●ACL_API" in static_text(app, "#prof-flags")
        await pilot.press("p")  # stop
        await wait_for(pilot, lambda: isinstance(agent.commands[-1], ev.StopProfiling))
        await wait_for(pilot, lambda: not app.store.state.profiling.running)
        app.tick()
        await pilot.pause()
        flags = static_text(app, "#prof-flags")
        assert "●" not in flags.split("\n[x] used")[0]  # nothing runs: nothing marked active
        state = static_text(app, "#prof-state")
        metric = list(AICORE_METRICS)[2]
        assert AICORE_METRICS[metric][1] in state and "devices 0" in state  # survived the stop
        await pilot.press("t")  # live operator timings: config with no flags, then start
        await wait_for(pilot, lambda: len(agent.commands) == 5)
        assert isinstance(agent.commands[3], ev.SetProfilingConfig)
        assert agent.commands[3].flags == 0 and agent.commands[3].aicore_metrics == metric
        assert isinstance(agent.commands[4], ev.StartProfiling)
        await wait_for(pilot, lambda: app.store.state.profiling.subscribed)
        app.tick()
        await pilot.pause()
        assert "LIVE OPERATOR TIMINGS  ● on" in static_text(app, "#prof-state")
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(agent.commands[-1], ev.StopProfiling))


async def test_readonly_never_sends():
    agent = FakeAgent()
    app = make_app(agent=agent, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "space", "enter", "p", "t", "m", "v", "a", "escape")
        await pilot.click("#prof-flags", offset=(4, 0))
        await pilot.pause()
        assert agent.commands == [] and app.profiling_view.pending is None
        assert "read-only viewer: nothing here can be changed" in static_text(app, "#prof-state")
        assert "[+] asked" not in static_text(app, "#prof-flags")
        assert "read-only" in static_text(app, "#header")
        footer_keys = {k for k, b in app.screen.active_bindings.items() if b.binding.show}
        assert not footer_keys & {"p", "t", "enter", "space", "m", "v"}


async def test_no_start_stop_when_the_jobs_acl_json_owns_profiling():
    agent = FakeAgent()
    owned = ev.ProfilingState(0, T0 + 10**13, True, True, 1, 1, (), "/out", "acl.json", False,
                              0, 1, ())  # fmt: skip
    app = make_app(agent=agent, events=[*build_events(), owned])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "p", "t")
        await pilot.pause()
        assert agent.commands == []
        assert "aclmon does not offer start/stop" in static_text(app, "#prof-state")


async def test_command_failure_is_shown_in_words():
    def broken_agent(command):
        from aclmon.errors import AclmonError

        raise AclmonError("no reply within 3 s")

    app = make_app(agent=broken_agent)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "space", "enter")
        await wait_for(pilot, lambda: "no reply within 3 s" in static_text(app, "#prof-reply"))


async def test_dump_view_decodes_an_overflow_file_off_the_ui_thread(tmp_path):
    app, _over_path, op_path = overflow_pair_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        vlist = app.query_one("#dumps-list", VirtualList)
        assert vlist.cursor == 1
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "OVERFLOW RECORD" in static_text(app, "#dump-detail"))
        detail = static_text(app, "#dump-detail")
        assert "floating-point computation overflow" in detail
        assert "task_id=2001" in detail and op_path.name in detail
        assert "NaN 1" in detail and "+Inf 1" in detail  # the input's statistics
        assert "histogram" in detail
        await pilot.press("up", "enter")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "OVERFLOW RECORD" not in static_text(app, "#dump-detail"))
        assert "input 0" in static_text(app, "#dump-detail")


async def test_dump_view_reports_a_bad_file_in_words(tmp_path):
    bad = tmp_path / "Add.add1.3.4.1764669648123456"
    bad.write_bytes(b"\xff" * 20)
    app = make_app(events=[ev.DumpFileSeen(1, T0, str(bad), "op-dump", 20, {})])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "enter")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "decoding" not in static_text(app, "#dump-detail"))
        assert bad.name in static_text(app, "#dump-detail")
        assert "Traceback" not in static_text(app, "#dump-detail")


async def test_help_screen_lists_every_binding_with_its_id():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        body = static_text(app, "#help-body")
        for binding_id in ("view.devices", "app.theme", "exceptions.follow", "list.open",
                           "profiling.start_stop", "profiling.check", "detail.close"):  # fmt: skip
            assert binding_id in body
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)


async def test_keymap_remaps_by_binding_id_and_hints_follow():
    app = make_app(keymap={"view.exceptions": "x", "exceptions.follow": "F", "profiling.live": "L"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        assert app.current_view == "exceptions"
        await pilot.press("up")
        assert "(F or End to follow)" in static_text(app, "#exceptions-status")
        await pilot.press("F")
        assert app.query_one("#exceptions-list", VirtualList).follow
        await pilot.press("3")
        assert "LIVE OPERATOR TIMINGS  ● on   L stop" in static_text(app, "#prof-state")


async def test_an_unknown_keymap_id_and_a_broken_theme_file_are_reported_once(monkeypatch):
    from aclmon.tui import app as app_module

    themes, _ = app_module.load_themes()
    monkeypatch.setattr(
        app_module,
        "load_themes",
        lambda: (themes, ["/x/broken.json: 'primary' colour is required"]),
    )
    app = make_app(keymap={"view.nosuch": "z"})
    # every notice given, kept here: a loaded machine may outlast a notice's 8 s
    toasts: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kwargs: (toasts.append(str(message)), notify(message, **kwargs))[1]  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+t", "ctrl+t")  # a theme switch reports nothing again
        assert sum("view.nosuch" in t for t in toasts) == 1
        assert sum("broken.json" in t for t in toasts) == 1
        # and the log: a warning of aclmon's own in the Logs view, after the job's lines
        await pilot.press("5")
        await pilot.pause()
        logged = [line.text for line in app.store.state.logs if line.module == "aclmon"]
        assert sum("view.nosuch" in t for t in logged) == 1
        assert sum("broken.json" in t for t in logged) == 1
        rows = [
            app.logs_view._render_row(i, 140).plain for i in range(app.logs_view.vlist.row_count)
        ]
        assert any("WARN" in r and "keymap: unknown binding id(s) view.nosuch" in r for r in rows)


async def test_the_palette_offers_every_theme():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p", *"Theme:")
        await pilot.pause(0.3)
        from textual.command import CommandList

        hits = app.screen.query_one(CommandList)
        prompts = [str(hits.get_option_at_index(i).prompt) for i in range(hits.option_count)]
        offered = {
            p.split("\n")[0].removeprefix("Theme: ") for p in prompts if p.startswith("Theme: ")
        }
        assert offered == set(app.available_themes)
        assert {"aclmon-dark", "aclmon-light", "nord", "gruvbox"} <= offered


async def test_ctrl_t_switches_between_the_dark_and_light_pair():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+t")
        assert app.theme == "aclmon-light"
        await pilot.press("ctrl+t")
        assert app.theme == "aclmon-dark"


async def test_ctrl_t_paints_the_screen_a_light_start_paints():
    """Every row, header and status line in the new theme's colours, none left
    in the old ones (the lists cache their rows; the views colour from the theme)."""
    import re

    async def screen(theme: str, *keys: str) -> str:
        app = make_app(theme=theme)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("2", *keys)
            await pilot.pause()
            app.clear_notifications()
            await pilot.pause()
            return re.sub(r"terminal-\d+", "terminal", app.export_screenshot())

    assert await screen("aclmon-dark", "ctrl+t") == await screen("aclmon-light")


async def test_palette_switches_theme_and_jumps_to_a_device():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.press(*"theme aclmon-light")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "aclmon-light")
        await pilot.press("2")
        await pilot.press("ctrl+p")
        await pilot.press(*"device 3")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.current_view == "devices")
        await pilot.press("ctrl+p")
        await pilot.press(*"toggle ACL_PROF_AICPU")
        await pilot.pause(0.3)
        await pilot.press("enter")  # checks it in the pending set and shows it; sends nothing
        await wait_for(pilot, lambda: app.current_view == "profiling")
        assert app.profiling_view.pending is not None and app.store.state.last_reply is None


async def test_quit_key_exits():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_devices_view_cursor_keys_move_a_line_and_the_scroll_follows():
    app = make_app()
    async with app.run_test(size=(140, 20)) as pilot:
        assert "device 2 health Alarm" in static_text(app, "#device-logs")
        view = app.devices_view
        scroll = app.query_one("#devices-scroll")
        assert scroll.scroll_y == 0 and view.cursor == -1  # nothing selected at first
        await pilot.press("j")
        await pilot.pause()
        assert view.cursor == 0 and view.selected_line().startswith("device 0")
        top = scroll.scroll_y
        for _ in range(12):
            await pilot.press("down")
        await pilot.pause()
        assert view.cursor == 12 and scroll.scroll_y > top  # followed the cursor down
        tree = app.query_one(f"#device-tree-{view._lines[12][0]}")
        row = tree.region.y + view._lines[12][1]
        assert scroll.region.y <= row < scroll.region.bottom  # the cursor's line is on screen
        for _ in range(13):
            await pilot.press("k")
        await pilot.pause()
        assert view.cursor == -1 and scroll.scroll_y == 0  # up past the first: the top


async def test_devices_view_pages_and_goes_to_the_ends_like_every_list():
    app = make_app()
    async with app.run_test(size=(140, 20)) as pilot:
        view = app.devices_view
        scroll = app.query_one("#devices-scroll")
        await pilot.pause()
        page = scroll.scrollable_content_region.height - 1
        await pilot.press("pagedown")
        assert view.cursor == page - 1  # from the top (-1), a screenful of lines down
        await pilot.press("pageup")
        assert view.cursor == -1
        await pilot.press("end")
        await pilot.pause()
        assert view.cursor == len(view._lines) - 1 and scroll.scroll_y > 0
        await pilot.press("home")
        await pilot.pause()
        assert view.cursor == -1 and scroll.scroll_y == 0
        await pilot.press("G")
        assert view.cursor == len(view._lines) - 1
        await pilot.press("g")
        assert view.cursor == -1


async def test_devices_tree_n_and_N_go_through_the_matches_of_a_search():
    app = make_app()
    async with app.run_test(size=(140, 20)) as pilot:
        view = app.devices_view
        await pilot.press("slash", "tab", *"idle", "enter")
        await pilot.pause()
        assert view.filter_text == "idle" and not view.filter_hides
        first = view.cursor
        assert "idle" in view.selected_line()
        status = static_text(app, "#devices-status")
        matches = sum(1 for row in range(len(view._lines)) if view.matches(row))
        assert f"search “idle”: {matches} match(es) (n/N)" in status and matches > 2
        await pilot.press("n")
        assert view.cursor > first and "idle" in view.selected_line()
        await pilot.press("N", "N")
        last = max(row for row in range(len(view._lines)) if view.matches(row))
        assert view.cursor == last > first  # wrapped to the last match
        await pilot.press("escape")
        await pilot.pause()
        assert view.filter_text == "" and not app.query_one("#devices-status").display
        before = view.cursor
        await pilot.press("n")  # without a text n does nothing here
        assert view.cursor == before


async def test_the_palette_jump_to_a_device_selects_its_first_line():
    app = make_app()
    async with app.run_test(size=(140, 20)) as pilot:
        from aclmon.tui.palette import AclmonCommands

        entries = {c.name: c for c in AclmonCommands(app.screen)._commands()}
        entries["Device 3: jump to it"].run()
        await pilot.pause()
        await pilot.pause()
        assert app.devices_view.selected_line() == "device 3"


async def test_help_screen_scroll_keys():
    app = make_app()
    async with app.run_test(size=(140, 24)) as pilot:
        await pilot.press("question_mark")
        scroll = app.screen.query_one("#help-scroll")
        await pilot.press("j", "down")
        await pilot.pause()
        assert scroll.scroll_y == 2
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 2
        await pilot.press("pageup", "k")
        await pilot.pause()
        assert scroll.scroll_y < 2


async def test_target_picker_returns_the_chosen_agent():
    from aclmon.bus.registry import AgentInfo
    from aclmon.tui.screens import PickerApp

    agents = [
        AgentInfo(101, "/run/a.sock", "node-a", ("python", "a.py"), 0.0),
        AgentInfo(202, "/run/b.sock", "node-a", ("python", "b.py"), 0.0),
    ]
    app = PickerApp(agents)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
    assert app.return_value is agents[1]

    app = PickerApp(agents)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_value is None


async def test_ctrl_c_quits():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running


async def test_dump_directory_files_are_listed_and_decoded(tmp_path):
    from aclmon.sources.base import ListSource
    from aclmon.sources.dumpdir import WithDumpDirectory

    nested = tmp_path / "20251202100000" / "0" / "resnet50" / "1" / "0"
    nested.mkdir(parents=True)
    over_path, op_path = write_overflow_pair(nested)
    (nested / "notes.txt").write_text("not a dump")
    source = WithDumpDirectory(ListSource(build_events()[:5], agent=FakeAgent()), str(tmp_path))
    app = AclmonApp(source, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: source.scan.done.is_set())
        app.tick()
        await pilot.press("4")
        assert "2 dump file(s)" in static_text(app, "#dumps-status")
        assert {d.path for d in app.store.state.dumps} == {str(over_path), str(op_path)}
        overflow = next(d for d in app.store.state.dumps if d.kind == "overflow")
        assert overflow.seq == 0 and overflow.summary["records"]
        vlist = app.query_one("#dumps-list", VirtualList)
        index = [d.path for d in app.store.state.dumps].index(str(over_path))
        vlist.move_cursor_to(index)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "OVERFLOW RECORD" in static_text(app, "#dump-detail"))
        assert app.store.state.counters.gaps == 0


def test_missing_dump_directory_is_one_clear_error(tmp_path):
    from aclmon.errors import AclmonError
    from aclmon.sources.dumpdir import DumpDirectoryScan

    with pytest.raises(AclmonError, match="does not exist"):
        DumpDirectoryScan(str(tmp_path / "nope"))


async def test_click_selects_a_row_and_q_closes_the_detail():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.click("#exceptions-list", offset=(5, 2))
        vlist = app.query_one("#exceptions-list", VirtualList)
        assert vlist.cursor == 2 and not vlist.follow
        await pilot.press("enter")
        assert isinstance(app.screen, ExceptionDetail)
        assert app.screen.exception.task_id == 1002
        await pilot.press("q")
        assert not isinstance(app.screen, ExceptionDetail) and app.is_running


async def test_without_theme_files_the_default_falls_back_to_textual(monkeypatch):
    monkeypatch.setattr("aclmon.tui.app.load_themes", lambda: ({}, []))
    app = make_app(theme=None)
    async with app.run_test(size=SIZE):
        assert app.theme == "textual-dark"
        assert "Ascend910B1" in static_text(app, "#device-table")


async def test_a_new_process_clears_the_old_device_trees():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.query("#device-tree-3")
        hello = build_events()[0]._replace(seq=1, pid=5151)
        app.source.extend([hello, ev.DeviceSet(2, T0 + 10**13, 1, 0)])
        app.tick()
        await pilot.pause()
        assert not app.query_one("#device-tree-3").display
        assert app.query_one("#device-tree-1").display
        assert "5151" in static_text(app, "#header")


def _plog_lines(exception: ev.AclException, pid: int) -> list[ev.LogLine]:
    """plog lines as the agent publishes them: one matching the exception by time and
    task/stream, one far away in time, one of another process, one INFO of another module."""
    t = exception.ts_ns
    return [
        ev.LogLine(50_001, t + 10**6, "error",
                   f"aicore kernel execute failed, device_id=0, stream_id={exception.stream_id},"
                   f" task_id={exception.task_id}\nfault kernel_name=conv", "RUNTIME", pid,
                   "python", t - 2 * 10**6, "stream.cc:1043", "/plog/plog-1.log"),
        ev.LogLine(50_002, t + 2 * 10**6, "error", "an error 5 s later", "GE", pid, "python",
                   t + 5 * 10**9, "graph.cc:12", "/plog/plog-1.log"),
        ev.LogLine(50_003, t + 3 * 10**6, "error", "another process", "RUNTIME", pid + 1,
                   "python", t, "x.cc:1", "/plog/plog-2.log"),
        ev.LogLine(50_004, t + 4 * 10**6, "info", "model loaded", "ASCENDCL", pid, "python",
                   t - 10**8, "model.cc:7", "/plog/plog-1.log"),
    ]  # fmt: skip


async def test_logs_view_filters_searches_follows_and_links_back_to_the_exception():
    events = build_events()
    exception = [e for e in events if isinstance(e, ev.AclException)][-3]
    pid = events[0].pid
    app = make_app(events=[*events, *_plog_lines(exception, pid)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        view = app.logs_view
        assert app.current_view == "logs" and view.vlist.row_count == 5
        assert "5 log line(s)" in static_text(app, "#logs-status")
        await pilot.press("v", "v")  # warning and above
        assert view.level == "warning" and view.vlist.row_count == 4
        await pilot.press("v")  # errors
        assert view.vlist.row_count == 3
        await pilot.press("M")  # the first module seen in the logs: ASCENDCL
        assert view.module == "ASCENDCL" and view.vlist.row_count == 0
        await pilot.press("M")  # GE
        assert view.module == "GE" and view.vlist.row_count == 1
        await pilot.press("M", "M", "v")  # back to every module and level
        assert view.module == "" and view.level == "all" and view.vlist.row_count == 5
        await pilot.press("slash", *"kernel", "enter")
        assert view.filter_text == "kernel" and view.vlist.row_count == 1
        assert isinstance(app.focused, VirtualList)
        await pilot.press("escape")
        assert view.filter_text == "" and view.vlist.row_count == 5
        await pilot.press("f")
        assert not view.vlist.follow
        await pilot.press("f")
        assert view.vlist.follow
        # Enter opens the line whole; from the ERROR line that names the exception's
        # task and stream, e goes on to its detail.
        assert view.select(lambda line: line.seq == 50_001)
        await pilot.press("enter")
        assert isinstance(app.screen, LogLineDetail)
        body = static_text(app, "#detail-body")
        assert "fault kernel_name=conv" in app.screen.query_one(TextPager).text  # the line whole
        assert "stream.cc:1043" in body and "belongs to the exception at" in body
        await pilot.press("e")
        assert isinstance(app.screen, ExceptionDetail)
        assert app.screen.exception.seq == exception.seq
        await pilot.press("escape")
        # An ERROR line with no exception within 1 s opens whole, and e opens nothing.
        assert view.select(lambda line: line.seq == 50_002)
        await pilot.press("enter")
        assert isinstance(app.screen, LogLineDetail)
        assert "belongs to" not in static_text(app, "#detail-body")
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, LogLineDetail)
        await pilot.press("escape")
        assert not isinstance(app.screen, LogLineDetail)


async def test_an_error_line_about_a_failed_call_opens_that_call():
    """A runtime ERROR line ending ``result = N`` opens the failed call it is about
    (code, the runtime's message, the log lines near it); one about the
    synchronize that reported an exception opens the exception."""
    events = build_events()
    exception, _stream = _last_exception_and_its_stream(events)
    pid = events[0].pid
    t = exception.ts_ns
    seq = max(e.seq for e in events)
    said = "[PID: 7] 2025-12-02-10:00:00.000.000 Invalid_Argument(EE1001): no device 99"
    events += [
        ev.CallFailed(seq + 1, t + 300_000_000, "rt.set_device", 107001, said, 9, -1),
        ev.LogLine(seq + 2, t + 400_000_000, "error",
                   "9 aclrtSetDevice: no device 99, result = 107001 (ACL_ERROR_RT_INVALID_DEVICEID)",
                   "RUNTIME", pid, "python", t + 300_000_000, "device.cpp:1151", "/plog/p.log"),
        ev.LogLine(seq + 3, t + 400_000_000, "error",
                   f"9 aclrtSynchronizeStream: Stream synchronize failed, stream_id={exception.stream_id},"
                   f" result = {exception.error_code} (ACL_ERROR_RT_AICORE_EXCEPTION)",
                   "RUNTIME", pid, "python", t + 1_000, "stream.cpp:1023", "/plog/p.log"),
    ]  # fmt: skip
    app = make_app(events=events)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.store.state.call_failures_total == 1)
        await pilot.press("5")
        view = app.logs_view
        assert view.select(lambda line: line.seq == seq + 2)
        await pilot.press("enter", "e")
        assert isinstance(app.screen, CallFailureDetail)
        assert app.screen.failure.event.api == "rt.set_device"
        body = static_text(app, "#failure-body")
        assert "ACL_ERROR_RT_INVALID_DEVICEID (107001)" in body
        assert "runtime: [PID: 7]" in body and "no device 99" in body
        assert "LOG LINES WITHIN ±1 s" in body and "aclrtSetDevice" in body
        await pilot.press("escape")
        assert not isinstance(app.screen, CallFailureDetail)
        assert view.select(lambda line: line.seq == seq + 3)
        await pilot.press("enter", "e")
        assert isinstance(app.screen, ExceptionDetail)
        assert (app.screen.exception.seq, app.screen.exception.task_id) == (
            exception.seq,
            exception.task_id,
        )


async def test_an_exception_shows_the_log_lines_of_its_process_within_a_second():
    events = build_events()
    exception = [e for e in events if isinstance(e, ev.AclException)][-3]
    pid = events[0].pid
    app = make_app(events=[*events, *_plog_lines(exception, pid)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        vlist = app.query_one("#exceptions-list", VirtualList)
        position = [e.seq for e in app.store.state.exceptions].index(exception.seq)
        vlist.move_cursor_to(vlist.first_index + position)
        await pilot.press("enter")  # the detail lists the log lines near it
        body = static_text(app, "#detail-logs")
        assert "LOG LINES WITHIN ±1 s (3)" in body and "device 2 health Alarm" in body
        assert "aicore kernel execute failed" in body and "model loaded" in body
        assert "another process" not in body and "5 s later" not in body
        await pilot.press("l")  # and l goes on to the Logs view around it
        assert app.current_view == "logs"
        view = app.logs_view
        assert view.window is not None and view.vlist.row_count == 3
        assert "±1 s of the exception" in static_text(app, "#logs-status")
        await pilot.press("escape")
        assert view.window is None and view.vlist.row_count == 5
        await pilot.press("2", "l")  # l in the list does the same
        assert app.current_view == "logs" and view.window is not None


def _last_exception_and_its_stream(events: list) -> tuple[ev.AclException, ev.StreamCreated]:
    exception = next(e for e in reversed(events) if type(e) is ev.AclException)
    stream = next(
        e
        for e in events
        if type(e) is ev.StreamCreated
        and (e.device_id, e.stream_id) == (exception.device_id, exception.stream_id)
    )
    return exception, stream


async def test_exception_detail_and_stream_say_what_the_runtime_said():
    message = "EZ9999: Inner Error! The error from device(0), an exception occurred"
    events = build_events()
    exception, stream = _last_exception_and_its_stream(events)
    seq = max(e.seq for e in events)
    events.append(
        ev.CallFailed(
            seq + 1,
            exception.ts_ns + 1_000,
            "rt.synchronize_stream",
            exception.error_code,
            message,
            7,
            stream.stream,
        )
    )
    app = make_app(events=events)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.store.state.call_failures_total == 1)
        await pilot.press("2", "end", "enter")
        assert isinstance(app.screen, ExceptionDetail)
        assert app.screen.exception.seq == exception.seq
        assert f"runtime: {message}" in static_text(app, "#detail-body")


async def test_a_late_viewer_shows_the_runtimes_message_from_the_history():
    """The failed synchronize came before we connected (re-sent with seq 0 in
    the agent's history): the exception detail still shows the runtime's text,
    and the stream's line its telling part, not "EZ9999: Inner Error!"."""
    message = (
        "EZ9999: Inner Error!\n"
        "EZ9999[PID: 7] 2026-12-02-22:14:36.921.050 (EZ9999):  The error from device(chipId:0,"
        " dieId:0), serial number is 9, there is an aicore error exception\n"
        "        TraceBack (most recent call last):"
    )
    events = build_events()
    exception, stream = _last_exception_and_its_stream(events)
    failed = ev.CallFailed(
        0, exception.ts_ns + 2_000, "rt.synchronize_stream", exception.error_code, message, 7,
        stream.stream,
    )  # fmt: skip
    app = make_app(events=[*events, failed])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.store.state.call_failures_total == 1)
        tree = static_text(app, f"#device-tree-{exception.device_id}")
        assert "The error from" in tree and "serial number is 9" in tree
        assert "Inner Error" not in tree
        await pilot.press("2", "end", "enter")
        assert isinstance(app.screen, ExceptionDetail)
        body = static_text(app, "#detail-body")
        assert "runtime: EZ9999: Inner Error!" in body
        assert "serial number is 9" in body


async def test_devices_tree_hides_destroyed_streams_and_filters_by_text():
    events = build_events()
    gone = ev.StreamDestroyed(60_000, T0 + 10**13, 0x7800_0000, 0)
    app = make_app(events=[*events, gone])
    async with app.run_test(size=SIZE) as pilot:
        view = app.devices_view
        tree = static_text(app, "#device-tree-0")
        assert "stream 7 " not in tree and "1 destroyed context(s)/stream(s) hidden" in tree
        await pilot.press("d")
        tree = static_text(app, "#device-tree-0")
        assert "stream 7 " in tree and "destroyed" in tree and view.show_destroyed
        await pilot.press("slash", *"busy", "enter")
        tree = static_text(app, "#device-tree-0")
        assert view.filter_text == "busy" and "busy" in tree and "stream 1 " not in tree
        await pilot.press("escape")
        assert view.filter_text == "" and "stream 1 " in static_text(app, "#device-tree-0")
