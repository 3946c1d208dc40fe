"""The agent inside the test process, on the simulated runtime, with a real bus subscriber."""

from __future__ import annotations

import inspect
import json
import logging
import os
import threading

import pytest
from agenthelpers import (
    MODEL,
    Collector,
    SimJob,
    agent_factory,
    model_path,
    sim_acl,
    write_acl_json,
)

from aclmon.acl_constants import (
    ACL_AICORE_PIPE_UTILIZATION,
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_INVALID_PROFILING_CONFIG,
    ACL_ERROR_PROF_ALREADY_RUN,
    ACL_ERROR_PROF_NOT_RUN,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_UNINITIALIZE,
    ACL_PROF_ACL_API,
    ACL_PROF_MSPROFTX,
    ACL_PROF_TASK_TIME,
    ACL_SUCCESS,
    AICORE_METRICS,
)
from aclmon.bus import registry
from aclmon.bus.subscriber import Subscriber
from aclmon.events import (
    AclException,
    ContextCreated,
    ContextCurrent,
    ContextDestroyed,
    DeviceReset,
    DeviceSet,
    ExecuteBegin,
    ExecuteEnd,
    Hello,
    History,
    LogLine,
    ModelLoaded,
    ModelUnloaded,
    OpTiming,
    ProfilingState,
    SetProfilingConfig,
    StartProfiling,
    StopProfiling,
    StreamCreated,
    StreamDestroyed,
    StreamSyncBegin,
    StreamSynchronized,
    TxMark,
    TxRange,
)
from aclmon.sim import config
from aclmon.sim import runtime as sim_runtime

__all__ = ["agent_factory", "model_path", "sim_acl"]  # fixtures, imported for pytest


def send(events: Collector, cls: type, *fields):
    return events.subscriber.send_command(cls, *fields, timeout=15)


# ---------------------------------------------------------------- transparency
def test_wrappers_keep_name_signature_results_and_errors(agent_factory, sim_acl):
    agent, _ = agent_factory()
    for qualified, original in agent.hooks.originals.items():
        module_name, _, name = qualified.rpartition(".")
        wrapper = getattr(getattr(sim_acl, module_name) if module_name else sim_acl, name)
        assert wrapper.__wrapped__ is original
        assert wrapper.__name__ == original.__name__ and wrapper.__doc__ == original.__doc__
        assert inspect.signature(wrapper) == inspect.signature(original)
    # the same return value as the original, for success and for an ACL error
    assert sim_acl.rt.set_device(0) == ACL_ERROR_UNINITIALIZE  # before init
    assert sim_acl.rt.set_device(0) == agent.hooks.originals["rt.set_device"](0)
    assert sim_acl.init() == ACL_SUCCESS
    assert sim_acl.rt.set_device(10_000) == agent.hooks.originals["rt.set_device"](10_000)
    assert sim_acl.rt.create_context(10_000) == agent.hooks.originals["rt.create_context"](10_000)
    # the same exception as the original, argument errors included
    for call in (
        lambda f: f(),
        lambda f: f(1, 2, 3),
    ):
        with pytest.raises(TypeError) as wrapped_error:
            call(sim_acl.rt.set_device)
        with pytest.raises(TypeError) as original_error:
            call(agent.hooks.originals["rt.set_device"])
        assert str(wrapped_error.value) == str(original_error.value)
    with pytest.raises(TypeError, match="args parse failed"):
        sim_acl.rt.set_exception_info_callback(print, print)
    with pytest.raises(TypeError, match="not callable"):
        sim_acl.rt.set_exception_info_callback(5)
    assert not agent.failures


def test_stop_restores_the_originals_and_the_jobs_callback(agent_factory, sim_acl):
    agent, _ = agent_factory()
    originals = dict(agent.hooks.originals)
    assert sim_acl.init() == 0
    seen = []
    assert sim_acl.rt.set_exception_info_callback(seen.append) == 0
    assert sim_runtime.runtime().exception_callback == agent.exceptions.callback
    agent.close(restore=True)
    assert sim_acl.rt.set_device is originals["rt.set_device"]
    assert sim_acl.mdl.execute_async is originals["mdl.execute_async"]
    assert sim_runtime.runtime().exception_callback == seen.append


