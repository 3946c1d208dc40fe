"""The headless model the Compare view reads: the table (order, filter, sort, pages,
first divergent), a row's side-by-side detail, and the live comparer."""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from goldenpair import PERTURBED_OP, golden_pair

from aclmon.dump.compare import metrics as m
from aclmon.dump.compare.detail import row_detail
from aclmon.dump.compare.engine import CompareOptions, rows_with_thresholds, run_compare
from aclmon.dump.compare.live import LiveComparer
from aclmon.dump.compare.matching import Golden
from aclmon.dump.compare.table import OP, STATUS, CompareTable
from aclmon.dump.compare.thresholds import Thresholds
from aclmon.dump.summary import classify
from aclmon.events import DumpFileSeen


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return golden_pair(tmp_path_factory.mktemp("pair"))


@pytest.fixture(scope="module")
def result(pair):
    perturbed, clean = pair
    return run_compare(os.fspath(perturbed), Golden(os.fspath(clean)), CompareOptions())


def dump_events(directory: Path) -> list[DumpFileSeen]:
    """What the agent announces for the files of a dump directory (oldest first)."""
    files = sorted(
        (p for p in directory.rglob("*") if p.is_file()), key=lambda p: p.name.split(".")[-1]
    )
    return [
        DumpFileSeen(n + 1, 0, os.fspath(p), classify(p) or "", p.stat().st_size, {})
        for n, p in enumerate(files)
    ]


def test_table_keeps_execution_order_and_finds_the_first_divergent(result):
    table = CompareTable()
    table.set_rows(reversed(result.rows))  # whatever order they come in
    view = table.query()
    assert [r.order for r in view.rows] == sorted(r.order for r in view.rows)
    assert view.rows[0].npu_dump == "trans_image" and view.rows[0].role == "input"
    assert len(view) == view.total == len(result.rows)
    assert view.first_divergent is not None and view.first_divergent.op_name == PERTURBED_OP
    position = view.divergent_position
    assert view.rows[position].tensor_index == "layer1_conv2:output:0"
    assert view.page(position, 2)[0] is view.rows[position]
    assert view.page(len(view) - 1, 10) == (view.rows[-1],)
    assert view.counts["fail"] == 8


def test_table_filters_and_sorts_as_every_list(result):
    table = CompareTable()
    table.set_rows(result.rows)
    failing = table.query(statuses={"fail"})
    assert {r.status for r in failing.rows} == {"fail"} and failing.total == len(result.rows)
    conv = table.query("CONV2D")  # the op type, any case
    assert {r.op_type for r in conv.rows} == {"Conv2D"}
    assert table.query("layer1_relu:output").rows[0].tensor_index == "layer1_relu:output:0"
    worst = table.query(sort=m.COSINE)
    numbers = [r.number(m.COSINE) for r in worst.rows]
    assert numbers == sorted(numbers) and worst.rows[0].npu_dump == "layer1_conv2"
    best_first = table.query(sort=m.EUCLID, reverse=True)
    assert best_first.rows[0].number(m.EUCLID) == max(r.number(m.EUCLID) for r in result.rows)
    assert table.query(sort=STATUS).rows[0].status == "fail"
    names = [r.op_name.lower() for r in table.query(sort=OP).rows]
    assert names == sorted(names)
    assert table.query(sort="order", reverse=True).rows[0] == table.rows()[-1]
    with pytest.raises(ValueError):
        table.query(sort="colour")


def test_moving_a_line_rejudges_the_rows(result):
    lenient = Thresholds().with_overrides(["cos=0.9,red=0.5,kl=1"])
    rows = rows_with_thresholds(result.rows, lenient)
    table = CompareTable(thresholds=lenient)
    table.set_rows(rows)
    assert table.first_divergent() is None
    strict = rows_with_thresholds(result.rows, Thresholds().with_overrides(["cos=0.99999999"]))
    assert sum(r.status == "fail" for r in strict) > sum(r.status == "fail" for r in result.rows)


def test_an_older_dump_of_an_operator_does_not_replace_a_newer_one(result):
    rows = [r for r in result.rows if r.npu_dump == "conv1"]
    table = CompareTable()
    assert table.update(rows)
    older = [dataclasses.replace(r, order=(r.order[0] - 1, r.order[1]), values={}) for r in rows]
    assert not table.update(older)
    assert table.rows() == rows
    newer = [dataclasses.replace(r, order=(r.order[0] + 1, r.order[1])) for r in rows]
    assert table.update(newer) and table.rows() == newer


def test_nan_metrics_sort_last_either_way():
    from aclmon.dump.compare.rows import CompareRow

    def row(n, cos):
        return CompareRow(n, n + 1, (n, n), "Add", f"op{n}", f"op{n}", f"op{n}", "output", 0,
                          values={m.COSINE: cos})  # fmt: skip

    table = CompareTable()
    table.set_rows([row(0, "NaN"), row(1, "0.5"), row(2, "0.9"), row(3, "nan")])
    for reverse in (False, True):
        cos = [r.metric(m.COSINE) for r in table.query(sort=m.COSINE, reverse=reverse).rows]
        assert cos[2:] == ["NaN", "nan"]


