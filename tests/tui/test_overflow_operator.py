"""An overflow file is named after the debug task (``Opdebug.Node_OpDebug.{task}...``):
the Dumps list, the detail and replay name the operator its record points at."""

from __future__ import annotations

from tui_helpers import make_app, static_text, write_overflow_pair
from tui_scenario import build_events

from aclmon import events as ev
from aclmon.dump import summarize
from aclmon.sources.replay_summary import overflow_json
from aclmon.tui.views.dumps import DumpsView

SIZE = (160, 48)


def _summaries(tmp_path):
    over_path, op_path = write_overflow_pair(tmp_path)  # record: task 2001 stream 6
    today = summarize(over_path)  # what the agent announces
    older = {  # what an older agent announced: the file's own name and ids
        "kind": "overflow", "file": over_path.name, "op_type": "Opdebug",
        "op_name": "Node_OpDebug", "task_id": 2002, "stream_id": 6, "records": today["records"],
    }  # fmt: skip
    return over_path, op_path, today, older


def test_the_summary_names_the_operator_not_the_opdebug_file(tmp_path):
    over_path, op_path, today, _ = _summaries(tmp_path)
    assert (today["op_type"], today["op_name"]) == ("MatMulV2", "resnet50/fc/MatMulV2")
    assert (today["task_id"], today["stream_id"], today["op_dump"]) == (2001, 6, str(op_path))
    op_path.unlink()
    alone = summarize(over_path)
    assert "op_type" not in alone and "op_name" not in alone
    assert (alone["task_id"], alone["stream_id"]) == (2001, 6)


def test_replay_summary_of_an_older_recording_takes_the_ids_from_the_record(tmp_path):
    over_path, _, today, older = _summaries(tmp_path)
    item = overflow_json(ev.DumpFileSeen(1, 1, str(over_path), "overflow", 1, older))
    assert (item["task_id"], item["stream_id"], item["operator"]) == (2001, 6, None)
    item = overflow_json(ev.DumpFileSeen(1, 1, str(over_path), "overflow", 1, today))
    assert item["operator"] == "MatMulV2 resnet50/fc/MatMulV2"


async def test_dumps_list_and_detail_name_the_operator_that_overflowed(tmp_path):
    over_path, _, today, older = _summaries(tmp_path)
    base = build_events()[:5]
    t0 = base[-1].ts_ns
    events = [
        *base,
        ev.DumpFileSeen(900, t0 + 1, str(over_path), "overflow", 2099, today),
        ev.DumpFileSeen(901, t0 + 2, str(over_path) + ".old", "overflow", 2099, older),
    ]
    app = make_app(events=events)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        await pilot.pause()
        view = app.query_one(DumpsView)
        rows = [view._render_row(n, 150).plain for n in range(2)]
        # the operator that overflowed, not the Opdebug file's own name
        assert "overflow" in rows[0] and "resnet50/fc/MatMulV2" in rows[0]
        assert "task 2001 stream 6 (no dump of it found)" in rows[1]
        assert not any("Opdebug" in row or "2002" in row for row in rows)
        await pilot.press("home")
        await pilot.pause()
        # the pane is narrow: key/value lines (unwrapped here)
        detail = " ".join(static_text(app, "#dump-detail").split())
        assert "overflowed MatMulV2 resnet50/fc/MatMulV2 task 2001 · stream 6" in detail
        await pilot.press("down")
        await pilot.pause()
        detail = " ".join(static_text(app, "#dump-detail").split())
        assert "overflowed operator (no dump of it found) task 2001 · stream 6" in detail
        assert "Opdebug Node_OpDebug" not in detail and "task 2002" not in detail
