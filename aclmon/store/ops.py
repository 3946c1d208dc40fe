"""Operator timings and msproftx records folded into the state, and the orders
the operator table sorts by.

One row per operator *of one model on one device*: the same op name in two
models (or the same model loaded on two devices) stays two rows. Timings from
a source older than schema 5 carry no device; the model's load tells it when
it was seen, else the device stays -1 (not known).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aclmon import events as ev
from aclmon.store.state import METRIC_LIMIT, TX_LIMIT, OpStats, StoreState, ring_add

#: what the operator table can be sorted by -> the key of a row (ties by name,
#: device and model, for a stable order). Numbers sort largest first. An AI Core
#: metric column sorts as ``metric:<column>`` (rows without it last).
OP_SORTS: dict[str, Callable[[OpStats], Any]] = {
    "total": lambda o: -o.total_us,
    "mean": lambda o: -o.mean_us,
    "max": lambda o: -o.max_us,
    "min": lambda o: -o.min_us,
    "count": lambda o: -o.count,
    "last": lambda o: -o.last_us,
    "op": lambda o: o.op_name,
    "type": lambda o: o.op_type,
    "model": lambda o: (o.model_name or f"#{o.model_id}", o.model_id),
    "device": lambda o: o.device_id,
}


METRIC_SORT = "metric:"


def fold_op_timing(s: StoreState, e: ev.OpTiming) -> None:
    s.op_timings_total += 1
    device = e.device_id
    model = s.models.get(e.model_id)
    if device < 0 and model is not None:
        device = model.device_id
    key = (device, e.model_id, e.op_name)
    stats = s.ops.get(key)
    if stats is None:
        if len(s.ops) >= s.op_limit:
            s.op_timings_untracked += 1
            return
        name = model.name if model is not None else ""
        stats = s.ops[key] = OpStats(e.op_name, e.op_type, device, e.model_id, name)
        stats.min_us = e.duration_us
    duration = e.duration_us
    stats.count += 1
    stats.total_us += duration
    stats.last_us = duration
    if duration > stats.max_us:
        stats.max_us = duration
    if duration < stats.min_us:
        stats.min_us = duration
    if e.metrics:
        _fold_metrics(s, stats, e.metrics)


def _fold_metrics(s: StoreState, stats: OpStats, metrics: ev.Summary) -> None:
    columns = s.op_metrics
    sums = stats.metric_sums
    counted = False
    for name, value in metrics.items():
        if type(value) not in (int, float) or not isinstance(name, str):
            continue
        if name not in columns:
            if len(columns) >= METRIC_LIMIT:
                continue
            columns[name] = None
        sums[name] = sums.get(name, 0.0) + value
        counted = True
    if counted:
        stats.metric_count += 1


def fold_tx(s: StoreState, e: ev.TxMark | ev.TxRange) -> None:
    if type(e) is ev.TxMark:
        s.tx_marks += 1
    else:
        s.tx_ranges += 1
    ring_add(s.tx_recent, e, TX_LIMIT)


def op_sort_key(sort: str) -> Callable[[OpStats], Any]:
    """The key of a row for ``sort`` (a key of :data:`OP_SORTS` or
    ``metric:<column>``, whose rows without the metric go last)."""
    if not sort.startswith(METRIC_SORT):
        return OP_SORTS[sort]
    name = sort.removeprefix(METRIC_SORT)

    def by_metric(o: OpStats) -> Any:
        value = o.metric(name)
        return (value is None, -(value or 0.0))

    return by_metric


def op_name_order(o: OpStats) -> tuple[str, int, int]:
    """The order of rows whose sort keys tie: by name, device and model."""
    return (o.op_name, o.device_id, o.model_id)


def sorted_ops(s: StoreState, sort: str = "total", reverse: bool = False) -> list[OpStats]:
    """Every tracked operator in the table's order: ``sort`` (a key of
    :data:`OP_SORTS` or ``metric:<column>``; largest first for numbers, A to Z
    for names), ``reverse`` turns it around."""
    ops = sorted(s.ops.values(), key=op_name_order)
    ops.sort(key=op_sort_key(sort), reverse=reverse)  # stable: ties keep the name order
    return ops


def top_ops(s: StoreState, limit: int) -> list[OpStats]:
    """Operators by total time, largest first (ties by name, for a stable order)."""
    return sorted_ops(s)[:limit]
