"""``aclmon replay`` of an msprof session directory: the Profiling view's operator
table and the Timeline view show its operators, and so do ``aclmon export --trace``
and ``aclmon replay --json``."""

from __future__ import annotations

import csv
import json

import msprof_exports as fx
from tui_helpers import screen_text, wait_for

from aclmon.cli import main
from aclmon.sources.replay_inputs import find_inputs
from aclmon.store.slices import OPERATOR, TX_MARK, TX_RANGE
from aclmon.store.trace_check import check_trace
from aclmon.tui.replay import build_app

OPERATORS = {"resnet/conv1/Conv2D", "resnet/relu1/Relu", "resnet/cast/Cast", "hcom_allReduce_1",
             "MemcpyAsync"}  # fmt: skip


async def test_the_profiling_table_and_the_timeline_show_msprofs_operators(tmp_path):
    fx.write_session(tmp_path)
    app = build_app(find_inputs(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: len(app.store.state.ops) == len(OPERATORS), 20)
        assert app.current_view == "profiling"  # msprof files alone open on their table
        shown = ("resnet/conv1/Conv2D", "resnet/relu1/Relu", "Conv2D", "c.mac%")
        # the operator table is drawn at most once a second while only its figures move
        await wait_for(pilot, lambda: all(name in screen_text(app) for name in shown), 20)
        table = screen_text(app)
        for name in shown:
            assert name in table, name
        ops = {o.op_name: o for o in app.store.sorted_ops()}
        assert set(ops) == OPERATORS
        assert ops["resnet/conv1/Conv2D"].metric("aic_mac_ratio") == 0.678
        assert ops["resnet/conv1/Conv2D"].device_id == 0
        await pilot.press("6")
        index = app.timeline_view.timeline.index
        await wait_for(pilot, lambda: any(lane.title == "Stream 2" for lane in index.lanes()))
        stream = next(lane for lane in index.lanes() if lane.title == "Stream 2")
        first, last = index.span()
        names = [item.name for item in index.window(stream, first, last, 0)]
        assert names == ["resnet/conv1/Conv2D", "resnet/relu1/Relu", "resnet/cast/Cast",
                         "MemcpyAsync"]  # fmt: skip
        titles = {lane.title for lane in index.lanes()}
        assert "Thread 1" in titles  # the msproftx thread's range and mark
        await pilot.pause()
        assert "Stream 2" in screen_text(app)


def test_export_trace_and_replay_json_show_the_operators(tmp_path, capsys):
    fx.write_session(tmp_path)
    out = tmp_path / "trace.json"
    assert main(["export", "--trace", str(out), str(tmp_path)]) == 0
    capsys.readouterr()
    trace = json.loads(out.read_text())
    assert check_trace(out).ok
    slices = [e for e in trace["traceEvents"] if e.get("ph") in ("X", "b", "i")]
    assert {e["name"] for e in slices if e.get("cat") == OPERATOR} == OPERATORS
    conv = next(e for e in slices if e["name"] == "resnet/conv1/Conv2D")
    assert conv["args"]["Task Id"] == 11 and conv["args"]["OP Type"] == "Conv2D"
    assert conv["args"]["aic_mac_ratio"] == 0.678
    assert {e.get("cat") for e in slices} >= {TX_RANGE, TX_MARK}

    table = tmp_path / "op_summary.csv"
    assert main(["export", "--format", "op-summary", "-o", str(table), str(tmp_path)]) == 0
    capsys.readouterr()
    rows = {row["Op Name"]: row for row in csv.DictReader(table.open())}
    assert set(rows) == OPERATORS
    conv_csv = rows["resnet/conv1/Conv2D"]
    assert (conv_csv["Task ID"], conv_csv["Stream ID"], conv_csv["Task Type"]) == (
        "11", "2", "AI_CORE",
    )  # fmt: skip
    assert rows["hcom_allReduce_1"]["Stream ID"] == "N/A"

    assert main(["replay", "--json", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    msprof = summary["msprof"]
    assert len(msprof["files"]) == 3 and summary["recording"] is None
    assert msprof["counts"] == {"op_timing": 5, "tx_mark": 1, "tx_range": 1}
    assert {o["op_name"] for o in msprof["operators"]} == OPERATORS
    conv_row = next(o for o in msprof["operators"] if o["op_name"] == "resnet/conv1/Conv2D")
    assert conv_row["op_type"] == "Conv2D" and conv_row["metrics"]["aic_mac_ratio"] == 0.678
    assert any("without a start" in p for p in summary["problems"])
