"""Every kind of palette entry does what it says (run as the palette runs it,
after what the entry needs is selected); typing into the palette itself is
tested in test_app, test_row_actions and test_job_output."""

from __future__ import annotations

from tui_helpers import SIZE, FakeAgent, make_app, wait_for

from aclmon import events as ev
from aclmon.acl_constants import AICORE_METRICS, PROF_FLAGS
from aclmon.tui.palette import AclmonCommands
from aclmon.tui.screens import HelpScreen


def run(app, name: str) -> None:
    """Run the palette entry called ``name`` (it must be offered now)."""
    commands = {c.name: c for c in AclmonCommands(app.screen)._commands()}
    assert name in commands, f"not offered: {name}"
    commands[name].run()


async def test_each_kind_of_palette_entry_does_what_it_says():
    agent = FakeAgent()
    app = make_app(agent=agent)
    async with app.run_test(size=SIZE) as pilot:
        for view, title in (("exceptions", "Exceptions"), ("dumps", "Dumps / overflow"),
                            ("logs", "Logs"), ("profiling", "Profiling"),
                            ("devices", "Devices")):  # fmt: skip
            run(app, f"View: {title}")
            assert app.current_view == view and app.tabs.current == view
        profiling = app.profiling_view
        before = profiling.configured
        name, value = PROF_FLAGS[4]
        run(app, f"Profiling: toggle {name}")
        metric = next(m for m in AICORE_METRICS if m != before.metric)
        run(app, f"Profiling: AI Core metric {AICORE_METRICS[metric][0]}")
        # edits of the pending set, shown in the Profiling view, nothing sent
        assert app.current_view == "profiling"
        assert profiling.pending == before._replace(flags=before.flags ^ value, metric=metric)
        assert agent.commands == []
        profiling.action_discard()
        run(app, "Profiling: start / stop")  # the scenario's live timings run: stop
        await wait_for(pilot, lambda: agent.commands)
        assert isinstance(agent.commands[0], ev.StopProfiling)

        for source, title in (("CANN log", "the job's CANN log"), ("agent", "the agent's own lines"),
                              ("all", "every source")):  # fmt: skip
            run(app, f"Logs: {title}")
            assert app.current_view == "logs" and app.logs_view.source == source

        app.action_show_view("dumps")
        dumps = app.dumps_view
        overflow = next(i for i in range(3) if dumps.dump_at(i).kind == "overflow")
        dumps.vlist.move_cursor_to(overflow)
        run(app, "Dump: first overflow of this step")  # it is: said, stays
        assert dumps.selected_dump().kind == "overflow"
        run(app, "Dump: copy its operator name")
        assert app.clipboard == "resnet50/fc/MatMulV2"
        run(app, "Dump: jump to the overflowing operator")
        assert ".2001.6." in dumps.selected_dump().path and dumps.selected_dump().kind == "op-dump"
        run(app, "Dump: back")
        assert dumps.selected_dump().kind == "overflow"

        run(app, "Device 2: jump to it")
        assert app.current_view == "devices"
        run(app, "Help: show every key")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