# ---------------------------------------------------------------- runtime objects
def test_devices_contexts_streams_and_snapshot(agent_factory, sim_acl, model_path):
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    assert sim_acl.rt.set_device(0) == 0  # refcount 2
    hello = events.wait_kind(Hello, lambda e: e.device_count == 8)
    assert hello.runtime == "sim" and hello.soc_name == "Ascend910B2"
    explicit = events.wait_kind(ContextCreated, lambda e: not e.is_default)
    assert explicit.context == job.context
    stream = events.wait_kind(StreamCreated, lambda e: e.stream == job.stream)
    assert stream.context == job.context
    assert stream.stream_id == sim_acl.rt.stream_get_id(job.stream)[0]
    events.wait_kind(ContextCurrent, lambda e: e.context == job.context)
    events.wait_kind(ModelLoaded, lambda e: e.model_id == job.model_id)

    # A late subscriber first gets the state (seq 0), then the live stream.
    late = Subscriber(agent.address).start()
    try:
        assert late.wait_connected(10)
        late_events = Collector(late)
        late_events.wait_kind(ModelLoaded)
        snapshot = [e for e in late_events.events if e.seq == 0]
        kinds = {type(e) for e in snapshot}
        assert {
            Hello,
            DeviceSet,
            ContextCreated,
            ContextCurrent,
            StreamCreated,
            ModelLoaded,
        } <= kinds
        assert {e.context for e in snapshot if type(e) is ContextCreated} == {
            explicit.context,
            events.wait_kind(ContextCreated, lambda e: e.is_default).context,
        }
    finally:
        late.close()

    # set_device is refcounted: the default context goes with the last reset only.
    default = events.wait_kind(ContextCreated, lambda e: e.is_default)
    assert sim_acl.mdl.unload(job.model_id) == 0
    assert sim_acl.rt.destroy_stream(job.stream) == 0
    assert sim_acl.rt.destroy_context(job.context) == 0
    assert sim_acl.rt.reset_device(0) == 0
    events.wait_kind(DeviceReset)
    assert not any(
        type(e) is ContextDestroyed and e.context == default.context for e in events.events
    )
    assert sim_acl.rt.reset_device(0) == 0
    events.wait_kind(ContextDestroyed, lambda e: e.context == default.context)
    assert agent.state.devices_in_use() == [] and not agent.state.contexts
    assert not agent.failures


def test_slow_calls_get_their_begin_event(agent_factory, sim_acl, tmp_path, monkeypatch):
    from aclmon.agent import hot

    # A call counts as slow after 1 ms here; the operator keeps the device busy for
    # 0.6 s, so the control thread (checking every 50 ms) has ample time to see it
    # even on a loaded machine.
    monkeypatch.setattr(hot, "SLOW_CALL_NS", 1_000_000)
    slow = json.loads(json.dumps(MODEL))
    slow["ops"] = [dict(MODEL["ops"][2], inputs=["x"], cost_us=600_000)]
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(slow))
    config.configure(time_scale=1.0)
    _, events = agent_factory()
    job = SimJob(sim_acl, path)
    assert job.run() == 0  # execute_async returns at once, synchronize waits for the device
    begin = events.wait_kind(StreamSyncBegin, lambda e: e.stream == job.stream)
    done = events.wait_kind(StreamSynchronized, lambda e: e.stream == job.stream)
    assert begin.seq < done.seq and begin.ts_ns <= done.ts_ns
    assert sim_acl.mdl.execute(job.model_id, job.inputs, job.outputs) == 0  # synchronous
    begin = events.wait_kind(ExecuteBegin, lambda e: e.model_id == job.model_id)
    end = events.wait_kind(ExecuteEnd, lambda e: e.model_id == job.model_id and e.stream == 0)
    assert begin.device_id == 0 and begin.seq < end.seq
    # one Begin per slow call, however many checks saw it running
    assert sum(1 for e in events.events if type(e) is StreamSyncBegin) == 1
    # a device-wide synchronize is published with stream -1
    assert sim_acl.mdl.execute_async(job.model_id, job.inputs, job.outputs, job.stream) == 0
    assert sim_acl.rt.synchronize_device() == 0
    begin = events.wait_kind(StreamSyncBegin, lambda e: e.stream == -1)
    done = events.wait_kind(StreamSynchronized, lambda e: e.stream == -1)
    assert begin.seq < done.seq and done.ret == 0 and done.timeout_ms == -1
    assert sim_acl.rt.synchronize_device_with_timeout(5000) == 0
    events.wait_kind(StreamSynchronized, lambda e: e.stream == -1 and e.timeout_ms == 5000)


