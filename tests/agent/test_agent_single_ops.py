"""The agent watches single-operator launches as it watches model executions: each
launch is an operator timing, a failed operator is an exception naming it, a failed
launch a CallFailed."""

from __future__ import annotations

import numpy as np
from agenthelpers import agent_factory, sim_acl  # noqa: F401 (fixtures)

from aclmon.acl_constants import (
    ACL_ERROR_OP_NOT_FOUND,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_FLOAT,
    ACL_FORMAT_ND,
)
from aclmon.events import AclException, CallFailed, LogLine, OpTiming, Triage
from aclmon.sim import config


def _tensor(acl, array: np.ndarray) -> tuple[int, int]:
    desc = acl.create_tensor_desc(ACL_FLOAT, list(array.shape), ACL_FORMAT_ND)
    ptr, _ = acl.rt.malloc(array.nbytes, 0)
    acl.rt.memcpy(ptr, array.nbytes, acl.util.numpy_to_ptr(array), array.nbytes, 1)
    return desc, acl.create_data_buffer(ptr, array.nbytes)


def test_single_op_launches_are_timed_and_their_faults_named(agent_factory, sim_acl):  # noqa: F811
    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "Mul", "every": 1}])
    _agent, events = agent_factory()
    acl = sim_acl
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    x = _tensor(acl, np.ones((2, 4), np.float32))
    y = _tensor(acl, np.zeros((2, 4), np.float32))
    attr = acl.op.create_attr()
    for op_type in ("Add", "Sub"):
        assert acl.op.compile(op_type, [x[0], x[0]], [y[0]], attr, 0, 0, None) == 0
    assert acl.op.execute_v2("Add", [x[0], x[0]], [x[1], x[1]], [y[0]], [y[1]], attr, 0) == 0
    handle, ret = acl.op.create_handle("Sub", [x[0], x[0]], [y[0]], attr)
    assert ret == 0
    assert acl.op.execute_with_handle(handle, [x[1], x[1]], [y[1]], 0) == 0
    assert acl.rt.synchronize_stream(0) == 0
    events.wait_for(lambda evs: len([e for e in evs if type(e) is OpTiming]) >= 2)
    timings = events.of(OpTiming)
    assert [(t.op_name, t.op_type, t.model_id, t.device_id) for t in timings] == [
        ("Add", "Add", 0, 0),
        ("Sub", "Sub", 0, 0),
    ]
    assert all(t.end_us >= t.start_us for t in timings)

    # A launch the runtime refuses: CallFailed with its message.
    assert acl.op.execute_v2("Div", [x[0], x[0]], [x[1], x[1]], [y[0]], [y[1]], attr, 0) == (
        ACL_ERROR_OP_NOT_FOUND
    )
    failed = events.wait_kind(CallFailed, lambda e: e.api == "op.execute_v2")
    assert "no operator model matches Div" in failed.message

    # A single operator that faults on the device is an exception naming it.
    assert (
        acl.op.compile_and_execute(
            "Mul", [x[0], x[0]], [x[1], x[1]], [y[0]], [y[1]], attr, 0, 0, None, 0
        )
        == 0
    )
    assert acl.rt.synchronize_stream(0) == ACL_ERROR_RT_AICORE_EXCEPTION
    exception = events.wait_kind(AclException)
    assert (exception.op_name, exception.op_type) == ("Mul", "Mul")
    assert len(exception.inputs) == 2


def test_an_overrun_copy_is_flagged_and_triaged(
    agent_factory,  # noqa: F811
    sim_acl,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path / "log"))
    _agent, events = agent_factory()
    acl = sim_acl
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    dvpp, ret = acl.media.dvpp_malloc(1000)
    assert ret == 0
    data = np.ones(2000, np.uint8)
    assert acl.rt.memcpy(dvpp, 2000, acl.util.numpy_to_ptr(data), 2000, 4) == 507013
    exception = events.wait_kind(AclException)
    assert exception.error_code == 507013 and exception.op_name == ""
    flag = events.wait_kind(LogLine, lambda e: "likely out-of-bounds copy" in e.text)
    assert f"task {exception.task_id}" in flag.text
    # the triage names the end that overran, against the job's own allocation, even
    # once the job has freed it
    assert acl.media.dvpp_free(dvpp) == 0
    triage = events.wait_kind(Triage).triage
    assert triage["cause"] == "out_of_bounds", triage["verdict"]
    offending = triage["address_findings"][0]
    assert (offending["role"], offending["overrun"]) == ("destination", 1000)
    assert offending["allocation"]["api"] == "media.dvpp_malloc"
    assert triage["device"]["engine"] == "SDMA"


def launch_mul(acl, x, y, attr, stream: int) -> int:
    return acl.op.compile_and_execute(
        "Mul", [x[0], x[0]], [x[1], x[1]], [y[0]], [y[1]], attr, 0, 0, None, stream
    )  # the launch site


def test_a_failed_single_operator_names_the_jobs_launching_line(agent_factory, sim_acl):  # noqa: F811
    # The launch-site hook sits outside the single-operator hook: the frame it reads
    # is the job's, and the operator is still timed.
    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "Mul", "nth": 2}])
    _agent, events = agent_factory()
    acl = sim_acl
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    x = _tensor(acl, np.ones((2, 4), np.float32))
    y = _tensor(acl, np.zeros((2, 4), np.float32))
    attr = acl.op.create_attr()
    assert launch_mul(acl, x, y, attr, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert launch_mul(acl, x, y, attr, stream) == 0
    assert acl.rt.synchronize_stream(stream) == ACL_ERROR_RT_AICORE_EXCEPTION
    exception = events.wait_kind(AclException)
    line = launch_mul.__code__.co_firstlineno + 1
    assert exception.launch_site.endswith(f"test_agent_single_ops.py:{line} launch_mul")
    timing = events.wait_kind(OpTiming)
    assert (timing.op_type, timing.model_id) == ("Mul", 0)
