"""Each part of the agent on its own: an AgentContext over an in-memory sink, no socket."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from agenthelpers import SimJob, model_path, sim_acl

from aclmon.acl_constants import ACL_AICORE_PIPE_UTILIZATION, ACL_SUCCESS
from aclmon.agent.context import AgentContext, DeviceBinder, MemorySink
from aclmon.agent.dumps import DumpWatcher
from aclmon.agent.exceptions import ExceptionCapture
from aclmon.agent.hooks import Hooks
from aclmon.agent.profiling import ProfilingController
from aclmon.agent.sampler import Sampler
from aclmon.bus.records import PLAIN, build_records
from aclmon.events import (
    AclException,
    CallFailed,
    ContextCreated,
    ContextCurrent,
    ContextDestroyed,
    DeviceSet,
    DumpFileSeen,
    ExecuteEnd,
    HostSample,
    LogLine,
    ModelLoaded,
    ModelUnloaded,
    ProfilingState,
    StreamCreated,
    StreamDestroyed,
    StreamSynchronized,
    TxMark,
)

__all__ = ["model_path", "sim_acl"]  # fixtures, imported for pytest

AGENT = Path(__file__).resolve().parents[2] / "aclmon" / "agent"


def hooked(acl, sink: MemorySink | None = None, init_seen: list | None = None):
    ctx = AgentContext(acl, sink or MemorySink())
    binder = DeviceBinder(ctx)
    profiling = ProfilingController(ctx, binder, "/nonexistent/prof")
    capture = ExceptionCapture(ctx)

    def on_init(config_path, ret) -> None:
        if init_seen is not None:
            init_seen.append((config_path, ret))

    hooks = Hooks(ctx, profiling, capture, on_init)
    hooks.install()
    return ctx, hooks


def test_hooks_publish_numbered_events_into_a_memory_sink(sim_acl, model_path):
    init_seen: list = []
    ctx, hooks = hooked(sim_acl, init_seen=init_seen)
    try:
        job = SimJob(sim_acl, model_path)
        assert job.run() == 0
    finally:
        hooks.uninstall()
    events = ctx.sink.take()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    kinds = [type(e) for e in events]
    for cls in (DeviceSet, ContextCreated, StreamCreated, ModelLoaded, ExecuteEnd):
        assert cls in kinds, cls
    sync = next(e for e in events if type(e) is StreamSynchronized)
    assert (sync.stream, sync.ret, sync.timeout_ms) == (job.stream, 0, -1) and sync.duration_ns >= 0
    end = next(e for e in events if type(e) is ExecuteEnd)
    assert (end.model_id, end.stream, end.ret) == (job.model_id, job.stream, 0)
    assert init_seen == [(None, ACL_SUCCESS)]
    assert not ctx.failures
    assert sim_acl.rt.set_device is ctx.originals["rt.set_device"]  # uninstalled


def test_contexts_and_their_default_streams_are_announced_in_order(sim_acl, model_path):
    ctx, hooks = hooked(sim_acl)
    try:
        job = SimJob(sim_acl, model_path)  # set_device, then create_context and create_stream
        default_context = ctx.state.default_context[0]
    finally:
        hooks.uninstall()
    kinds = (ContextCreated, ContextCurrent, StreamCreated)
    seen = [e for e in ctx.sink.take() if type(e) in kinds]
    ids = {e.stream_id for e in seen if type(e) is StreamCreated}
    assert [(type(e).__name__, e.context) for e in seen] == [
        ("ContextCreated", default_context),
        ("StreamCreated", default_context),
        ("ContextCurrent", default_context),
        ("ContextCreated", job.context),
        ("ContextCurrent", job.context),
        ("StreamCreated", job.context),
        ("StreamCreated", job.context),
    ]
    assert [e.is_default for e in seen if type(e) is ContextCreated] == [True, False]
    assert [e.stream for e in seen if type(e) is StreamCreated] == [0, 0, job.stream]
    assert len(ids) == 3 and -1 not in ids  # each default stream has an id of its own


def test_a_failed_call_carries_the_runtimes_message(sim_acl, model_path):
    ctx, hooks = hooked(sim_acl)
    try:
        job = SimJob(sim_acl, model_path)
        ret = sim_acl.rt.set_device(10_000)
        assert ret != ACL_SUCCESS
        assert sim_acl.rt.synchronize_stream(123456789) != ACL_SUCCESS  # no such stream
    finally:
        hooks.uninstall()
    failed = [e for e in ctx.sink.take() if type(e) is CallFailed]
    by_api = {e.api: e for e in failed}
    assert by_api["rt.set_device"].ret == ret and by_api["rt.set_device"].message
    assert by_api["rt.set_device"].stream == -1
    sync = by_api["rt.synchronize_stream"]
    assert sync.stream == 123456789 and sync.ret != 0 and sync.message
    assert job.stream != 123456789


def test_destroying_and_unloading_say_so_and_forget_only_what_went(sim_acl, model_path):
    ctx, hooks = hooked(sim_acl)
    try:
        job = SimJob(sim_acl, model_path)
        extra, ret = sim_acl.rt.create_stream()
        assert ret == 0
        assert sim_acl.rt.destroy_stream(0x1234) != ACL_SUCCESS
        assert sim_acl.rt.destroy_context(0x1234) != ACL_SUCCESS
        assert sim_acl.mdl.unload(4242) != ACL_SUCCESS
        assert sim_acl.rt.destroy_stream(extra) == ACL_SUCCESS
        assert sim_acl.mdl.unload(job.model_id) == ACL_SUCCESS
        assert sim_acl.rt.destroy_context(job.context) == ACL_SUCCESS
    finally:
        hooks.uninstall()
    gone = [
        (type(e).__name__, e[2], e.ret)
        for e in ctx.sink.take()
        if type(e) in (StreamDestroyed, ContextDestroyed, ModelUnloaded)
    ]
    assert gone[:3] == [
        ("StreamDestroyed", 0x1234, gone[0][2]),
        ("ContextDestroyed", 0x1234, gone[1][2]),
        ("ModelUnloaded", 4242, gone[2][2]),
    ]
    assert all(ret != ACL_SUCCESS for _, _, ret in gone[:3])
    # the context's own streams go with it, before it
    assert gone[3:] == [
        ("StreamDestroyed", extra, 0),
        ("ModelUnloaded", job.model_id, 0),
        ("StreamDestroyed", job.stream, 0),
        ("ContextDestroyed", job.context, 0),
    ]
    state = ctx.state
    assert job.model_id not in state.models and job.context not in state.contexts


def test_success_never_asks_for_the_message(sim_acl, model_path, monkeypatch):
    asked: list[int] = []
    real = sim_acl.get_recent_err_msg
    monkeypatch.setattr(sim_acl, "get_recent_err_msg", lambda: asked.append(1) or real())
    _, hooks = hooked(sim_acl)
    try:
        # (Setting up, the agent's own calls on the job's thread keep its error state:
        # that asks. The calls of the inner loop never do.)
        job = SimJob(sim_acl, model_path)
        asked.clear()
        for _ in range(5):
            assert job.run() == 0
        assert not asked
        assert sim_acl.rt.synchronize_stream(987654) != 0
        assert asked == [1]
    finally:
        hooks.uninstall()


def test_a_full_ring_drops_and_counts_never_raising_into_the_job(sim_acl, model_path):
    ctx, hooks = hooked(sim_acl, MemorySink(limit=3))
    try:
        job = SimJob(sim_acl, model_path)
        for _ in range(10):
            assert job.run() == 0
    finally:
        hooks.uninstall()
    assert len(ctx.sink.take()) == 3
    assert ctx.sink.dropped > 10
    assert not ctx.failures


def test_a_record_that_fails_to_build_is_skipped_alone():
    def broken(counter, record):
        raise ValueError("bad record")

    sink = MemorySink()
    ctx = AgentContext(object(), sink)
    ctx.log_line("info", "one")
    sink.submit((broken,))
    ctx.log_line("info", "two")
    assert [record[0] for record in sink.ring] == [PLAIN, broken, PLAIN]  # emit()'s form
    events, failed = build_records(list(sink.ring), iter(range(1, 10)))
    assert failed == 1
    assert [(e.seq, e.text) for e in events] == [(1, "one"), (2, "two")]
    assert all(type(e) is LogLine and e.pid == ctx.pid and e.log_file == "" for e in events)


def test_msproftx_marks_through_the_builder(sim_acl):
    ctx, hooks = hooked(sim_acl)
    try:
        assert sim_acl.init() == 0
        assert sim_acl.prof.mark_ex("step 1", 0) == 0
    finally:
        hooks.uninstall()
    marks = [e for e in ctx.sink.take() if type(e) is TxMark]
    assert [m.message for m in marks] == ["step 1"]


@pytest.mark.parametrize("unsubscribe", ["model_unsubscribe", "model_un_subscribe"])
def test_the_jobs_own_profiling_calls_move_the_owner_only_when_they_succeed(
    sim_acl, model_path, unsubscribe
):
    ctx, hooks = hooked(sim_acl)
    read_fd, write_fd = os.pipe()  # the runtime closes the write end at unsubscribe
    try:
        job = SimJob(sim_acl, model_path)
        ctx.sink.take()
        config = sim_acl.prof.create_subscribe_config(1, ACL_AICORE_PIPE_UTILIZATION, write_fd)
        assert sim_acl.prof.model_subscribe(4242, config) != ACL_SUCCESS  # no such model
        assert not [e for e in ctx.sink.take() if type(e) is ProfilingState]
        assert sim_acl.prof.model_subscribe(job.model_id, config) == ACL_SUCCESS
        subscribed = [e.owner for e in ctx.sink.take() if type(e) is ProfilingState]
        assert getattr(sim_acl.prof, unsubscribe)(job.model_id) == ACL_SUCCESS
        unsubscribed = [e.owner for e in ctx.sink.take() if type(e) is ProfilingState]
    finally:
        hooks.uninstall()
        os.close(read_fd)
    assert subscribed[-1] == "job" and unsubscribed == [""]


def test_sampler_and_exception_capture_take_only_the_context(sim_acl, model_path):
    ctx = AgentContext(sim_acl, MemorySink())
    Sampler(ctx, DeviceBinder(ctx)).sample_host()
    capture = ExceptionCapture(ctx)
    capture.callback(0)  # no such exception info: ids come back invalid, never raises
    events = ctx.sink.take()
    assert [type(e) for e in events] == [HostSample, AclException]
    assert events[1].op_name == ""


def test_dump_watcher_takes_only_the_context(tmp_path):
    ctx = AgentContext(object(), MemorySink())
    watcher = DumpWatcher(ctx, str(tmp_path))
    (tmp_path / "Add.add1.1.2.3").write_bytes(b"x" * 10)
    watcher.poll(final=True)
    (seen,) = ctx.sink.take()
    assert type(seen) is DumpFileSeen and seen.path.endswith("Add.add1.1.2.3")


def test_no_agent_part_imports_the_agent():
    for path in sorted(AGENT.glob("*.py")):
        if path.name in {"core.py", "__init__.py", "commands.py", "__main__.py"}:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert "aclmon.agent.core" not in names, path.name