# ---------------------------------------------------------------- exceptions
def test_job_callback_and_agent_callback_both_fire(agent_factory, sim_acl, model_path):
    config.configure(
        time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "add1", "every": 1}]
    )
    agent, events = agent_factory()
    job_seen: list[int] = []

    def job_callback(info: int) -> None:
        job_seen.append(sim_acl.rt.get_task_id_from_exception_info(info))

    job = SimJob(sim_acl, model_path)
    assert sim_acl.rt.set_exception_info_callback(job_callback) == 0
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    exception = events.wait_kind(AclException)
    assert exception.op_name == "add1" and exception.task_id == job_seen[0]
    assert [t.name for t in exception.inputs] == ["y", "y"]
    assert [t.name for t in exception.outputs] == ["z"]
    assert exception.thread_id > 0

    # None clears the job's callback only: the agent still captures.
    assert sim_acl.rt.set_exception_info_callback(None) == 0
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    events.wait_for(lambda evs: len([e for e in evs if type(e) is AclException]) == 2)
    assert len(job_seen) == 1

    # A job callback that raises is dropped, as pyACL does; the agent's stays.
    def bad_callback(info: int) -> None:
        raise RuntimeError("job bug")

    assert sim_acl.rt.set_exception_info_callback(bad_callback) == 0
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    events.wait_for(lambda evs: len([e for e in evs if type(e) is AclException]) == 4)
    assert agent.exceptions.job_callback is None
    assert sim_runtime.runtime().exception_callback == agent.exceptions.callback
    events.wait_kind(LogLine, lambda e: "exception callback raised" in e.text)


def test_exception_capture_never_raises(agent_factory, sim_acl, model_path, monkeypatch, caplog):
    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "mm1", "every": 1}])
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    job_seen: list[int] = []
    assert sim_acl.rt.set_exception_info_callback(job_seen.append) == 0

    def broken(*args):
        raise RuntimeError("runtime trouble")

    monkeypatch.setattr(sim_acl.mdl, "create_and_get_op_desc", broken)
    with caplog.at_level(logging.WARNING, logger="aclmon.agent"):
        assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
        assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    assert len(job_seen) == 2  # the chain went on
    assert sim_runtime.runtime().exception_callback == agent.exceptions.callback  # not dropped
    assert agent.failures["exception callback"] == 2
    assert sum("exception callback failed" in r.getMessage() for r in caplog.records) == 1
    events.wait_kind(LogLine, lambda e: "runtime trouble" in e.text)


def test_agent_failures_never_reach_the_job(agent_factory, sim_acl, monkeypatch):
    agent, events = agent_factory()

    def broken(event):
        raise KeyError("state bug")

    monkeypatch.setattr(agent.state, "device_set", broken)
    assert sim_acl.init() == 0
    assert sim_acl.rt.set_device(0) == 0
    assert sim_acl.rt.set_device(1) == 0
    assert agent.failures == {"hook rt.set_device": 2}
    events.wait_kind(LogLine, lambda e: "hook rt.set_device failed" in e.text)


def test_absent_viewer_never_blocks_and_drops_are_counted(tmp_path, sim_acl, model_path):
    from aclmon.agent.core import Agent

    agent = Agent(sim_acl, address=str(tmp_path / "a.sock"), register=False, queue_size=16).start()
    try:
        job = SimJob(sim_acl, model_path)
        for _ in range(2000):
            assert sim_acl.rt.synchronize_stream(job.stream) == 0
        assert agent.publisher.dropped > 0
        assert not agent.failures
    finally:
        agent.close(restore=True)


def test_registry_entry_lives_with_the_agent(tmp_path, sim_acl):
    from aclmon.agent.core import Agent

    agent = Agent(sim_acl, address=str(tmp_path / "a.sock")).start()
    try:
        assert any(a.address == agent.address for a in registry.list_agents())
    finally:
        agent.close(restore=True)
    assert not any(a.address == agent.address for a in registry.list_agents())


