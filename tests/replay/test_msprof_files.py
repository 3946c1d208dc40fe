"""msprof's exported files read as events (aclmon.sources.msprof_files): each
parser on files in msprof's exact layouts, the tolerance rules, and hypothesis:
no input makes a parser raise, and what it emits encodes and decodes."""

from __future__ import annotations

import csv
import io
import json

import msprof_exports as fx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclmon import events as ev
from aclmon.sources.msprof_files import (
    MsprofReader,
    msprof_events,
    msprof_file_kind,
    parse_op_summary,
    parse_timeline,
    parse_tx_csv,
)
from aclmon.sources.replay_inputs import find_inputs


def _by_name(events: list[ev.Event]) -> dict[str, ev.OpTiming]:
    return {e.op_name: e for e in events if type(e) is ev.OpTiming}


def test_the_hand_written_files_have_msprofs_column_counts():
    for header, rows in ((fx.OP_SUMMARY_HEADER, fx.OP_SUMMARY_ROWS), (fx.TX_HEADER, fx.TX_ROWS)):
        width = len(header.split(","))
        for row in rows:
            assert len(next(csv.reader(io.StringIO(row)))) == width, row


def test_file_names_msprof_writes_are_recognised():
    assert msprof_file_kind("op_summary_20241203081230.csv") == "op_summary"
    assert msprof_file_kind("op_summary_0_1_1.csv") == "op_summary"  # older CANN
    assert msprof_file_kind("msprof_20241203081230.json") == "timeline"
    assert msprof_file_kind("msprof_slice_0_20241203081230.json") == "timeline"
    assert msprof_file_kind("msprof_tx_20241203081230.json") == "timeline"
    assert msprof_file_kind("msprof_tx_20241203081230.csv") == "msprof_tx"
    for other in ("op_statistic_1.csv", "msprof_analysis_0.log", "task_time.csv", "info.json"):
        assert msprof_file_kind(other) is None


def test_op_summary_rows_are_operator_timings_with_stream_task_and_metrics():
    parsed = parse_op_summary(fx.op_summary_text().encode(), "op_summary.csv")
    ops = _by_name(parsed.events)
    assert sorted(ops) == [
        "hcom_allReduce_1", "resnet/cast/Cast", "resnet/conv1/Conv2D", "resnet/relu1/Relu",
    ]  # fmt: skip
    conv = ops["resnet/conv1/Conv2D"]
    # start 1733212345678901.234 µs, exactly (no float rounding), to whole µs
    assert conv.start_us == 1733212345678901 and conv.end_us == 1733212345679022
    assert conv.duration_us == 121 and conv.ts_ns == conv.end_us * 1000
    assert (conv.device_id, conv.model_id, conv.stream_id, conv.task_id) == (0, 1, 2, 11)
    assert (conv.op_type, conv.task_type) == ("Conv2D", "AI_CORE")
    assert conv.metrics["aic_mac_ratio"] == pytest.approx(0.678)
    assert conv.metrics["cube_utilization(%)"] == pytest.approx(71.3)
    assert conv.metrics["aicore_time(us)"] == pytest.approx(118.2)
    assert not any(name.startswith("aiv_") for name in conv.metrics)  # N/A: not known, not 0
    assert "Block Num" not in conv.metrics and "Task Wait Time(us)" not in conv.metrics
    relu = ops["resnet/relu1/Relu"]
    assert relu.metrics["aiv_vec_ratio"] == pytest.approx(0.757)
    assert relu.metrics["aiv_icache_miss_rate"] == 0.0  # a real 0 stays 0
    assert ops["resnet/cast/Cast"].metrics == {}
    allreduce = ops["hcom_allReduce_1"]
    assert (allreduce.stream_id, allreduce.task_id, allreduce.model_id) == (-1, -1, 0)
    assert allreduce.task_type == "COMMUNICATION"
    # the MatMul row has no start time: skipped and said
    assert parsed.problems == ["op_summary.csv: 1 row(s) without a start or a duration"]


def test_missing_and_unknown_columns_and_short_rows():
    text = "Op Name,Task Duration(us),Task Start Time(us),Surprise\nA,2,10,x\nB,NA,11\nC,3,20\n"
    ops = _by_name(parse_op_summary(text.encode()).events)
    assert sorted(ops) == ["A", "C"]
    assert ops["A"].device_id == -1 and ops["A"].stream_id == -1 and ops["A"].op_type == ""
    assert ops["A"].metrics == {}


def test_a_truncated_csv_is_read_to_its_last_whole_row_and_says_so_once():
    data = fx.op_summary_text().encode()
    cut = data[: data.index(b"resnet/cast") + 4]
    parsed = parse_op_summary(cut, "op.csv")
    assert sorted(_by_name(parsed.events)) == ["resnet/conv1/Conv2D", "resnet/relu1/Relu"]
    assert [p for p in parsed.problems if "truncated" in p] == [
        "op.csv: truncated; read up to its last whole row"
    ]


def test_tx_csv_ranges_and_marks_on_their_thread():
    events = parse_tx_csv(fx.tx_text().encode()).events
    (span,) = [e for e in events if type(e) is ev.TxRange]
    (mark,) = [e for e in events if type(e) is ev.TxMark]
    assert span.message == "step 1" and span.thread_id == span.end_thread_id == 4243
    assert span.start_ns == 1733212345678800_000 and span.end_ns == span.ts_ns
    assert span.end_ns - span.start_ns == 600_000
    assert mark.message == "checkpoint" and mark.ts_ns == 1733212345679000_000
    assert mark.thread_id == 4243


