"""The slice model: which lane each event becomes, nesting, flows, dumps, limits."""

from __future__ import annotations

import typing
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timelines import MS, STREAM_A, T0, THREAD_A, THREAD_B, Collected, Job, small_job

from aclmon import events as ev
from aclmon.events import schema
from aclmon.store.slice_lanes import LaneBook
from aclmon.store.slice_model import SliceModel
from aclmon.store.slice_survey import Survey
from aclmon.store.slices import (
    EXCEPTION,
    EXECUTION,
    FAILED_CALL,
    LOG,
    OPERATOR,
    OVERFLOW,
    SYNCHRONIZE,
    TX_MARK,
    TX_RANGE,
    UNFINISHED,
    NestingGuard,
    SourceLabel,
    WindowFilter,
)


def fold(events, **kwargs) -> tuple[SliceModel, Collected]:
    sink = Collected()
    model = SliceModel(sink, **kwargs)
    model.apply_many(events)
    model.finish()
    return model, sink


def test_every_kind_lands_on_its_lane():
    model, sink = fold(small_job().events)
    ops = sorted(sink.of(OPERATOR), key=lambda o: o.start_ns)
    assert [(o.name, o.lane.title, o.lane.process.name, o.lane.process.label) for o in ops] == [
        ("conv1", "Stream 3", "Ascend Hardware", "NPU 0"),
        ("relu1", "Stream 3", "Ascend Hardware", "NPU 0"),
        ("matmul", "Stream 5", "Ascend Hardware", "NPU 1"),
        ("conv1", "Stream 3", "Ascend Hardware", "NPU 0"),
        ("relu1", "Stream 3", "Ascend Hardware", "NPU 0"),
    ]
    assert [o.args["Execution"] for o in ops] == [1, 1, 1, 2, 2]
    calls = sink.of(EXECUTION) + sink.of(SYNCHRONIZE)
    assert {(c.name, c.lane.title) for c in calls} == {
        ("AscendCL@aclmdlExecuteAsync", "NPU 0 Stream 3 calls"),
        ("AscendCL@aclmdlExecuteAsync", "NPU 1 Stream 5 calls"),
        ("AscendCL@aclrtSynchronizeStream", "NPU 0 Stream 3 calls"),
        ("AscendCL@aclrtSynchronizeStream", "NPU 1 Stream 5 calls"),
    }
    assert all(c.lane.process.name == "CANN" and c.lane.process.label == "CPU" for c in calls)
    failed_sync = [c for c in sink.of(SYNCHRONIZE) if c.args.get("ret")]
    assert failed_sync[0].args["Thread Id"] == THREAD_A  # from its slow Begin
    (exception,) = sink.of(EXCEPTION)
    assert exception.lane.title == "Stream 3" and exception.ts_ns == T0 + round(21.2 * MS)
    assert exception.args["Op Name"] == "relu1" and exception.args["Task Id"] == 7
    assert exception.args["Dump Path"] == "/d/extra-info/data-dump/0/exception_info.relu1.7.1"
    (overflow,) = sink.of(OVERFLOW)
    assert overflow.lane.title == "Stream 5" and overflow.lane.process.label == "NPU 1"
    assert overflow.ts_ns == T0 + 13 * MS  # when it overflowed, from the file's stamp
    assert overflow.args["OP Type"] == "MatMul" and overflow.args["Status"] == "AI Core: overflow"
    (failed,) = sink.of(FAILED_CALL)
    assert failed.lane.process.name == "CANN" and failed.lane.title == "Thread 1"
    assert failed.args["Physic Stream Id"] == 3
    (log,) = sink.of(LOG)  # warnings and errors only, at the time the log states
    assert log.name == "error: aicore error" and log.ts_ns == T0 + round(21.3 * MS)
    assert log.lane.title == "log warnings and errors" and log.args["Module"] == "RUNTIME"
    (unfinished,) = sink.of(UNFINISHED)
    assert unfinished.lane.title == "NPU 1 Stream 5 calls"
    assert unfinished.end_ns == T0 + 30 * MS  # the last event seen
    assert {c.name for c in sink.counters} == {
        "Utilization(%)", "Temperature(C)", "Power(W)", "HBM(MB)", "CPU Usage(%)",
        "Memory Usage(MB)",
    }  # fmt: skip
    assert model.counts[OPERATOR] == 5 and model.counts["flow"] == 3