# ---------------------------------------------------------------- profiling commands
def test_profiling_commands_validate(agent_factory, sim_acl):
    _, events = agent_factory()
    pipe = ACL_AICORE_PIPE_UTILIZATION
    reply = send(events, SetProfilingConfig, 1 << 60, pipe, (), 0)
    assert reply.code == ACL_ERROR_INVALID_PROFILING_CONFIG and "ACL_PROF" in reply.message
    reply = send(events, SetProfilingConfig, ACL_PROF_ACL_API, 77, (), 0)
    assert reply.code == ACL_ERROR_INVALID_PROFILING_CONFIG
    reply = send(events, SetProfilingConfig, ACL_PROF_ACL_API, pipe, (), 5)
    assert reply.code == ACL_ERROR_INVALID_PARAM and "10 ms" in reply.message
    # before acl.init: the runtime's own code, in words
    assert send(events, SetProfilingConfig, 0, pipe, (), 0).code == 0
    reply = send(events, StartProfiling)
    # (create_subscribe_config returns only a handle: the reason is the runtime's message)
    assert reply.code != 0 and "acl.init was not called" in reply.message
    assert send(events, SetProfilingConfig, ACL_PROF_ACL_API, pipe, (), 0).code == 0
    reply = send(events, StartProfiling)
    assert reply.code == ACL_ERROR_INVALID_PARAM and "set a device" in reply.message
    assert sim_acl.init() == 0
    events.wait_kind(Hello, lambda e: e.device_count == 8)
    reply = send(events, SetProfilingConfig, ACL_PROF_ACL_API, pipe, (8,), 0)
    assert reply.code == ACL_ERROR_INVALID_PROFILING_CONFIG and "no such device 8" in reply.message
    reply = send(events, SetProfilingConfig, ACL_PROF_ACL_API | ACL_PROF_TASK_TIME, pipe, (), 500)
    assert reply.code == 0 and reply.data["sample_interval_ms"] == 500
    reply = send(events, StartProfiling)
    assert reply.code == ACL_ERROR_INVALID_PARAM and "set a device" in reply.message
    reply = send(events, StopProfiling)
    assert reply.code == ACL_ERROR_PROF_NOT_RUN


def test_acl_json_profiling_is_left_alone(agent_factory, sim_acl, tmp_path):
    acl_json = write_acl_json(
        tmp_path / "acl.json",
        profiler={"switch": "on", "output": str(tmp_path / "jsonprof"), "ascendcl": "on"},
    )
    _, events = agent_factory()
    assert sim_acl.init(str(acl_json)) == 0
    assert sim_acl.rt.set_device(0) == 0
    state = events.wait_kind(ProfilingState, lambda e: e.owner == "acl.json")
    assert state.running and state.output_path == str(tmp_path / "jsonprof")
    assert state.flags == ACL_PROF_ACL_API
    for command in (StartProfiling, StopProfiling):
        reply = send(events, command)
        assert reply.code == ACL_ERROR_PROF_ALREADY_RUN and "acl.json" in reply.message


def test_job_profiling_wins_and_aclmon_steps_aside(agent_factory, sim_acl, model_path, tmp_path):
    _, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    reply = send(events, SetProfilingConfig, ACL_PROF_ACL_API, ACL_AICORE_PIPE_UTILIZATION, (), 0)
    assert reply.code == 0
    reply = send(events, StartProfiling)
    assert reply.code == 0, reply.message
    assert "live operator timings need model subscription" in reply.message
    events.wait_kind(ProfilingState, lambda e: e.owner == "aclmon" and e.running)
    # The job starts profiling itself: its call succeeds as if aclmon were not there.
    assert sim_acl.prof.init(str(tmp_path / "jobprof")) == 0
    events.wait_kind(LogLine, lambda e: "aclmon stopped its profiling session" in e.text)
    events.wait_kind(ProfilingState, lambda e: e.owner == "job" and e.initialized)
    config_handle = sim_acl.prof.create_config(
        [0], ACL_AICORE_PIPE_UTILIZATION, 0, ACL_PROF_ACL_API
    )
    assert config_handle and sim_acl.prof.start(config_handle) == 0
    events.wait_kind(ProfilingState, lambda e: e.owner == "job" and e.running)
    for command in (StartProfiling, StopProfiling):
        reply = send(events, command)
        assert (
            reply.code == ACL_ERROR_PROF_ALREADY_RUN and "the job runs profiling" in reply.message
        )
    # Live timings are refused too while the job's API-mode session runs.
    assert send(events, SetProfilingConfig, 0, ACL_AICORE_PIPE_UTILIZATION, (), 0).code == 0
    assert send(events, StartProfiling).code == ACL_ERROR_PROF_ALREADY_RUN
    assert sim_acl.prof.stop(config_handle) == 0
    assert sim_acl.prof.destroy_config(config_handle) == 0
    assert sim_acl.prof.finalize() == 0
    events.wait_kind(ProfilingState, lambda e: e.owner == "" and not e.initialized)
    # Free again: live timings start, and the job finalizing acl ends them cleanly.
    reply = send(events, StartProfiling)
    assert reply.code == 0, reply.message
    events.wait_kind(ProfilingState, lambda e: e.subscribed)
    assert job.run() == 0
    assert sim_acl.mdl.unload(job.model_id) == 0  # unsubscribed first, by the agent
    assert sim_acl.finalize() == 0
    events.wait_kind(LogLine, lambda e: "finalizing acl" in e.text)