def test_timeline_device_tasks_and_msproftx_and_what_is_left_out():
    parsed = parse_timeline(json.dumps(fx.timeline_events()).encode(), "msprof.json")
    ops = _by_name(parsed.events)
    assert sorted(ops) == [
        "MemcpyAsync", "resnet/cast/Cast", "resnet/conv1/Conv2D", "resnet/relu1/Relu",
    ]  # fmt: skip
    memcpy = ops["MemcpyAsync"]
    assert (memcpy.device_id, memcpy.stream_id, memcpy.task_id) == (0, 2, 15)
    assert memcpy.task_type == "MEMCPY_ASYNC" and memcpy.op_type == ""
    assert ops["resnet/conv1/Conv2D"].start_us == 1733212345678901
    (span,) = [e for e in parsed.events if type(e) is ev.TxRange]
    assert span.message == "step 1" and span.thread_id == 4243
    assert parsed.problems == [
        "msprof.json: 1 slice(s) that are not device tasks or msproftx ranges"
        " (CANN API calls, other layers) left out"
    ]


def test_the_object_form_and_a_truncated_array():
    items = fx.timeline_events()
    wrapped = json.dumps({"traceEvents": items, "displayTimeUnit": "ns"}).encode()
    assert len(parse_timeline(wrapped).events) == 5
    whole = json.dumps(items).encode()
    cut = whole[: whole.index(b'"MemcpyAsync"') + 5]
    parsed = parse_timeline(cut, "cut.json")
    assert sorted(_by_name(parsed.events)) == [
        "resnet/cast/Cast", "resnet/conv1/Conv2D", "resnet/relu1/Relu",
    ]  # fmt: skip
    assert [p for p in parsed.problems if "truncated" in p] == [
        "cut.json: truncated or damaged after 13 event(s); read up to there"  # 10 M, 3 tasks
    ]


def test_a_session_directory_is_found_and_each_task_read_once(tmp_path):
    output = fx.write_session(tmp_path)
    found = find_inputs(tmp_path)
    assert sorted(p.name for p in found.msprof_files) == sorted(p.name for p in output.iterdir())
    assert not found.recordings and not found.dump_files and not found.log_files
    events, problems = msprof_events(found.msprof_files, first_seq=5)
    ops = [e for e in events if type(e) is ev.OpTiming]
    # op_summary's four plus the timeline's MemcpyAsync; its three others are op_summary's
    assert sorted(e.op_name for e in ops) == [
        "MemcpyAsync", "hcom_allReduce_1", "resnet/cast/Cast", "resnet/conv1/Conv2D",
        "resnet/relu1/Relu",
    ]  # fmt: skip
    conv = _by_name(events)["resnet/conv1/Conv2D"]
    assert conv.op_type == "Conv2D" and conv.metrics  # op_summary's row won
    assert sum(type(e) is ev.TxRange for e in events) == 1  # the CSV's and the JSON's: one
    assert sum(type(e) is ev.TxMark for e in events) == 1
    assert [e.seq for e in events] == list(range(5, 5 + len(events)))
    assert [e.ts_ns for e in events] == sorted(e.ts_ns for e in events)
    assert len(problems) == 2


def test_a_file_read_again_gives_only_what_is_new(tmp_path):
    path = tmp_path / "op_summary_1.csv"
    rows = fx.OP_SUMMARY_ROWS
    path.write_text("\n".join((fx.OP_SUMMARY_HEADER, rows[0])) + "\n")
    reader = MsprofReader()
    assert [e.op_name for e in reader.read(path)] == ["resnet/conv1/Conv2D"]
    path.write_text("\n".join((fx.OP_SUMMARY_HEADER, rows[0], rows[1])) + "\n")
    assert [e.op_name for e in reader.read(path)] == ["resnet/relu1/Relu"]


# ---------------------------------------------------------------- hypothesis
CELLS = st.one_of(
    st.sampled_from(["N/A", "NA", "", "nan", "inf", "-1", "1e400", "4294967295", "\t1.5\t"]),
    st.text(max_size=12),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True).map(str),
)
OP_HEADER = fx.OP_SUMMARY_HEADER.split(",")


def _csv(header: list[str], rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def _round_trips(events: list[ev.Event]) -> None:
    decoder = ev.EventDecoder()
    for event in events:
        assert decoder.decode(ev.unpack_payload(ev.encode(event))) == event


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(CELLS, max_size=len(OP_HEADER) + 2), max_size=6), st.binary(max_size=64))
def test_op_summary_never_raises_and_its_events_encode(rows, tail):
    for data in (_csv(OP_HEADER, rows), _csv(OP_HEADER, rows) + tail, tail):
        _round_trips(parse_op_summary(data).events)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(CELLS, max_size=16), max_size=6), st.binary(max_size=64))
def test_tx_csv_never_raises_and_its_events_encode(rows, tail):
    header = fx.TX_HEADER.split(",")
    for data in (_csv(header, rows), _csv(header, rows) + tail, tail):
        _round_trips(parse_tx_csv(data).events)


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8), CELLS),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
TRACE_EVENTS = st.fixed_dictionaries(
    {},
    optional={
        "ph": st.sampled_from(["X", "M", "C", "s", "f", "i"]) | JSON_VALUES,
        "pid": st.sampled_from([fx.HARDWARE_PID, fx.TX_PID, fx.CANN_PID]) | JSON_VALUES,
        "tid": JSON_VALUES,
        "ts": CELLS | JSON_VALUES,
        "dur": CELLS | JSON_VALUES,
        "name": JSON_VALUES,
        "args": JSON_VALUES,
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TRACE_EVENTS, max_size=8), st.integers(0, 400), st.binary(max_size=64))
def test_timeline_never_raises_and_its_events_encode(items, cut, noise):
    whole = json.dumps(fx.timeline_events()[:6] + items).encode()
    for data in (whole, whole[:cut], noise, b"{" + noise, b"[" * 5000):
        _round_trips(parse_timeline(data).events)
