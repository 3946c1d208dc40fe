"""``aclmon replay DIR`` of the dump directory a BERT-shaped job left: its
exception dumps are exception rows, its overflows name device, model and step,
and ``c`` shows the first overflow of each step with how many it had."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from dumpdir_scenario import LAYER_1, LAYER_11, bert_dump_dir
from tui_helpers import screen_text, static_text

from aclmon.sources.replay_inputs import find_inputs
from aclmon.sources.replay_summary import replay_summary
from aclmon.tui.replay import build_app
from aclmon.tui.screens import ExceptionDetail
from aclmon.tui.views.dumps import OverflowStep


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory) -> Path:
    return bert_dump_dir(tmp_path_factory.mktemp("bert-dumps"))


def overflows_per_step(root: Path) -> Counter[str]:
    """Opdebug files by their step directory, as the runtime wrote them."""
    return Counter(p.parent.name for p in root.rglob("Opdebug.*"))


async def loaded(app, pilot) -> None:
    while not app.source.wait_loaded(0):
        await asyncio.sleep(0.02)
    app.tick()
    await pilot.pause()


async def test_exception_dumps_are_exception_rows_told_apart_at_80_columns(dump_dir):
    app = build_app(find_inputs(dump_dir), interval=30.0, clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(app, pilot)
        exceptions = list(app.store.state.exceptions)
        assert sorted(e.op_name for e in exceptions) == sorted([LAYER_1, LAYER_11])
        assert all(e.device_id == 0 and e.task_id > 0 and e.inputs for e in exceptions)
        await pilot.press("2")
        await pilot.pause()
        assert "2 exception(s)" in static_text(app, "#exceptions-status")
        shown = screen_text(app)
        # the two names differ only in the layer: both stay readable, and different
        assert "/layer_1/" in shown and "/layer_11/" in shown
        await pilot.press("home", "enter")
        assert isinstance(app.screen, ExceptionDetail)
        body = static_text(app, "#detail-body")
        assert "not recorded" in body and "known from its exception dump" in body
        assert "INPUTS (2)" in body and "[16, 32]" in body


async def test_overflows_show_device_model_and_step_and_c_keeps_the_first_of_each_step(dump_dir):
    per_step = overflows_per_step(dump_dir)
    assert len(per_step) >= 3 and max(per_step.values()) >= 2  # several steps, some with two
    app = build_app(find_inputs(dump_dir), interval=30.0, clock=lambda: 0.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(app, pilot)
        view = app.dumps_view
        assert app.current_view == "dumps"
        header = static_text(app, "#dumps-header")
        assert all(label in header for label in ("DEV", "MODEL", "STEP", "OPERATOR"))
        shown = screen_text(app)
        assert shown.count("bert_tiny") >= sum(per_step.values())
        await pilot.press("c")
        await pilot.pause()
        rows = [view.row_at(view.vlist.first_index + n) for n in range(view.vlist.row_count)]
        assert all(isinstance(row, OverflowStep) for row in rows)
        steps = {row.first.path.split("/")[-2]: row.records for row in rows}
        assert steps == dict(per_step)
        for row in rows:  # the first of its step
            same = [d for d in app.store.state.dumps if d.kind == "overflow"
                    and d.path.rsplit("/", 1)[0] == row.first.path.rsplit("/", 1)[0]]  # fmt: skip
            assert row.first.ts_ns == min(d.ts_ns for d in same)
        status = static_text(app, "#dumps-status")
        assert f"first overflow of each of {len(per_step)} step(s)" in status
        assert "×2" in screen_text(app)
        await pilot.press("c")
        await pilot.pause()
        assert view.vlist.row_count > len(per_step)
        await pilot.press("2")  # wide: the exception dumps' rows say where they come from
        await pilot.pause()
        assert screen_text(app).count("from a dump") == 2


def test_replay_json_lists_the_exception_dumps_as_exceptions(dump_dir):
    dumps = replay_summary(find_inputs(dump_dir))["dumps"]
    assert dumps["exceptions_total"] == 2
    assert {e["op_name"] for e in dumps["exceptions"]} == {LAYER_1, LAYER_11}
    assert all(e["error_name"] is None for e in dumps["exceptions"])
    assert dumps["overflows_total"] == sum(overflows_per_step(dump_dir).values())