def test_detail_shows_both_sides_the_worst_elements_and_the_error_histogram(result):
    row = next(r for r in result.rows if r.tensor_index == "layer1_conv2:output:0")
    detail = row_detail(row, top=5)
    assert detail.error == ""
    assert detail.mine.shape == detail.golden.shape == (1, 8, 16, 16)  # logical, not NC1HWC0
    assert detail.mine.stored_shape == (1, 1, 16, 16, 16) and detail.mine.layout == "NC1HWC0"
    assert detail.mine.stats["count"] == 8 * 16 * 16
    errors = [e.abs_error for e in detail.worst]
    assert errors == sorted(errors, reverse=True) and len(errors) == 5
    top = detail.worst[0]
    assert top.abs_error == pytest.approx(abs(top.mine - top.golden))
    assert top.abs_error == pytest.approx(detail.max_abs_error)
    assert len(top.position) == 4
    h = detail.histogram
    assert sum(h.counts) + h.zeros + h.nonfinite == 8 * 16 * 16
    assert h.edges and all(
        b == pytest.approx(a * 10) for a, b in zip(h.edges, h.edges[1:], strict=False)
    )
    lines = "\n".join(detail.lines())
    assert "worst elements" in lines and "absolute error by decade" in lines
    unpaired = dataclasses.replace(row, golden_file="", reasons=("no golden",))
    assert row_detail(unpaired).error == "no golden"


def test_detail_of_a_tiny_pair_ranks_nan_first(tmp_path):
    from dumpfixtures import T, dump_bytes, write

    from aclmon.dump import proto_enums as pe
    from aclmon.dump.compare.engine import compare_op
    from aclmon.dump.compare.matching import index_dump_directory

    def f32(values):
        a = np.asarray(values, "<f4")
        return T(a.tobytes(), dtype=pe.DT_FLOAT, fmt=pe.FORMAT_ND, shape=a.shape)

    write(tmp_path / "mine", "Add.a.1.0.1", dump_bytes([], [f32([1, 2, np.nan, 4])], op_name="a"))
    write(tmp_path / "gold", "Add.a.1.0.1", dump_bytes([], [f32([1, 3, 3, 0])], op_name="a"))
    op = index_dump_directory(os.fspath(tmp_path / "mine")).ops[0]
    (row,) = compare_op(op, 0, 1, Golden(os.fspath(tmp_path / "gold")), CompareOptions())
    detail = row_detail(row, top=3)
    assert [e.flat for e in detail.worst] == [2, 3, 1]
    assert detail.histogram.nonfinite == 1 and detail.histogram.zeros == 1
    assert detail.worst[1].rel_error == float("inf")  # golden 0


def test_live_comparer_fills_the_table_as_files_land(pair):
    perturbed, clean = pair
    live = LiveComparer(os.fspath(clean))
    live.start()
    try:
        events = dump_events(perturbed)
        assert live.offer_many(events) == len(events)
        assert live.wait_idle(60)
        view = live.table.query()
        assert live.counts.compared == len(events) and live.counts.failed == 0
        assert len(view) == 29
        assert view.first_divergent.op_name == PERTURBED_OP
        before = live.table.version
        live.offer(events[3])  # the same dump again: nothing older replaces what is there
        assert live.wait_idle(60)
        assert len(live.table.query()) == 29 and live.table.version > before
    finally:
        live.close()


def test_live_comparer_never_blocks_and_counts_what_it_drops(pair, tmp_path):
    perturbed, clean = pair
    events = dump_events(perturbed)
    live = LiveComparer(os.fspath(clean), queue_size=2)  # not started: nothing is taken
    done = threading.Event()

    def offer_all():
        for event in events:
            live.offer(event)
        done.set()

    thread = threading.Thread(target=offer_all)
    thread.start()
    assert done.wait(10)  # a full queue drops, it does not wait
    thread.join()
    assert live.counts.dropped == len(events) - 2 and live.pending == 2
    overflow = DumpFileSeen(1, 0, "/x/Opdebug.Node_OpDebug.1.2.3", "overflow", 10, {})
    assert not live.offer(overflow) and live.counts.ignored == 1
    live.start()
    assert live.wait_idle(60)
    live.close()
    assert live.counts.compared == 2


def test_live_comparer_runs_at_the_lowest_priority_and_survives_a_bad_golden(pair, tmp_path):
    perturbed, _ = pair
    live = LiveComparer(os.fspath(tmp_path / "no-such-golden"))
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    live.start()
    try:
        live.offer(dump_events(perturbed)[0])
        assert live.wait_idle(30)
        assert live.counts.failed == 1 and "not a directory" in live.error
        worker = next(t for t in threading.enumerate() if t.name == "aclmon-live-compare")
        assert os.getpriority(os.PRIO_PROCESS, worker.native_id) == 19
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the UI's stays
    finally:
        live.close()