def test_live_timings_follow_models_loaded_later(agent_factory, sim_acl, model_path):
    agent, events = agent_factory()
    assert sim_acl.init() == 0
    assert send(events, SetProfilingConfig, 0, ACL_AICORE_PIPE_UTILIZATION, (), 0).code == 0
    reply = send(events, StartProfiling)
    assert reply.code == 0 and "armed" in reply.message
    job = SimJob(sim_acl, model_path)  # loads the model after the start
    timing = events.wait_for(
        lambda evs: (
            [e for e in evs if type(e) is OpTiming]
            if job.run() == 0 and any(type(e) is OpTiming for e in evs)
            else None
        ),
        what="op timings of a model loaded after the start",
    )[0]
    assert timing.model_id == job.model_id and timing.op_type in ("MatMul", "Add", "Relu")
    # The last subscribed model goes: the runtime closes that pipe. A model loaded
    # afterwards gets a fresh pipe, and its timings arrive too.
    assert sim_acl.mdl.unload(job.model_id) == 0
    job.model_id, ret = sim_acl.mdl.load_from_file(str(model_path))
    assert ret == 0
    events.wait_for(
        lambda evs: (
            any(type(e) is OpTiming and e.model_id == job.model_id for e in evs)
            or (job.run() and None)
        ),
        what="op timings of a model loaded after the first pipe was closed",
    )
    assert send(events, StopProfiling).code == 0
    assert not agent.failures


