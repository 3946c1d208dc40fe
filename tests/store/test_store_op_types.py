"""An exception's operator type, learned from whichever source names it first: the
live timings, a dump file's name, the CANN log's [AIC_INFO] line, before or after
the exception (pyACL's exception path names the operator, not its type)."""

from __future__ import annotations

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION as AICORE
from aclmon.store import Store

T0 = 1_700_000_000_000_000_000


def _exception(seq: int, op_name: str = "dense2/matmul", op_type: str = "") -> ev.AclException:
    return ev.AclException(seq, T0 + seq, 1, 21, 4, 100, AICORE, op_name, op_type, (), ())


def _aic_info(seq: int) -> ev.LogLine:
    text = "[AIC_INFO] node_name:dense2/matmul, node_type:MatMul, stream_id:21, task_id:4"
    return ev.LogLine(seq, T0 + seq, "error", text, "GE", 4242, "python", T0, "x.cc:1", "/p.log")


def _types(store: Store) -> list[str]:
    return [e["op_type"] for e in store.to_json()["exceptions"]["recent"]]


def test_the_cann_logs_line_after_the_exception_names_its_type():
    store = Store()
    store.apply_many([_exception(1), _exception(2, op_name="softmax")])
    assert _types(store) == ["", ""]
    store.apply(_aic_info(3))
    assert _types(store) == ["MatMul", ""]
    store.apply(_exception(4))  # the next one of that operator has it at once
    assert _types(store)[-1] == "MatMul"


def test_a_dump_name_or_a_timing_names_it_too():
    store = Store()
    store.apply_many([
        _exception(1),
        ev.DumpFileSeen(2, T0, "/d/extra-info/data-dump/1/MatMul.dense2_matmul.4.21.1700000000000001",
                        "exception-dump", 10, {}),
        _exception(3, op_name="softmax"),
        ev.OpTiming(4, T0, 1, "softmax", "SoftmaxV2", 0, 10, 10, 1),
        _exception(5, op_name="exception_info_named"),
        ev.DumpFileSeen(6, T0, "/d/extra-info/data-dump/1/exception_info.exception_info_named.4.17",
                        "exception-dump", 10, {}),
    ])  # fmt: skip
    assert _types(store) == ["MatMul", "SoftmaxV2", ""]  # exception_info names no type


def test_an_operator_seen_with_two_types_stays_unknown():
    store = Store()
    store.apply_many([
        ev.OpTiming(1, T0, 1, "dense2/matmul", "MatMul", 0, 10, 10, 1),
        ev.OpTiming(2, T0, 1, "dense2_matmul", "BatchMatMul", 0, 10, 10, 1),
        _exception(3),
    ])  # fmt: skip
    assert _types(store) == [""]
