"""What the job reads of its threads' error state is what it would read without the
agent: the message the agent took when a call failed, and the message and code left
before the agent's own calls on the job's thread (aclmon/agent/errorstate.py)."""

from __future__ import annotations

import threading

from agenthelpers import SimJob, model_path, sim_acl
from test_agent_parts import hooked

from aclmon.acl_constants import ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_STREAM_CONTEXT
from aclmon.events import CallFailed
from aclmon.sim import errmsg

__all__ = ["model_path", "sim_acl"]  # fixtures, imported for pytest


def test_the_job_reads_the_message_the_agent_took_once_on_its_own_thread(sim_acl):
    ctx, hooks = hooked(sim_acl)
    try:
        assert sim_acl.init() == 0
        assert sim_acl.rt.set_device(99) == ACL_ERROR_RT_INVALID_DEVICEID
        other: list[str] = []
        thread = threading.Thread(target=lambda: other.append(sim_acl.get_recent_err_msg()))
        thread.start()
        thread.join()
        message = sim_acl.get_recent_err_msg()
        again = sim_acl.get_recent_err_msg()
    finally:
        hooks.uninstall()
        sim_acl.finalize()
    assert other == [""]  # another thread's error state is its own
    assert "no device 99" in message.splitlines()[0]
    assert again == ""
    failed = [e for e in ctx.sink.take() if type(e) is CallFailed]
    assert [e.message for e in failed] == [message.strip()]


def test_a_newer_failure_the_agent_does_not_hook_replaces_the_one_it_took(sim_acl):
    _, hooks = hooked(sim_acl)
    try:
        assert sim_acl.init() == 0
        assert sim_acl.rt.set_device(0) == 0
        assert sim_acl.rt.set_device(99) != 0  # hooked: the agent takes the message
        _, ret = sim_acl.rt.malloc(1 << 60, 0)  # not hooked: the runtime's newer message
        message = sim_acl.get_recent_err_msg()
        assert sim_acl.get_recent_err_msg() == ""
        assert sim_acl.rt.reset_device(0) == 0
    finally:
        hooks.uninstall()
        sim_acl.finalize()
    assert ret != 0 and "bytes requested" in message


def test_the_agents_own_failing_calls_on_the_jobs_thread_leave_no_trace(
    sim_acl, model_path, monkeypatch
):
    """stream_get_id fails on an older CANN: the job's message and code stay its own."""
    asked: list[int] = []

    def refusing_stream_get_id(stream: int) -> tuple[int, int]:
        asked.append(stream)
        return -1, errmsg.fail(ACL_ERROR_RT_STREAM_CONTEXT, "not on this release")

    monkeypatch.setattr(sim_acl.rt, "stream_get_id", refusing_stream_get_id)
    _, hooks = hooked(sim_acl)
    try:
        job = SimJob(sim_acl, model_path)
        assert sim_acl.rt.set_device(99) == ACL_ERROR_RT_INVALID_DEVICEID
        asked.clear()
        stream, ret = sim_acl.rt.create_stream()
        assert ret == 0 and asked == [stream]  # the agent asked for its id, and failed
        assert job.run() == 0
        seen = (
            sim_acl.rt.peek_at_last_error(0),
            sim_acl.get_recent_err_msg(),
            sim_acl.rt.get_last_error(0),
            sim_acl.rt.get_last_error(0),
            sim_acl.get_recent_err_msg(),
        )
    finally:
        hooks.uninstall()
        sim_acl.finalize()
    peeked, message, code, cleared, again = seen
    assert (peeked, code, cleared, again) == (ACL_ERROR_RT_INVALID_DEVICEID,) * 2 + (0, "")
    assert "no device 99" in message


def test_a_job_failure_after_the_agents_own_one_is_read_as_it_is(sim_acl, model_path, monkeypatch):
    monkeypatch.setattr(
        sim_acl.rt, "stream_get_id",
        lambda stream: (-1, errmsg.fail(ACL_ERROR_RT_STREAM_CONTEXT, "not on this release")),
    )  # fmt: skip
    _, hooks = hooked(sim_acl)
    try:
        SimJob(sim_acl, model_path)
        _, ret = sim_acl.rt.malloc(1 << 60, 0)  # the job's own failure, newer
        seen = (sim_acl.rt.peek_at_last_error(0), sim_acl.rt.get_last_error(0))
    finally:
        hooks.uninstall()
    assert seen == (ret, ret)


def test_a_forked_workers_agent_keeps_its_state_in_the_readers_left_from_the_fork(sim_acl):
    """At fork the parent's hooks go but its readers stay; the agent the worker starts
    at acl.init finds them installed (its own hooks skip them) and must use them."""
    parent_ctx, parent = hooked(sim_acl)
    worker = None
    try:
        assert sim_acl.init() == 0
        assert sim_acl.rt.set_device(98) == ACL_ERROR_RT_INVALID_DEVICEID  # not read yet
        parent.uninstall(keep_error_readers=True)  # what the at-fork handler does
        worker_ctx, worker = hooked(sim_acl)
        left = sim_acl.get_recent_err_msg()
        assert sim_acl.rt.set_device(99) == ACL_ERROR_RT_INVALID_DEVICEID
        message = sim_acl.get_recent_err_msg()
        again = sim_acl.get_recent_err_msg()
    finally:
        if worker is not None:
            worker.uninstall()
        parent.uninstall()
        sim_acl.finalize()
    assert "no device 98" in left
    assert "no device 99" in message.splitlines()[0] and again == ""
    failed = [e for e in worker_ctx.sink.take() if type(e) is CallFailed]
    assert [e.message for e in failed] == [message.strip()]
    assert [e.api for e in parent_ctx.sink.take() if type(e) is CallFailed] == ["rt.set_device"]