def test_forked_child_runs_unobserved(agent_factory, sim_acl, monkeypatch):
    agent, _ = agent_factory()
    original = agent.hooks.originals["rt.set_device"]
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if the originals are back
        os._exit(0 if sim_acl.rt.set_device is original else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    # and a child whose agent came from aclmon.agent.start() may start its own
    import aclmon.agent

    monkeypatch.setattr(aclmon.agent, "_agent", agent)
    pid = os.fork()
    if pid == 0:  # the at-fork handler has run in the child
        os._exit(0 if aclmon.agent.current() is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert sim_acl.rt.set_device is not original  # the parent is still observed


def test_start_failures_are_one_clear_error(tmp_path, sim_acl):
    from aclmon.agent import AgentError
    from aclmon.agent.core import Agent
    from aclmon.errors import AclmonError

    original = sim_acl.rt.set_device
    bad_record = tmp_path / "no-such-dir" / "x.aclmon"
    agent = Agent(sim_acl, address=str(tmp_path / "a.sock"), register=False, record=str(bad_record))
    with pytest.raises(AgentError, match="cannot start"):
        agent.start()
    assert sim_acl.rt.set_device is original  # nothing left behind
    assert not (tmp_path / "a.sock").exists()
    with pytest.raises(AclmonError):
        Agent(sim_acl, address="not an address", register=False).start()


def test_finalize_releases_what_the_job_left(agent_factory, sim_acl, model_path):
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    events.wait_kind(ModelLoaded)
    assert sim_acl.finalize() == 0  # without unload, destroy or reset
    events.wait_kind(DeviceReset, lambda e: e.device_id == 0)
    events.wait_kind(ModelUnloaded, lambda e: e.model_id == job.model_id)
    events.wait_kind(ContextDestroyed, lambda e: e.context == job.context)
    events.wait_kind(StreamDestroyed, lambda e: e.stream == job.stream)
    # nothing live is left; the unloaded model is restated (loaded, unloaded) for its figures
    assert [type(e) for e in agent.snapshot()] == [
        Hello, ProfilingState, ModelLoaded, ModelUnloaded, History,
    ]  # fmt: skip
    # and a new session is observed again from scratch
    job = SimJob(sim_acl, model_path)
    assert len(agent.state.models) == 1 and agent.state.devices_in_use() == [0]


def _msproftx_session(agent_factory, sim_acl, tmp_path):
    """An agent's events, and msproftx collection started on device 0."""
    _, events = agent_factory()
    prof = sim_acl.prof
    assert sim_acl.init() == 0 and sim_acl.rt.set_device(0) == 0
    assert prof.init(str(tmp_path / "txprof")) == 0
    handle = prof.create_config([0], ACL_AICORE_PIPE_UTILIZATION, 0, ACL_PROF_MSPROFTX)
    assert handle and prof.start(handle) == 0
    return events, prof, handle


def test_msproftx_marks_and_ranges(agent_factory, sim_acl, tmp_path):
    events, prof, handle = _msproftx_session(agent_factory, sim_acl, tmp_path)
    stamp = prof.create_stamp()
    assert prof.set_stamp_trace_message(stamp, "step 1 and more", 6) == 0
    assert prof.mark(stamp) == 0
    assert prof.mark_ex("direct", 0) == 0
    assert prof.push(stamp) == 0 and prof.pop() == 0
    range_id, ret = prof.range_start(stamp)
    assert ret == 0 and prof.range_stop(range_id) == 0
    assert prof.pop() != 0  # nothing pushed: the runtime's error, and no event
    prof.destroy_stamp(stamp)
    marks = events.wait_for(
        lambda evs: [e.message for e in evs if type(e) is TxMark] == ["step 1", "direct"] or None,
        what="two marks",
    )
    assert marks
    ranges = events.wait_for(
        lambda evs: (
            [e for e in evs if type(e) is TxRange]
            if len([e for e in evs if type(e) is TxRange]) == 2
            else None
        ),
        what="two ranges",
    )
    assert all(r.message == "step 1" and r.start_ns <= r.end_ns for r in ranges)
    me = threading.get_native_id()
    assert all(r.thread_id == r.end_thread_id == me for r in ranges)
    assert all(m.thread_id == me for m in events.events if type(m) is TxMark)
    events.drain(0.2)
    assert len([e for e in events.events if type(e) is TxRange]) == 2
    assert prof.stop(handle) == 0 and prof.destroy_config(handle) == 0 and prof.finalize() == 0


def test_msproftx_range_closed_on_another_thread_names_both(agent_factory, sim_acl, tmp_path):
    """range_start on one thread, range_stop on another (a request handed between
    workers): the range carries the thread that opened it and the one that closed it."""
    events, prof, handle = _msproftx_session(agent_factory, sim_acl, tmp_path)
    stamp = prof.create_stamp()
    assert prof.set_stamp_trace_message(stamp, "request 7", 9) == 0
    range_id, ret = prof.range_start(stamp)
    assert ret == 0
    stopped_on: list[int] = []

    def stop() -> None:
        stopped_on.append(threading.get_native_id())
        assert prof.range_stop(range_id) == 0

    worker = threading.Thread(target=stop)
    worker.start()
    worker.join()
    (tx,) = events.wait_for(
        lambda evs: [e for e in evs if type(e) is TxRange] or None, what="the range"
    )
    assert tx.message == "request 7"
    assert tx.thread_id == threading.get_native_id() and tx.end_thread_id == stopped_on[0]
    assert tx.thread_id != tx.end_thread_id
    prof.destroy_stamp(stamp)
    assert prof.stop(handle) == 0 and prof.destroy_config(handle) == 0 and prof.finalize() == 0


def test_late_start_never_replaces_the_jobs_callback(tmp_path, sim_acl, model_path, caplog):
    """Started after acl.init, the agent cannot know whether the job registered a
    callback, so it leaves the runtime's callback alone until the next acl.init."""
    from aclmon.agent.core import Agent

    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "mm1", "every": 1}])
    job_seen: list[int] = []
    job = SimJob(sim_acl, model_path)
    assert sim_acl.rt.set_exception_info_callback(job_seen.append) == 0
    acl_json = write_acl_json(tmp_path / "acl.json")
    with caplog.at_level(logging.WARNING, logger="aclmon.agent"):
        agent = Agent(
            sim_acl, address=str(tmp_path / "a.sock"), register=False, acl_json=str(acl_json)
        ).start()
    assert any("exception capture begins" in r.getMessage() for r in caplog.records)
    try:
        assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
        assert len(job_seen) == 1 and agent.exceptions.captured == 0
        assert sim_runtime.runtime().exception_callback == job_seen.append
    finally:
        agent.close(restore=True)
    # Asked to take the callback (the job registers its own later): both fire.
    agent = Agent(
        sim_acl, address=str(tmp_path / "b.sock"), register=False, take_exception_callback=True
    ).start()
    try:
        assert sim_acl.rt.set_exception_info_callback(job_seen.append) == 0
        assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
        assert len(job_seen) == 2 and agent.exceptions.captured == 1
    finally:
        agent.close(restore=True)


