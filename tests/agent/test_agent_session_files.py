"""Operator records read back from a profiling session's files, with the
selected AI Core metric's values; live timings name the model's device."""

from __future__ import annotations

import json
import os
import time

from agenthelpers import SimJob, agent_factory, model_path, sim_acl

from aclmon.acl_constants import (
    ACL_AICORE_MEMORY_BANDWIDTH,
    ACL_AICORE_PIPE_UTILIZATION,
    ACL_PROF_AICORE_METRICS,
    ACL_PROF_TASK_TIME,
    AICORE_METRIC_COLUMNS,
)
from aclmon.agent.context import AgentContext, MemorySink
from aclmon.agent.session_files import SessionFiles
from aclmon.events import OpTiming, SetProfilingConfig, StartProfiling, StopProfiling

__all__ = ["agent_factory", "model_path", "sim_acl"]  # fixtures, imported for pytest


def send(events, cls, *fields):
    return events.subscriber.send_command(cls, *fields, timeout=15)


def timings_of_runs(events, job, what):
    """Run the job's model until OpTiming events arrive; they, in order."""

    def arrived(evs):
        found = [e for e in evs if type(e) is OpTiming]
        if not found:
            job.run()
        return found or None

    return events.wait_for(arrived, what=what)


def test_profiling_to_files_brings_the_metric_columns_of_the_chosen_group(
    agent_factory, sim_acl, model_path
):
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    flags = ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS
    assert send(events, SetProfilingConfig, flags, ACL_AICORE_MEMORY_BANDWIDTH, (0,), 0).code == 0
    reply = send(events, StartProfiling)
    assert reply.code == 0, reply.message
    timing = timings_of_runs(events, job, "op timings read back from the session's files")[0]
    assert timing.model_id == job.model_id and timing.device_id == 0
    assert timing.op_name and timing.duration_us >= 1
    assert list(timing.metrics) == list(AICORE_METRIC_COLUMNS[ACL_AICORE_MEMORY_BANDWIDTH])
    assert all(value > 0 for value in timing.metrics.values())
    assert send(events, StopProfiling).code == 0
    assert not agent.failures


def test_live_timings_name_the_models_device(agent_factory, sim_acl, model_path):
    agent, events = agent_factory()
    job = SimJob(sim_acl, model_path)
    assert send(events, SetProfilingConfig, 0, ACL_AICORE_PIPE_UTILIZATION, (), 0).code == 0
    assert send(events, StartProfiling).code == 0
    timing = timings_of_runs(events, job, "live op timings")[0]
    assert timing.device_id == 0 and timing.metrics == {}
    assert send(events, StopProfiling).code == 0
    assert not agent.failures


def _session(root, name, info):
    directory = root / name
    (directory / "device_3" / "data").mkdir(parents=True)
    (directory / "info.json").write_text(json.dumps(info))
    return directory / "device_3" / "data"


def test_the_reader_skips_other_processes_and_bad_lines(tmp_path, sim_acl):
    sink = MemorySink()
    ctx = AgentContext(sim_acl, sink)
    now_us = time.time_ns() // 1000
    ours = {"pid": os.getpid(), "start_time_us": now_us, "data_type_config": ACL_PROF_TASK_TIME}
    data = _session(tmp_path, "PROF_000001_a", ours)
    _session(tmp_path, "PROF_000002_b", {**ours, "pid": os.getpid() + 1})
    _session(tmp_path, "PROF_000003_c", {**ours, "start_time_us": now_us - 3_600_000_000})
    record = {"model_id": 4, "op_name": "Add_1", "op_type": "Add", "start_us": 10, "end_us": 14}
    lines = [json.dumps(record), "not json", json.dumps({"op_name": "x"}), '{"model_id": 4, "op']
    (data / "task_time.jsonl").write_text("\n".join(lines))
    reader = SessionFiles(ctx, str(tmp_path))
    assert reader.poll() == 1 and reader.bad_lines == 2
    with open(data / "task_time.jsonl", "a") as handle:  # the half line completes
        handle.write('_name": "Mul", "start_us": 1, "end_us": 3, "duration_ns": 1500}\n')
    assert reader.poll() == 1
    sent = [e for e in sink.take() if type(e) is OpTiming]
    assert [(e.op_name, e.device_id, e.duration_us, e.metrics) for e in sent] == [
        ("Add_1", 3, 4, {}), ("Mul", 3, 1, {}),
    ]  # fmt: skip
    assert SessionFiles(ctx, str(tmp_path / "missing")).poll() == 0
