"""What the viewer says about the job: the model execution of an exception, and how
the job ended (its goodbye) or that the connection was lost without one."""

from __future__ import annotations

from tui_helpers import make_app, static_text
from tui_scenario import build_events

from aclmon import events as ev
from aclmon.bus.states import DISCONNECTED
from aclmon.sources.base import ListSource
from aclmon.tui.views import ExceptionsView

SIZE = (160, 48)


async def test_exception_row_and_detail_name_the_model_execution():
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        view = app.query_one(ExceptionsView)
        row = view._render_row(6, 160).plain
        assert "  resnet50/fc/MatMulV2  " in row and "  resnet50 run 47  " in row
        await pilot.press("up", "enter")
        await pilot.pause()
        assert "model resnet50 · execution 47" in static_text(app.screen, "#detail-title")


async def test_header_says_the_job_exited_with_its_status():
    events = build_events()
    last = events[-1]
    events.append(ev.Goodbye(last.seq + 1, last.ts_ns + 1, 3, True, "exit"))
    app = make_app(events=events)
    async with app.run_test(size=SIZE):
        header = static_text(app, "#header")
        assert "job exited (status 3)" in header and "ended" not in header


class _Lost(ListSource):
    """A live source whose connection dropped (no goodbye came)."""

    @property
    def state(self) -> str:
        return DISCONNECTED

    @property
    def state_reason(self) -> str:
        return "cannot connect: [Errno 111] Connection refused"


async def test_header_says_connection_lost_without_a_goodbye():
    from aclmon.tui.app import AclmonApp

    app = AclmonApp(_Lost(build_events()), clock=lambda: 0.0)
    async with app.run_test(size=SIZE):
        header = static_text(app, "#header")
        assert "connection lost" in header and "Errno" not in header