def test_killing_the_viewer_changes_nothing_for_the_job(agent_factory, sim_acl, model_path):
    import subprocess
    import sys

    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    viewer_code = (
        "import sys, time\n"
        "from aclmon.bus.subscriber import Subscriber\n"
        "s = Subscriber(sys.argv[1]).start()\n"
        "assert s.wait_connected(20)\n"
        "print('connected', flush=True)\n"
        "time.sleep(60)\n"
    )
    viewer = subprocess.Popen(
        [sys.executable, "-c", viewer_code, agent.address], stdout=subprocess.PIPE, text=True
    )
    try:
        assert viewer.stdout.readline().strip() == "connected"
        for _ in range(50):
            assert job.run() == 0
        viewer.kill()
        viewer.wait(timeout=20)
        for _ in range(50):
            assert job.run() == 0
    finally:
        if viewer.poll() is None:
            viewer.kill()
            viewer.wait()
        viewer.stdout.close()
    assert not agent.failures
    events.wait_for(
        lambda evs: len([e for e in evs if type(e) is StreamSynchronized]) >= 100,
        what="every synchronize after the viewer was killed",
    )


def test_threads_that_ended_leave_the_snapshot(agent_factory, sim_acl, model_path, monkeypatch):
    import threading

    from aclmon.agent import core

    monkeypatch.setattr(core, "MAX_CURRENT_THREADS", 4)
    agent, _ = agent_factory()
    job = SimJob(sim_acl, model_path)

    release = threading.Event()
    ready = threading.Barrier(11)

    def worker() -> None:
        assert sim_acl.rt.set_context(job.context) == 0
        ready.wait()
        release.wait()

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for thread in threads:
        thread.start()
    ready.wait()
    assert len(agent.state.current) >= 11
    agent._prune_current_contexts()
    assert len(agent.state.current) >= 11  # all alive: kept
    release.set()
    for thread in threads:
        thread.join()
    agent._prune_current_contexts()
    assert set(agent.state.current) == {threading.get_native_id()}


def test_a_failing_step_never_stops_the_control_thread(agent_factory, sim_acl, monkeypatch):
    agent, events = agent_factory()

    def broken() -> None:
        raise OSError("psutil trouble")

    monkeypatch.setattr(agent.sampler, "sample", broken)
    events.wait_kind(LogLine, lambda e: "sampler failed" in e.text)
    for _ in range(3):  # commands still get their replies
        reply = send(
            events, SetProfilingConfig, ACL_PROF_ACL_API, ACL_AICORE_PIPE_UTILIZATION, (), 0
        )
        assert reply.code == 0
    assert agent.failures["sampler"] >= 1
    assert agent._control.is_alive()


def test_live_timings_without_bytes_to_ptr(agent_factory, sim_acl, model_path, monkeypatch):
    """Older pyACL has no acl.util.bytes_to_ptr: the records go through numpy_to_ptr."""
    monkeypatch.delattr(sim_acl.util, "bytes_to_ptr")
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    assert send(events, SetProfilingConfig, 0, ACL_AICORE_PIPE_UTILIZATION, (), 0).code == 0
    assert send(events, StartProfiling).code == 0
    events.wait_for(
        lambda evs: (
            {e.op_name for e in evs if type(e) is OpTiming} >= {"mm1", "add1", "relu1"}
            or (job.run() and None)
        ),
        what="op timings through numpy_to_ptr",
    )
    assert send(events, StopProfiling).code == 0
    assert not agent.failures


def test_profiling_state_reports_the_configuration_a_start_uses(agent_factory, sim_acl):
    """No hidden defaults: the state says what the next start does, and a stop
    clears what was active but keeps the configuration."""
    _agent, events = agent_factory()
    assert sim_acl.init() == 0 and sim_acl.rt.set_device(0) == 0
    first = events.wait_kind(ProfilingState, lambda e: True)
    assert (first.next_flags, first.next_devices) == (0, ())  # live operator timings
    assert first.next_metrics == ACL_AICORE_PIPE_UTILIZATION
    # With nothing configured, a start is live operator timings, as the state said.
    assert send(events, StartProfiling).code == 0
    running = events.wait_kind(ProfilingState, lambda e: e.running)
    assert running.subscribed and not running.initialized and running.flags == 0
    assert send(events, StopProfiling).code == 0
    # A configuration is reported at once, and survives a file-profiling run and its stop.
    metric = list(AICORE_METRICS)[2]
    assert send(events, SetProfilingConfig, ACL_PROF_ACL_API, metric, (0,), 0).code == 0
    configured = events.wait_kind(ProfilingState, lambda e: e.next_flags == ACL_PROF_ACL_API)
    assert configured.next_metrics == metric and configured.next_devices == (0,)
    assert not configured.running
    assert send(events, StartProfiling).code == 0
    api = events.wait_kind(ProfilingState, lambda e: e.running and e.initialized)
    assert api.flags == ACL_PROF_ACL_API and api.devices == (0,)
    assert send(events, StopProfiling).code == 0
    stopped = events.wait_kind(
        ProfilingState,
        lambda e: not e.running and e.next_flags == ACL_PROF_ACL_API and e.seq > api.seq,
    )
    assert stopped.flags == 0 and stopped.devices == () and stopped.output_path == ""
    assert (stopped.next_flags, stopped.next_metrics, stopped.next_devices) == (
        ACL_PROF_ACL_API,
        metric,
        (0,),
    )


