"""Plog entries to events (aclmon watch): log lines, failed calls, exceptions; never raises."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon import events as ev
from aclmon.dump.plog import parse_text
from aclmon.events.codec import EventDecoder, encode
from aclmon.sources.plog_events import PlogEvents, failed_call, pyacl_name

PID = 4242
HEAD = "[ERROR] {module}(4242,python3):2025-12-15-11:30:10.{ms:03d}.394 [{where}]4242 {func}: "

#: one vector-core error as a 910B job's plog holds it (texts: vllm-ascend and
#: bitsandbytes issues quoted in docs/reference/aicore_errors.md), in the plog layout
DEVICE_ERROR = [
    ("RUNTIME", "device_error_proc.cc:1434", "ProcessStarsCoreErrorInfo",
     "The error from device(chipId:6, dieId:0), serial number is 232, there is an aivec error"
     " exception, core id is 15, error code = 0x800000, dump info: pc start: 0x124837587968,"
     " current: 0x124837588284, vec error info: 0x680000016f, mte error info: 0x200600006b,"
     " ifu error info: 0x2000111ee30c0, ccu error info: 0x8a6d50d07a800075, cube error info: 0,"
     " biu error info: 0, aic error mask: 0x6500020bd000288, para base: 0x124100433000."),
    ("RUNTIME", "device_error_proc.cc:1446", "ProcessStarsCoreErrorInfo",
     "The extend info: errcode:(0x800000, 0, 0) errorStr: The DDR address of the MTE instruction"
     " is out of range. fixp_error0 info: 0x600006b, fixp_error1 info: 0x20, fsmId:0, tslot:4,"
     " thread:0, ctxid:0, blk:36, sublk:0, subErrType:4."),
    ("RUNTIME", "stream.cc:1191", "GetError",
     "Aicore kernel execute failed, device_id=6, stream_id=2, report_stream_id=2, task_id=31025,"
     " flip_num=554, fault kernel_name=dequantize_blockwise_46, fault kernel info"
     " ext=dequantize_blockwise, program id=480, hash=15313142709528210228."),
    ("GE", "error_tracking.cc:172", "ProcessException",
     "[AIC_INFO] node_name:dequant_nf4, node_type:DequantizeNf4, stream_id:2, task_id:31025"),
    ("RUNTIME", "error_message_manage.cc:53", "FuncErrorReason",
     "rtDeviceSynchronizeWithTimeout execute failed, reason=[vector core exception]"),
    ("ASCENDCL", "log_inner.cpp:161", "ReportCallError",
     "wait for compute device to finish failed, runtime result = 507035."),
]  # fmt: skip


def plog_text(messages: list[tuple[str, str, str, str]] = DEVICE_ERROR) -> str:
    return "".join(
        HEAD.format(module=module, ms=n, where=where, func=func) + text + "\n"
        for n, (module, where, func, text) in enumerate(messages)
    )


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def derive(text: str, *, final: bool = True) -> list[ev.Event]:
    entries, _ = parse_text(text)
    events = PlogEvents(ev.Clock())
    return events.entries(entries, "/x/plog-4242_1.log") + events.settle(final)


def test_a_device_error_is_one_exception_with_its_operator_code_and_task() -> None:
    out = derive(plog_text())
    (exception,) = [e for e in out if isinstance(e, ev.AclException)]
    assert (exception.device_id, exception.stream_id, exception.task_id) == (6, 2, 31025)
    assert exception.error_code == 507035
    assert (exception.op_name, exception.op_type) == ("dequant_nf4", "DequantizeNf4")
    assert exception.ts_ns > 0  # the time the device's line states
    lines = [e for e in out if isinstance(e, ev.LogLine)]
    assert len(lines) == len(DEVICE_ERROR)
    assert all(line.level == "error" and line.pid == PID for line in lines)
    assert [line.module for line in lines][:2] == ["RUNTIME", "RUNTIME"]


def test_the_synchronize_that_met_the_error_is_a_failed_call() -> None:
    (failure,) = [e for e in derive(plog_text()) if isinstance(e, ev.CallFailed)]
    assert failure.ret == 507035
    assert failure.message.startswith("wait for compute device to finish failed")
    assert failure.thread_id == PID


def test_an_exception_waits_until_its_lines_stop_coming() -> None:
    clock = Clock()
    events = PlogEvents(ev.Clock(), monotonic=clock)
    entries, _ = parse_text(plog_text(DEVICE_ERROR[:2]))
    events.entries(entries, "f")
    assert events.settle() == []
    clock.now += 1.0
    more, _ = parse_text(plog_text(DEVICE_ERROR[2:4]))
    events.entries(more, "f")  # the task's lines go on: the clock starts again
    clock.now += 1.0
    assert events.settle() == []
    clock.now += 1.0
    (exception,) = [e for e in events.settle() if isinstance(e, ev.AclException)]
    assert exception.op_name == "dequant_nf4"
    clock.now += 10
    assert events.settle() == []  # once


def test_a_triage_follows_each_exception_when_asked_for() -> None:
    entries, _ = parse_text(plog_text())
    events = PlogEvents(ev.Clock(), triage_of=lambda error: {"verdict": error.node_name})
    out = events.entries(entries, "f") + events.settle(final=True)
    (triage,) = [e for e in out if isinstance(e, ev.Triage)]
    (exception,) = [e for e in out if isinstance(e, ev.AclException)]
    assert triage.triage == {"verdict": "dequant_nf4"}
    assert triage.exception_ts_ns == exception.ts_ns and triage.task_id == 31025


def test_failed_calls_in_the_wordings_of_the_runtime() -> None:
    cases = {
        "12 aclrtSynchronizeStream: Stream synchronize failed, stream_id=2, retCode=0x26,"
        " result = 507015 (ACL_ERROR_RT_AICORE_EXCEPTION)": ("rt.synchronize_stream", 507015),
        "12 Exec: aclmdlExecute failed, error code is 507011": ("mdl.execute", 507011),
        "NPU function error: call aclnnRepeatInterleaveIntWithDim failed, error code is 507018": (
            "aclnnRepeatInterleaveIntWithDim",
            507018,
        ),
        "7 ReportCallError: wait for compute device to finish failed, runtime result = 507035.": (
            "",
            507035,
        ),
    }
    for text, wanted in cases.items():
        (entry,) = parse_text(HEAD.format(module="X", ms=0, where="a:1", func="f"))[0]
        found = failed_call(dataclasses.replace(entry, text=text))
        assert found is not None and found[:2] == wanted, text
    (warning,), _ = parse_text(
        "[WARNING] GE(1,p):2025-01-01-00:00:00.000.000 call failed, result = 507011"
    )
    assert failed_call(warning) is None  # a warning is not a failed call
    (no_code,), _ = parse_text(
        "[ERROR] GE(1,p):2025-01-01-00:00:00.000.000 load failed, result = 12"
    )
    assert failed_call(no_code) is None  # not an ACL code


def test_pyacl_names_of_c_calls() -> None:
    assert pyacl_name("aclrtSynchronizeStream") == "rt.synchronize_stream"
    assert pyacl_name("aclmdlExecuteAsync") == "mdl.execute_async"
    assert pyacl_name("aclopExecuteV2") == "op.execute_v2"
    assert pyacl_name("rtStreamSynchronize") == "rtStreamSynchronize"
    assert pyacl_name("aclrt") == "aclrt"


def test_info_lines_and_lines_of_no_entry_make_nothing() -> None:
    text = "garbage before\n[INFO] GE(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]ok\n"
    assert derive(text) == []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=200),
            st.sampled_from([plog_text().splitlines()[i] for i in range(len(DEVICE_ERROR))]),
            st.builds(
                lambda level, text: f"[{level}] RUNTIME(1,p):2025-01-01-00:00:00.000.000 {text}",
                st.sampled_from(["ERROR", "WARNING", "INFO", "EVENT"]),
                st.text(max_size=300),
            ),
        ),
        max_size=40,
    )
)
def test_any_lines_never_raise(lines: list[str]) -> None:
    entries, _ = parse_text("\n".join(lines))
    events = PlogEvents(ev.Clock())
    out = events.entries(entries, "f") + events.settle(final=True)
    for event in out:
        assert type(event) in (ev.LogLine, ev.CallFailed, ev.AclException)
        assert EventDecoder().decode_payload(encode(event)) == event  # as recorded
