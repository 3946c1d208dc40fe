"""Pilot tests of the Profiling view's operator table and msproftx strip:
scrolling, the sort keys, header clicks, one row per model and device."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tui_helpers import FakeAgent, make_app, static_text
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.acl_constants import ACL_AICORE_PIPE_UTILIZATION, ACL_PROF_AICORE_METRICS
from aclmon.store.ops import METRIC_SORT, sorted_ops
from aclmon.store.state import OpStats, StoreState
from aclmon.tui.views.optable import OpList, OpTable, columns_for, metric_label

SMALL = (100, 30)


def with_many_ops(count: int = 60) -> list[ev.Event]:
    """The scenario plus ``count`` operators of a third model, each timed once."""
    events = build_events()
    seq = events[-1].seq
    extra: list[ev.Event] = [ev.ModelLoaded(seq + 1, T0, 7, 2, "yolo_v5", count)]
    for i in range(count):
        extra.append(
            ev.OpTiming(seq + 2 + i, T0, 7, f"yolo/op{i:02d}", "Add", 0, 10 + i, 10 + i, 2)
        )
    return events + extra


def row_names(app) -> list[str]:
    return [o.op_name for o in app.query_one(OpTable).rows]


def more_line(app) -> str:
    return static_text(app, "#ops-more")


async def test_the_table_scrolls_with_a_cursor_and_counts_the_rows_below_and_above():
    app = make_app(events=with_many_ops())
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("3")
        table = app.query_one(OpTable)
        oplist = app.query_one(OpList)
        assert len(table.rows) == 67 and oplist.cursor == 0
        height = oplist.scrollable_content_region.height
        assert f"↓ {67 - height} more" in more_line(app)
        assert "above" not in more_line(app)
        await pilot.press("tab")  # from the checklist to the table
        assert app.focused is oplist
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        top = round(oplist.scroll_y)
        assert oplist.cursor > height and top > 0
        assert f"↑ {top} above" in more_line(app)
        await pilot.press("end")
        await pilot.pause()
        assert oplist.cursor == 66 and "more" not in more_line(app)
        assert table.selected() is table.rows[66]
        await pilot.press("home")
        await pilot.pause()
        assert oplist.cursor == 0 and round(oplist.scroll_y) == 0


async def test_s_cycles_the_sort_column_and_r_reverses_without_sending_anything():
    agent = FakeAgent()
    app = make_app(agent=agent, events=with_many_ops(5))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        table = app.query_one(OpTable)
        assert table.sort == "total"
        totals = [o.total_us for o in table.rows]
        assert totals == sorted(totals, reverse=True)
        sorts = [c.sort for c in table.columns]
        await pilot.press("s")
        await pilot.pause()
        assert table.sort == sorts[sorts.index("total") + 1]
        await pilot.press("r")
        await pilot.pause()
        assert table.reverse
        means = [o.mean_us for o in table.rows]
        assert means == sorted(means)
        assert "▲" in static_text(app, "#ops-header")
        for _ in sorts:  # round the columns: back where it started
            await pilot.press("s")
        await pilot.pause()
        assert table.sort == sorts[sorts.index("total") + 1] and not table.reverse
        assert agent.commands == [] and app.profiling_view.pending is None


async def test_a_click_on_a_header_sorts_by_it_and_a_second_click_reverses():
    app = make_app(events=with_many_ops(5))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        table = app.query_one(OpTable)
        header = static_text(app, "#ops-header")
        await pilot.click("#ops-header", offset=(header.index("OPERATOR") + 2, 0))
        await pilot.pause()
        assert table.sort == "op" and not table.reverse
        names = row_names(app)
        assert names == sorted(names)
        await pilot.click("#ops-header", offset=(header.index("OPERATOR") + 2, 0))
        await pilot.pause()
        assert table.reverse and row_names(app) == sorted(names, reverse=True)
        await pilot.click("#ops-header", offset=(header.index("COUNT") + 2, 0))
        await pilot.pause()
        assert table.sort == "count" and not table.reverse


async def test_two_models_with_the_same_op_name_stay_two_rows():
    events = build_events()
    seq = events[-1].seq
    events += [
        ev.ModelLoaded(seq + 1, T0, 8, 3, "detector", 2),
        ev.OpTiming(seq + 2, T0, 8, "resnet50/fc/MatMulV2", "MatMulV2", 0, 5, 5, 3),
        # as a schema-4 source sent it, of a model whose load was not seen
        ev.OpTiming(seq + 3, T0, 9, "resnet50/fc/MatMulV2", "MatMulV2", 0, 4, 4),
    ]
    app = make_app(events=events)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        table = app.query_one(OpTable)
        fc = [o for o in table.rows if o.op_name == "resnet50/fc/MatMulV2"]
        assert sorted((o.model_name, o.device_id) for o in fc) == [
            ("", -1), ("detector", 3), ("resnet50_bs32", 0),
        ]  # fmt: skip
        lines = [table._render_row(i, 150).plain for i in range(len(table.rows))]
        fc_lines = [line for line in lines if "fc/MatMulV2" in line]
        assert any("detector" in line and " 3 " in line for line in fc_lines)
        assert any("resnet50_bs32" in line and " 0 " in line for line in fc_lines)
        assert any("#9" in line and " – " in line for line in fc_lines)


async def test_metric_columns_of_the_profiling_data_and_narrow_widths_drop_columns():
    events = build_events()
    seq = events[-1].seq
    events += [
        ev.ProfilingState(seq + 1, T0, True, True, ACL_PROF_AICORE_METRICS,
                          ACL_AICORE_PIPE_UTILIZATION, (0,), "/tmp/p", "aclmon", False,
                          ACL_PROF_AICORE_METRICS, ACL_AICORE_PIPE_UTILIZATION, (0,)),
        ev.OpTiming(seq + 2, T0, 1, "resnet50/conv1/Conv2D", "Conv2D", 0, 9, 9, 0,
                    {"aic_mac_ratio": 0.7, "aiv_vec_ratio": 0.05}),
    ]  # fmt: skip
    app = make_app(events=events)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        header = static_text(app, "#ops-header")
        assert "c.mac%" in header and "v.vec%" in header
        assert "PipeUtilization" in static_text(app, "#ops-title")
        table = app.query_one(OpTable)
        conv = next(i for i, o in enumerate(table.rows) if o.op_name.endswith("conv1/Conv2D"))
        row = table._render_row(conv, 150).plain
        assert "70%" in row and "5%" in row
        other = table._render_row((conv + 1) % len(table.rows), 150).plain
        assert "–" in other  # no metric values for that operator
    # Narrow: the operator's name keeps its room, the least important columns go.
    wide = [c.label for c in columns_for(156, ["aic_mac_ratio"])]
    narrow = [c.label for c in columns_for(76, ["aic_mac_ratio"])]
    assert {"OPERATOR", "TOTAL", "MODEL", "DEV", "COUNT", "MEAN"} <= set(narrow)
    assert "TYPE" in wide and "TYPE" not in narrow and len(narrow) < len(wide)
    assert sum(c.width + 1 for c in columns_for(76, ["aic_mac_ratio"])) - 1 <= 76
    assert metric_label("aic_main_mem_read_bw(GB/s)") == "c.mm_rd"


async def test_msproftx_marks_and_ranges_are_listed_newest_first():
    events = build_events()
    seq = events[-1].seq
    events += [
        ev.TxMark(seq + 1, T0 + 1_000_000_000, "epoch 1"),
        ev.TxRange(seq + 2, T0 + 2_000_000_000, "forward", T0, T0 + 12_500_000),
    ]
    app = make_app(events=events)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        strip = static_text(app, "#prof-tx")
        assert "1 marks · 1 ranges" in strip
        assert strip.index("forward 12.5 ms") < strip.index("epoch 1")


def profiling_to_files_events() -> list[ev.Event]:
    """The scenario, then a session to files with PipeUtilization metrics, a second
    model with an operator of the same name, and msproftx marks and ranges."""
    events = build_events()
    seq = events[-1].seq
    ts = events[-1].ts_ns
    extra: list[ev.Event] = [
        ev.ProfilingState(0, ts, True, True, ACL_PROF_AICORE_METRICS, ACL_AICORE_PIPE_UTILIZATION,
                          (0, 1), "/tmp/aclmon-prof", "aclmon", False, ACL_PROF_AICORE_METRICS,
                          ACL_AICORE_PIPE_UTILIZATION, (0, 1)),
        ev.ModelLoaded(0, ts, 3, 1, "detector_fp16", 2),
    ]  # fmt: skip
    shares = {"aic_mac_ratio": 0.71, "aic_scalar_ratio": 0.11, "aic_mte1_ratio": 0.3,
              "aic_mte2_ratio": 0.44, "aic_fixpipe_ratio": 0.17, "aiv_vec_ratio": 0.05,
              "aiv_mte2_ratio": 0.03, "aiv_mte3_ratio": 0.02}  # fmt: skip
    ops = [("resnet50/conv1/Conv2D", "Conv2D", 1, 0, 410), ("resnet50/fc/MatMulV2", "MatMulV2", 1,
           0, 98), ("resnet50/fc/MatMulV2", "MatMulV2", 3, 1, 131), ("head/Relu", "Relu", 3, 1, 14)]  # fmt: skip
    for rep in range(4):
        for name, op_type, model, device, base in ops:
            cube = op_type != "Relu"
            metrics = {k: v * (1.0 if k.startswith("aic_") == cube else 0.1) + rep / 100
                       for k, v in shares.items()}  # fmt: skip
            extra.append(ev.OpTiming(0, ts, model, name, op_type, 0, base + rep, base + rep,
                                     device, metrics))  # fmt: skip
    extra += [
        ev.TxMark(0, ts + 1_000_000, "epoch 3 begins"),
        ev.TxRange(0, ts + 2_000_000, "forward step 812", ts - 41_000_000, ts + 2_000_000),
        ev.TxRange(0, ts + 3_000_000, "allreduce grads", ts - 9_500_000, ts + 3_000_000),
    ]
    return events + [e._replace(seq=seq + 1 + i) for i, e in enumerate(extra)]


def test_snapshot_profiling_to_files_with_metrics_160x48(snap_compare):
    app = make_app(events=profiling_to_files_events())
    assert snap_compare(app, press=["3"], terminal_size=(160, 48))


def test_snapshot_profiling_to_files_with_metrics_80x24(snap_compare):
    app = make_app(events=profiling_to_files_events(), theme="aclmon-light")
    assert snap_compare(app, press=["3"], terminal_size=(80, 24))


def test_snapshot_profiling_table_focused_100x30(snap_compare):
    app = make_app(events=profiling_to_files_events())
    assert snap_compare(app, press=["3", "tab", "down", "s"], terminal_size=(100, 30))


# ------------------------------------------------------------ incremental order and redraw
_SORTS = ["total", "mean", "max", "min", "count", "last", "op", "type", "model", "device"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sort=st.sampled_from([*_SORTS, METRIC_SORT + "aic_mac_ratio"]),
    reverse=st.booleans(),
    ticks=st.lists(
        st.lists(
            st.tuples(
                st.integers(0, 11),  # which operator
                st.integers(0, 3),  # its device
                st.integers(1, 50),  # a duration (small: many ties)
                st.one_of(st.none(), st.floats(0, 1)),  # a metric value
            ),
            max_size=8,
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_the_incremental_order_is_the_full_sort_after_any_updates(sort, reverse, ticks):
    state = StoreState()
    table = OpTable()
    table.set_reactive(OpTable.sort, sort)
    table.set_reactive(OpTable.reverse, reverse)
    for tick in ticks:
        for op, device, duration, metric in tick:
            key = (device, 1, f"m/op{op % 6}")
            stats = state.ops.get(key)
            if stats is None:
                stats = state.ops[key] = OpStats(key[2], f"T{op % 3}", device, 1, "m")
                stats.min_us = duration
            stats.count += 1
            stats.total_us += duration
            stats.last_us = duration
            stats.max_us = max(stats.max_us, duration)
            stats.min_us = min(stats.min_us, duration)
            if metric is not None:
                stats.metric_sums["aic_mac_ratio"] = metric
                stats.metric_count = 1
        table._order(state)
        assert table.rows == sorted_ops(state, sort, reverse)


async def test_a_tick_where_three_operators_changed_draws_three_rows():
    app = make_app(events=with_many_ops())
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("3")
        await pilot.pause()
        table = app.query_one(OpTable)
        oplist = app.query_one(OpList)
        drawn: list[str] = []
        render = oplist._renderer

        def counting(index: int, width: int):
            drawn.append(table.rows[index].op_name)
            return render(index, width)

        oplist._renderer = counting
        table.show(app.store)  # nothing changed: nothing drawn
        await pilot.pause()
        assert drawn == []
        state = app.store.state
        visible = [o.op_name for o in table.rows[: oplist.scrollable_content_region.height]]
        changed = visible[-3:]  # three shown rows; each grows to the top of the order
        top = table.rows[0].total_us
        for name in changed:
            stats = next(o for o in state.ops.values() if o.op_name == name)
            stats.count += 1
            stats.total_us += top
            stats.last_us = top
        table.show(app.store)
        await pilot.pause()
        assert sorted(drawn) == sorted(changed)
        assert table.rows == app.store.sorted_ops(table.sort, table.reverse)
        assert {o.op_name for o in table.rows[:3]} == set(changed)