def test_an_explicit_contexts_default_stream_is_announced(agent_factory, sim_acl, model_path):
    """acllite executes synchronously on the explicit context's default stream: viewers
    must know that stream, so its exceptions are placed on it."""
    config.configure(
        time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "add1", "every": 1}]
    )
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    default_id, ret = sim_acl.rt.stream_get_id(0)  # job.context is current
    assert ret == 0
    announced = events.wait_kind(
        StreamCreated, lambda e: e.context == job.context and e.stream == 0
    )
    assert announced.stream_id == default_id
    assert sim_acl.mdl.execute(job.model_id, job.inputs, job.outputs) == (
        ACL_ERROR_RT_AICORE_EXCEPTION
    )
    exception = events.wait_kind(AclException)
    assert exception.stream_id == default_id
    assert not agent.failures


def test_a_failed_call_sends_the_runtimes_message_beside_the_exception(
    agent_factory, sim_acl, model_path
):
    from aclmon.events import CallFailed
    from aclmon.store import Store

    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "add1", "nth": 1}])
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    exception = events.wait_kind(AclException)
    failed = events.wait_kind(CallFailed, lambda e: e.api == "rt.synchronize_stream")
    assert failed.ret == ACL_ERROR_RT_AICORE_EXCEPTION and failed.stream == job.stream
    assert failed.message  # the sim's get_recent_err_msg text
    events.wait_kind(StreamSynchronized, lambda e: e.ret == ACL_ERROR_RT_AICORE_EXCEPTION)
    store = Store()
    store.apply_many(events.events)
    assert store.runtime_message(exception) == failed.message
    assert not agent.failures


def test_the_jobs_plog_errors_arrive_as_log_lines(agent_factory, sim_acl, model_path):
    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "add1", "nth": 1}])
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    line = events.wait_kind(LogLine, lambda e: e.log_file and e.level == "error")
    assert line.pid == os.getpid() and line.module in {"RUNTIME", "GE", "ASCENDCL"}
    assert line.location and line.logged_ns > 0
    assert os.path.basename(line.log_file).startswith(f"plog-{os.getpid()}_")
    assert agent.plog is not None and agent.plog.files


def test_an_agent_started_before_acl_init_asks_the_runtime_nothing_it_cannot_answer(
    agent_factory, sim_acl, model_path
):
    """Asking for the device count before acl.init fails with 100001: the sim (like
    CANN) logs an ERROR in the job's plog and keeps the message as the thread's recent
    error. The agent must leave neither behind; the Hello after acl.init has the count."""
    from aclmon.events import known

    _agent, events = agent_factory()
    assert sim_acl.get_recent_err_msg() == ""
    first = events.wait_kind(Hello)
    assert known(first, "device_count") is None and known(first, "soc_name") is None
    SimJob(sim_acl, model_path)
    hello = events.wait_kind(Hello, lambda e: e.device_count == 8)
    assert hello.soc_name == "Ascend910B2"


def test_an_exception_reported_before_execute_async_returns_is_that_launchs(
    agent_factory, sim_acl, model_path, monkeypatch
):
    """The runtime's thread can report an AI Core exception while the job's thread is
    still inside execute_async (the simulator raises it during the call): the
    exception is that launch's and it fails once, with its synchronize. The race is
    forced: the execute_async wrapper takes 20 ms to read the clock around the call."""
    import time

    from aclmon.agent import hot

    clock = hot._MAKERS["execute_async"].__globals__
    real_clock = clock["_perf_ns"]

    def slow_clock() -> int:
        time.sleep(0.02)
        return real_clock()

    monkeypatch.setitem(clock, "_perf_ns", slow_clock)
    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "mm1", "every": 2}])
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    failed = [run for run in range(1, 7) if job.run() == ACL_ERROR_RT_AICORE_EXCEPTION]
    assert failed == [2, 4, 6]
    events.wait_for(lambda evs: len([e for e in evs if type(e) is AclException]) == 3)
    assert [e.execution for e in events.of(AclException)] == failed
    history = [e for e in agent.snapshot() if type(e) is History][-1]
    assert history.models == (job.model_id, 6, 3)