def test_an_operator_that_comes_before_its_execution_end_still_finds_it():
    job = Job().setup()
    job.execution(1, STREAM_A, 10, [("a", 10.3, 10.5), ("b", 10.5, 11)], ops_first=2)
    job.execution(1, STREAM_A, 20, [("a", 20.3, 20.5), ("b", 20.5, 21)], ops_first=1)
    _, sink = fold(job.events)
    ops = sorted(sink.of(OPERATOR), key=lambda o: o.start_ns)
    assert [(o.name, o.args["Execution"]) for o in ops] == [
        ("a", 1), ("b", 1), ("a", 2), ("b", 2),
    ]  # fmt: skip
    # each execution's launch flows to its first operator, on the stream
    executions = sink.of(EXECUTION)
    assert [(f.source, f.source_ns, f.target.title, f.target_ns) for f in sink.flows] == [
        (executions[0].lane, executions[0].start_ns, "Stream 3", T0 + round(10.3 * MS)),
        (executions[1].lane, executions[1].start_ns, "Stream 3", T0 + round(20.3 * MS)),
    ]
    assert [f.flow_id for f in sink.flows] == [1, 2]


def test_a_quiet_source_settles_on_the_viewers_clock():
    job = Job().setup()
    job.execution(1, STREAM_A, 10, [("a", 10.3, 10.5)])
    sink = Collected()
    model = SliceModel(sink)
    model.apply_many(job.events)
    assert not sink.of(OPERATOR)  # waiting for the next execution of its model
    model.settle(T0 + 500 * MS)
    assert not sink.of(OPERATOR)
    model.settle(T0 + 1200 * MS)  # a second after it came
    assert [o.args["Execution"] for o in sink.of(OPERATOR)] == [1]


