"""Operator timings by (device, model, op name), AI Core metric columns, msproftx records."""

from __future__ import annotations

import pytest
from test_store import T0, Seq

from aclmon import events as ev
from aclmon.events import EventDecoder
from aclmon.store import Store
from aclmon.store.ops import OP_SORTS
from aclmon.store.state import METRIC_LIMIT, TX_LIMIT


def two_models() -> list:
    e = Seq()
    return [
        e(ev.ModelLoaded, 1, 0, "resnet50", 10),
        e(ev.ModelLoaded, 2, 1, "bert", 10),
        e(ev.OpTiming, 1, "MatMul_1", "MatMulV2", 0, 10, 10, 0),
        e(ev.OpTiming, 1, "MatMul_1", "MatMulV2", 20, 50, 30, 0),
        e(ev.OpTiming, 2, "MatMul_1", "MatMulV2", 0, 7, 7, 1),
        e(ev.OpTiming, 2, "Add", "Add", 0, 2, 2, 1),
    ]


def test_same_op_name_in_two_models_stays_two_rows():
    store = Store()
    store.apply_many(two_models())
    ops = store.state.ops
    assert set(ops) == {(0, 1, "MatMul_1"), (1, 2, "MatMul_1"), (1, 2, "Add")}
    resnet = ops[(0, 1, "MatMul_1")]
    assert (resnet.count, resnet.total_us, resnet.min_us, resnet.max_us, resnet.last_us) == (
        2, 40, 10, 30, 30,
    )  # fmt: skip
    assert resnet.model_name == "resnet50" and resnet.device_id == 0
    bert = ops[(1, 2, "MatMul_1")]
    assert (bert.count, bert.total_us, bert.model_name, bert.device_id) == (1, 7, "bert", 1)


def test_same_model_on_two_devices_stays_two_rows():
    store = Store()
    e = Seq()
    store.apply_many([
        e(ev.OpTiming, 1, "Add", "Add", 0, 2, 2, 0),
        e(ev.OpTiming, 1, "Add", "Add", 0, 3, 3, 1),
    ])  # fmt: skip
    assert sorted(store.state.ops) == [(0, 1, "Add"), (1, 1, "Add")]


def test_an_old_timing_without_a_device_takes_its_models_device_or_none():
    """A recording older than schema 5: the array ends before device_id and metrics."""
    e = Seq()
    loaded = e(ev.ModelLoaded, 3, 2, "yolo", 5)
    known = e(ev.OpTiming, 3, "Conv", "Conv2D", 0, 5, 5)
    unknown = e(ev.OpTiming, 9, "Conv", "Conv2D", 0, 5, 5)
    decoder = EventDecoder()
    # as a schema-4 agent sent them: OpTiming's array ends at duration_us
    old = [decoder.decode((type(x).KIND, *x[:8])) for x in (loaded, known, unknown)]
    assert old[1].device_id == -1 and old[1].metrics == {}
    store = Store()
    store.apply_many(old)
    assert sorted(store.state.ops) == [(-1, 9, "Conv"), (2, 3, "Conv")]
    assert store.state.ops[(-1, 9, "Conv")].model_name == ""


def test_metrics_are_averaged_per_row_and_their_columns_kept_in_order():
    store = Store()
    e = Seq()
    store.apply_many([
        e(ev.OpTiming, 1, "Conv", "Conv2D", 0, 5, 5, 0, {"aic_mac_ratio": 0.5, "aiv_vec_ratio": 0.1}),
        e(ev.OpTiming, 1, "Conv", "Conv2D", 0, 5, 5, 0, {"aic_mac_ratio": 0.7, "aiv_vec_ratio": 0.3}),
        e(ev.OpTiming, 1, "Relu", "Relu", 0, 1, 1, 0),
    ])  # fmt: skip
    s = store.state
    assert list(s.op_metrics) == ["aic_mac_ratio", "aiv_vec_ratio"]
    conv = s.ops[(0, 1, "Conv")]
    assert conv.metric("aic_mac_ratio") == pytest.approx(0.6)
    assert conv.metric("aiv_vec_ratio") == pytest.approx(0.2)
    assert s.ops[(0, 1, "Relu")].metric("aic_mac_ratio") is None
    by_metric = store.sorted_ops("metric:aic_mac_ratio")
    assert [o.op_name for o in by_metric] == ["Conv", "Relu"]  # no value: last
    exported = store.to_json()["ops"]
    assert exported[0]["metrics"] == {"aic_mac_ratio": 0.6, "aiv_vec_ratio": 0.2}
    assert exported[0]["model_id"] == 1 and exported[0]["device_id"] == 0


def test_metric_columns_are_bounded_and_odd_values_skipped():
    store = Store()
    e = Seq()
    many = {f"m{i}": float(i) for i in range(METRIC_LIMIT + 5)}
    store.apply(e(ev.OpTiming, 1, "Conv", "Conv2D", 0, 5, 5, 0, {"text": "x", **many}))
    assert len(store.state.op_metrics) == METRIC_LIMIT
    assert "text" not in store.state.op_metrics


@pytest.mark.parametrize("sort", list(OP_SORTS))
def test_every_sort_orders_every_row_and_reverse_turns_it(sort):
    store = Store()
    store.apply_many(two_models())
    forward = store.sorted_ops(sort)
    backward = store.sorted_ops(sort, reverse=True)
    assert len(forward) == len(backward) == 3
    assert {id(o) for o in forward} == {id(o) for o in backward}


def test_sort_orders():
    store = Store()
    store.apply_many(two_models())
    assert [(o.model_name, o.op_name) for o in store.sorted_ops("total")] == [
        ("resnet50", "MatMul_1"), ("bert", "MatMul_1"), ("bert", "Add"),
    ]  # fmt: skip
    assert [o.op_name for o in store.sorted_ops("op")] == ["Add", "MatMul_1", "MatMul_1"]
    assert [o.model_name for o in store.sorted_ops("model")] == ["bert", "bert", "resnet50"]
    assert [o.total_us for o in store.sorted_ops("total", reverse=True)] == [2, 7, 40]


def test_msproftx_records_are_kept_newest_last_and_bounded():
    store = Store()
    e = Seq()
    store.apply_many([e(ev.TxMark, f"mark {i}") for i in range(TX_LIMIT)])
    store.apply(e(ev.TxRange, "step 1", T0, T0 + 2_000_000))
    s = store.state
    assert s.tx_marks == TX_LIMIT and s.tx_ranges == 1
    assert len(s.tx_recent) == TX_LIMIT
    assert s.tx_recent[-1].message == "step 1" and s.tx_recent[0].message == "mark 1"
    assert store.snapshot().tx_recent is not s.tx_recent