def test_operators_of_a_model_never_executed_go_to_its_own_lane():
    job = Job().setup()
    job.at(5).add(ev.OpTiming, 1, "conv1", "Conv2D", T0 // 1000 + 5000, T0 // 1000 + 5100, 100)
    _, sink = fold(job.events)
    (op,) = sink.of(OPERATOR)
    assert op.lane.title == "Model resnet (stream not known)" and op.lane.process.label == "NPU 0"
    assert "Physic Stream Id" not in op.args


def test_single_operator_launches_go_at_once_to_their_devices_lane():
    job = Job().setup()
    job.execution(1, STREAM_A, 10, [("conv1", 10.3, 11.0)])
    # acl.op launches (model 0): as the agent publishes them, op type for name
    job.at(12).add(ev.OpTiming, 0, "Add", "Add", T0 // 1000 + 11_500, T0 // 1000 + 11_900, 400, 0)
    job.at(13).add(
        ev.OpTiming, 0, "Cast", "Cast", T0 // 1000 + 12_500, T0 // 1000 + 12_600, 100, -1
    )
    sink = Collected()
    model = SliceModel(sink)
    model.apply_many(job.events)  # no finish(): nothing of model 0 waits for an execution
    single = [o for o in sink.of(OPERATOR) if o.args.get("OP Type") in ("Add", "Cast")]
    assert [(o.name, o.lane.title, o.lane.process.label) for o in single] == [
        ("Add", "single operators (stream not known)", "NPU 0"),
        ("Cast", "single operators (stream not known)", "NPU ?"),
    ]
    assert single[0].start_ns == T0 + round(11.5 * MS) and single[0].end_ns == T0 + round(11.9 * MS)
    assert "Model Id" not in single[0].args and "Execution" not in single[0].args
    model.finish()
    assert model.counts[OPERATOR] == 3  # conv1 found its execution as before
    assert not sink.flows[1:]  # a launch flows to its model's first operator only


def test_timings_that_name_their_stream_or_task_type_go_at_once_to_their_device():
    # as read from msprof's files: device, stream, task and task type known
    us = T0 // 1000
    events = [
        ev.OpTiming(1, T0 + 2 * MS, 1, "conv1", "Conv2D", us + 1_000, us + 2_000, 1_000, 0,
                    {"aic_mac_ratio": 0.5}, 7, 11, "AI_CORE"),
        ev.OpTiming(2, T0 + 3 * MS, 0, "MemcpyAsync", "", us + 2_500, us + 3_000, 500, 1,
                    {}, 9, 12, "MEMCPY_ASYNC"),
        # a communication operator: its task type, but no stream or task
        ev.OpTiming(3, T0 + 5 * MS, 0, "hcom_allReduce_1", "hcom_allReduce", us + 4_000,
                    us + 5_000, 1_000, 0, {}, -1, -1, "COMMUNICATION"),
    ]  # fmt: skip
    sink = Collected()
    SliceModel(sink).apply_many(events)  # no finish(): nothing waits
    ops = sink.of(OPERATOR)
    assert [(o.name, o.lane.title, o.lane.process.label) for o in ops] == [
        ("conv1", "Stream 7", "NPU 0"),
        ("MemcpyAsync", "Stream 9", "NPU 1"),
        ("hcom_allReduce_1", "stream not known", "NPU 0"),
    ]
    assert ops[0].args == {
        "Model Id": 1, "Physic Stream Id": 7, "OP Type": "Conv2D", "Task Id": 11,
        "Task Type": "AI_CORE", "aic_mac_ratio": 0.5,
    }  # fmt: skip
    assert "OP Type" not in ops[1].args and ops[1].args["Task Type"] == "MEMCPY_ASYNC"
    assert "Physic Stream Id" not in ops[2].args and "Task Id" not in ops[2].args
    assert ops[0].start_ns == T0 + MS and ops[0].end_ns == T0 + 2 * MS


def test_a_slice_that_would_cross_another_goes_to_the_overlapping_lane():
    job = Job().setup()
    job.sync(STREAM_A, 10, 20)
    job.sync(STREAM_A, 12, 14)  # inside: nests
    job.sync(STREAM_A, 15, 25)  # crosses the first: may not share its lane
    job.sync(STREAM_A, 26, 27)
    _, sink = fold(job.events)
    lanes = [s.lane for s in sink.of(SYNCHRONIZE)]
    assert [lane.title for lane in lanes] == [
        "NPU 0 Stream 3 calls", "NPU 0 Stream 3 calls", "NPU 0 Stream 3 calls (overlapping)",
        "NPU 0 Stream 3 calls",
    ]  # fmt: skip
    assert [lane.nested for lane in lanes] == [True, True, False, True]


def test_the_nesting_guard_refuses_what_it_cannot_prove():
    guard = NestingGuard(memory=1)
    assert guard.admit(0, 10) and guard.admit(2, 4) and guard.admit(10, 12)
    assert not guard.admit(11, 13)  # crosses [10, 12]
    assert guard.admit(12, 12)  # touching is not crossing
    assert not guard.admit(1, 3)  # before the horizon: [0, 10] was let go
    assert guard.horizon == 10


def test_msproftx_ranges_on_one_thread_nest_there_and_ranges_across_threads_go_async():
    _, sink = fold(small_job().events)
    ranges = {r.name: r for r in sink.of(TX_RANGE)}
    assert ranges["forward"].lane is ranges["step 1"].lane
    assert ranges["forward"].lane.title == "Thread 1" and ranges["forward"].lane.nested
    assert ranges["forward"].lane.process.name == "job.py"  # msprof: the host process
    across = ranges["request 7"]
    assert not across.lane.nested and across.lane.title == "ranges across threads"
    assert across.args == {"Thread Id": THREAD_A, "End Thread Id": THREAD_B}
    (mark,) = sink.of(TX_MARK)
    assert mark.lane.title == "Thread 2" and mark.lane.thread == THREAD_B


def test_msproftx_of_an_older_source_without_threads():
    job = Job().setup()
    job.events.append(ev.TxRange(50, T0 + 5 * MS, "old", T0, T0 + 5 * MS))
    job.events.append(ev.TxMark(51, T0 + 6 * MS, "old mark"))
    _, sink = fold(job.events)
    assert not sink.of(TX_RANGE)[0].lane.nested
    assert sink.of(TX_MARK)[0].lane.title == "thread not known"


def test_an_exception_waits_for_its_dump_but_not_for_ever():
    job = Job().setup()
    job.at(1).add(ev.AclException, 0, 3, 7, 99, 507015, "relu1", "Relu", (), ())
    job.at(12_000).add(ev.DeviceSample, 0, 1, 1, 1, 1, 2, "OK", None, None)  # 12 s later
    job.at(12_001).add(ev.DumpFileSeen, "/d/extra-info/data-dump/0/x.7.1", "exception-dump", 1,
                       {"task_id": 7})  # fmt: skip
    _, sink = fold(job.events)
    (exception,) = sink.of(EXCEPTION)
    assert "Dump Path" not in exception.args


def test_a_dump_directory_known_beforehand_names_the_dump_at_once_and_overflows_show_once():
    job = small_job()
    dump = ev.DumpFileSeen(0, T0, "/elsewhere/extra-info/data-dump/0/exception_info.relu1.7.1",
                           "exception-dump", 100, {"task_id": 7})  # fmt: skip
    sink = Collected()
    model = SliceModel(sink)
    model.learn_dumps([dump])
    model.apply_many(job.events)
    # the directory's copy of the overflow the recording announced, at another root
    overflow = next(e for e in job.events if type(e) is ev.DumpFileSeen and e.kind == "overflow")
    model.apply(overflow._replace(path="/moved" + overflow.path.removeprefix("/d")))
    model.finish()
    assert sink.of(EXCEPTION)[0].args["Dump Path"] == dump.path
    assert len(sink.of(OVERFLOW)) == 1


def test_fleet_sources_get_their_own_process_groups_and_labels():
    seen = []
    ids = iter(range(1, 100))
    for group, rank in ((1, 0), (2, 1)):
        sink = Collected()
        model = SliceModel(sink, source=SourceLabel(group=group), flow_ids=ids)
        model.apply_many(small_job(rank).events)
        model.finish()
        seen.append(sink)
    labels = [{s.lane.process.label for s in sink.of(OPERATOR)} for sink in seen]
    assert labels == [{"NPU 0,rank 0", "NPU 1,rank 0"}, {"NPU 0,rank 1", "NPU 1,rank 1"}]
    pids = [{s.lane.process.pid for s in sink.slices} for sink in seen]
    assert not pids[0] & pids[1]
    flow_ids = [f.flow_id for sink in seen for f in sink.flows]
    assert flow_ids == sorted(set(flow_ids))  # one counter: unique in one trace
    process = seen[0].of(OPERATOR)[0].lane.process
    assert process.pid & 31 == 0 and (process.pid >> 5) & 31 == 14  # msprof: device, layer


def test_a_window_keeps_what_overlaps_it():
    sink = Collected()
    model = SliceModel(WindowFilter(sink, T0 + 20 * MS, T0 + 21 * MS))
    model.apply_many(small_job().events)
    model.finish()
    assert {s.name for s in sink.of(OPERATOR)} == {"conv1", "relu1"}
    assert all(s.end_ns >= T0 + 20 * MS and s.start_ns <= T0 + 21 * MS for s in sink.slices)
    assert not sink.of(EXCEPTION) and not sink.counters


def test_survey_sees_the_earliest_start_and_the_executions():
    survey = Survey(executions={})
    survey.add_many(small_job(rank=2).events)
    assert survey.rank == 2 and survey.models == {1: "resnet", 2: "bert"}
    assert survey.earliest_ns == T0 + 9 * MS  # "step 1", which ends at 24 ms
    assert survey.first_ns == T0 and survey.last_ns == T0 + 30 * MS
    assert survey.execution_count(1) == 2 and survey.execution_count(3) == 0
    assert survey.iterations(1, 1, 1) == (T0 + 10 * MS, T0 + 20 * MS - 1)  # to the next call
    assert survey.iterations(1, 2) == (T0 + 20 * MS, T0 + round(21.5 * MS))  # to its last op


def test_streams_named_by_handle_alone_follow_the_stores_rule():
    job = Job().setup()
    job.sync(0xDEAD, 1, 2)  # no StreamCreated for it
    job.sync(ev.DEVICE_SYNC, 3, 4)  # two devices, no current context: not known
    job.at(5).add(ev.ContextCurrent, 0xA1, THREAD_A)
    job.sync(ev.DEVICE_SYNC, 6, 7)  # the device of the context made current last
    _, sink = fold(job.events)
    titles = [s.lane.title for s in sink.of(SYNCHRONIZE)]
    assert titles == ["NPU ? stream 0xdead calls", "NPU ? device calls", "NPU 1 device calls"]


def test_too_many_lanes_share_one():
    book = LaneBook(SourceLabel())
    lanes = {book.stream(0, n) for n in range(5000)}
    assert len(lanes) == 4097 and any(not lane.nested for lane in lanes)


_int = st.one_of(st.integers(-(2**63), 2**64 - 1), st.sampled_from([0, -1, 3, 5, 7, STREAM_A]))
_text = st.text(max_size=40)
_plain = st.one_of(_int, _text, st.floats(allow_nan=True), st.none(), st.booleans())
_tensor = st.tuples(_int, _int, st.tuples(_int), _int, _int, _text)


def _field(annotation: Any) -> st.SearchStrategy[Any]:
    text = str(annotation)
    if text.startswith("tuple[aclmon") or "TensorDesc" in text:
        return st.lists(_tensor, max_size=2).map(tuple)
    if text.startswith("tuple"):
        return st.lists(st.one_of(_int, _text), max_size=3).map(tuple)
    if "dict" in text or annotation is ev.Summary:
        return st.dictionaries(_text, st.one_of(_plain, st.lists(_plain, max_size=3)), max_size=4)
    if annotation is float or "float" in text:
        return st.one_of(st.floats(allow_nan=True), _int, st.none())
    if annotation is bool:
        return st.booleans()
    if annotation is str:
        return _text
    return _int


@st.composite
def hostile_event(draw: Any) -> Any:
    """An event as a hostile peer or file may send it, through the real decoder."""
    cls = draw(st.sampled_from([k for k in ev.KINDS.values() if k not in ev.COMMAND_KINDS]))
    hints = typing.get_type_hints(cls, globalns=vars(schema))
    fields = [draw(_field(hints[name])) for name in cls._fields[2:]]
    return (cls.KIND, draw(st.integers(0, 2**40)), draw(_int), *fields)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hostile_event(), max_size=30))
def test_hostile_events_never_break_the_model_and_always_make_a_valid_trace(
    tmp_path_factory, arrays
):
    from aclmon.store.trace import TraceWriter
    from aclmon.store.trace_check import check_trace

    decoder = ev.EventDecoder()
    events = [e for e in (decoder.decode(a) for a in arrays) if e is not None]
    out = tmp_path_factory.mktemp("hostile") / "t.json"
    writer = TraceWriter(out, origin_ns=T0 - 10**12)
    model = SliceModel(writer)
    model.apply_many(small_job().events[:9] + events)
    model.finish()
    for path in writer.close():
        report = check_trace(path)
        assert report.ok, report.lines()
