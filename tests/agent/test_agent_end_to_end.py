"""`aclmon run --sim` with a real job in a subprocess, and a subscriber in the test."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agenthelpers import MODEL, SIM_JOB, Collector, model_path, write_acl_json

from aclmon.acl_constants import (
    ACL_AICORE_PIPE_UTILIZATION,
    ACL_ERROR_PROF_NOT_RUN,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_FLOAT16,
    ACL_FORMAT_ND,
    ACL_PROF_ACL_API,
    ACL_PROF_AICORE_METRICS,
    ACL_PROF_TASK_TIME,
)
from aclmon.bus import registry
from aclmon.bus.recording import RecordingReader
from aclmon.bus.subscriber import Subscriber
from aclmon.events import (
    AclException,
    ContextCreated,
    DeviceReset,
    DeviceSample,
    DeviceSet,
    DumpFileSeen,
    ExecuteEnd,
    Hello,
    HostSample,
    ModelLoaded,
    ModelUnloaded,
    OpTiming,
    ProfilingState,
    SetProfilingConfig,
    StartProfiling,
    StopProfiling,
    StreamCreated,
    StreamSynchronized,
)

pytestmark = pytest.mark.slow
__all__ = ["model_path"]  # a fixture, imported for pytest

FAULTS = [
    {"kind": "aicore_exception", "op": "mm1", "every": 25},
    {"kind": "overflow", "op": "add1", "nth": 3},
]


def sim_env() -> dict[str, str]:
    env = dict(os.environ, ACLMON_SIM_FAULTS=json.dumps(FAULTS))
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    return env


def start_job(tmp_path: Path, model_path: Path, acl_json: Path, *extra: str) -> tuple:
    """The job under ``python -m aclmon.agent`` (the ``run`` command, loaded alone)."""
    address = str(tmp_path / "agent.sock")
    stderr_path = tmp_path / "stderr.txt"
    env = sim_env()
    command = [
        sys.executable,
        "-m",
        "aclmon.agent",
        "--sim",
        "--listen",
        address,
        "--interval",
        "0.2",
        "--profiling-output",
        str(tmp_path / "prof"),
        SIM_JOB,
        str(model_path),
        str(acl_json),
        "--until",
        str(tmp_path / "stop"),
        "--max-seconds",
        "60",
        "--pause",
        "0.01",
        *extra,
    ]
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    deadline = time.monotonic() + 30
    while "listening on" not in stderr_path.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail(f"agent did not start: {stderr_path.read_text()}")
        time.sleep(0.05)
    return proc, address, stderr_path


@pytest.fixture
def job(tmp_path, model_path):
    acl_json = write_acl_json(
        tmp_path / "acl.json", dump={"dump_path": str(tmp_path / "dumps"), "dump_debug": "on"}
    )
    proc, address, stderr_path = start_job(
        tmp_path, model_path, acl_json, "--callback-log", str(tmp_path / "callbacks.log")
    )
    subscriber = Subscriber(address).start()
    try:
        assert subscriber.wait_connected(15), subscriber.state_reason
        yield proc, Collector(subscriber), stderr_path
    finally:
        subscriber.close()
        (tmp_path / "stop").touch()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def command(collector: Collector, cls: type, *fields):
    return collector.subscriber.send_command(cls, *fields, timeout=15)


def test_sim_job_end_to_end(job, tmp_path):
    proc, events, stderr_path = job
    line = stderr_path.read_text().splitlines()[0]
    assert line == f"aclmon agent: listening on unix:{tmp_path / 'agent.sock'} (pid {proc.pid})"
    assert any(a.pid == proc.pid for a in registry.list_agents())

    # ---- the runtime objects the job created
    hello = events.wait_kind(Hello, lambda e: e.device_count > 0)
    assert hello.runtime == "sim" and hello.soc_name and hello.pid == proc.pid
    events.wait_kind(DeviceSet, lambda e: e.device_id == 0 and e.ret == 0)
    default = events.wait_kind(ContextCreated, lambda e: e.is_default)
    explicit = events.wait_kind(ContextCreated, lambda e: not e.is_default)
    assert default.device_id == explicit.device_id == 0
    stream = events.wait_kind(StreamCreated, lambda e: e.stream != 0)
    assert stream.context == explicit.context and stream.stream_id >= 0
    model = events.wait_kind(ModelLoaded)
    # named by the description's name (not the file name), with its real operator count
    assert model.name == MODEL["name"] == "tiny" and model.device_id == 0
    assert model.op_count == len(MODEL["ops"])
    events.wait_kind(StreamSynchronized, lambda e: e.stream == stream.stream)
    events.wait_kind(HostSample)
    sample = events.wait_kind(DeviceSample)
    assert sample.device_id == 0 and sample.hbm_total > 0

    # ---- an injected AI Core exception, with the op and tensors of the model description
    exception = events.wait_kind(AclException)
    assert exception.error_code == ACL_ERROR_RT_AICORE_EXCEPTION
    assert exception.device_id == 0 and exception.stream_id == stream.stream_id
    assert exception.op_name == "mm1"
    op = MODEL["ops"][0]
    specs = {t["name"]: t for t in MODEL["inputs"] + MODEL["weights"]}
    assert [t.name for t in exception.inputs] == op["inputs"]
    assert [t.dims for t in exception.inputs] == [tuple(specs[n]["shape"]) for n in op["inputs"]]
    assert [t.name for t in exception.outputs] == [o["name"] for o in op["outputs"]]
    assert [t.dims for t in exception.outputs] == [tuple(op["outputs"][0]["shape"])]
    for tensor in exception.inputs + exception.outputs:
        assert (tensor.dtype, tensor.format) == (ACL_FLOAT16, ACL_FORMAT_ND)
        assert tensor.size == 2 * math.prod(tensor.dims) and tensor.address

    # ---- the overflow dump, decoded
    overflow = events.wait_kind(DumpFileSeen, lambda e: e.kind == "overflow")
    assert os.path.basename(overflow.path).startswith("Opdebug.Node_OpDebug.")
    assert overflow.size == os.path.getsize(overflow.path)
    assert overflow.summary.get("kind") == "overflow"
    assert overflow.summary.get("records"), overflow.summary

    # ---- live operator timings: start, records arrive, stop
    reply = command(events, SetProfilingConfig, 0, ACL_AICORE_PIPE_UTILIZATION, (), 200)
    assert reply.code == 0, reply.message
    reply = command(events, StartProfiling)
    assert reply.code == 0, reply.message
    events.wait_kind(ProfilingState, lambda e: e.running and e.subscribed and e.owner == "aclmon")
    timings = events.wait_for(
        lambda evs: (
            {(e.op_name, e.op_type) for e in evs if type(e) is OpTiming}
            >= {
                ("mm1", "MatMul"),
                ("add1", "Add"),
                ("relu1", "Relu"),
            }
        ),
        what="op timings of every operator",
    )
    assert timings
    timing = events.of(OpTiming)[0]
    assert timing.model_id == model.model_id and timing.end_us >= timing.start_us
    # Learned from the timings: later exceptions name the op type.
    events.wait_kind(AclException, lambda e: e.op_type == "MatMul", timeout=30)
    reply = command(events, StopProfiling)
    assert reply.code == 0, reply.message
    events.wait_kind(ProfilingState, lambda e: not e.running and not e.subscribed)

    # ---- API-mode profiling: the sim's profiling state changes (it writes a PROF_ dir)
    flags = ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS
    reply = command(events, SetProfilingConfig, flags, ACL_AICORE_PIPE_UTILIZATION, (0,), 0)
    assert reply.code == 0, reply.message
    reply = command(events, StartProfiling)
    assert reply.code == 0, reply.message
    state = events.wait_kind(ProfilingState, lambda e: e.running and e.initialized)
    assert state.owner == "aclmon" and state.flags == flags and state.devices == (0,)
    assert state.output_path == str(tmp_path / "prof")
    time.sleep(0.3)  # let the job execute while profiling runs
    reply = command(events, StopProfiling)
    assert reply.code == 0, reply.message
    events.wait_kind(ProfilingState, lambda e: not e.running and not e.initialized)
    assert any(p.name.startswith("PROF_") for p in (tmp_path / "prof").iterdir())
    reply = command(events, StopProfiling)
    assert reply.code == ACL_ERROR_PROF_NOT_RUN and "no profiling session" in reply.message

    # ---- the job ends cleanly; its own exception callback fired for every exception
    (tmp_path / "stop").touch()
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr_path.read_text()
    assert "iterations" in out
    events.drain(0.5)
    captured = {e.task_id for e in events.of(AclException)}
    job_saw = {
        int(line.split()[1])
        for line in (tmp_path / "callbacks.log").read_text().split("\n")
        if line
    }
    assert captured and captured <= job_saw
    assert all(a.pid != proc.pid for a in registry.list_agents())
    # Every event decoded against the schema (the hot path builds tuples by hand).
    assert events.subscriber.malformed == 0 and events.subscriber.unknown == 0


def test_aclmon_run_command(tmp_path, model_path):
    """`python -m aclmon run` (the CLI dispatcher) runs the script and passes its exit status."""
    acl_json = write_acl_json(tmp_path / "acl.json")
    address = tmp_path / "run.sock"
    recording = tmp_path / "job.aclmon"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "aclmon",
            "run",
            "--sim",
            "--listen",
            str(address),
            "--record",
            str(recording),
            SIM_JOB,
            str(model_path),
            str(acl_json),
            "--iterations",
            "3",
            "--pause",
            "0",
        ],
        cwd=tmp_path,
        env=sim_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"aclmon agent: listening on unix:{address} (pid {result.stderr.split('(pid ')[1].split(')')[0]})"
    )
    assert "iterations 3" in result.stdout
    with RecordingReader(recording) as reader:
        assert reader.wait_indexed(10)
        recorded = list(reader.iter_events())
    kinds = [type(e) for e in recorded]
    assert kinds.count(ExecuteEnd) == 3 and kinds.count(StreamSynchronized) == 3
    assert Hello in kinds and ModelUnloaded in kinds and DeviceReset in kinds
    assert not address.exists()  # the socket is gone with the agent
    failing = subprocess.run(
        [
            sys.executable,
            "-m",
            "aclmon",
            "run",
            "--sim",
            "--listen",
            str(address),
            SIM_JOB,
            str(tmp_path / "missing-model.json"),
            str(acl_json),
        ],
        cwd=tmp_path,
        env=sim_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert failing.returncode == 1 and "load_from_file failed" in failing.stderr
    no_pyacl = subprocess.run(
        [sys.executable, "-m", "aclmon.agent", SIM_JOB, str(model_path), str(acl_json)],
        cwd=tmp_path,
        env=sim_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if importlib.util.find_spec("acl") is None:  # no CANN here: one clear error
        assert no_pyacl.returncode == 1
        assert no_pyacl.stderr.startswith("aclmon run: pyACL is not importable")
    missing = subprocess.run(
        [sys.executable, "-m", "aclmon.agent", "--sim", str(tmp_path / "nope.py")],
        cwd=tmp_path,
        env=sim_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"aclmon run: no such script: {tmp_path / 'nope.py'}"


def test_sigterm_stops_the_agent_cleanly(tmp_path, model_path):
    """SIGTERM (how `aclmon demo` stops its job) still ends the job by SIGTERM, but the
    agent first flushes the recording, removes its socket and its registry entry."""
    acl_json = write_acl_json(tmp_path / "acl.json")
    address = tmp_path / "term.sock"
    recording = tmp_path / "term.aclmon"
    stderr_path = tmp_path / "stderr.txt"
    command = [
        sys.executable,
        "-m",
        "aclmon.agent",
        "--sim",
        "--listen",
        str(address),
        "--record",
        str(recording),
        SIM_JOB,
        str(model_path),
        str(acl_json),
        "--max-seconds",
        "60",
    ]
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(command, cwd=tmp_path, env=sim_env(), stderr=stderr)
    try:
        subscriber = Subscriber(str(address)).start()
        try:
            events = Collector(subscriber)
            events.wait_kind(StreamSynchronized, timeout=30)
        finally:
            subscriber.close()
        proc.terminate()
        assert proc.wait(timeout=30) == -15
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not address.exists()
    assert all(a.pid != proc.pid for a in registry.list_agents())
    with RecordingReader(recording) as reader:
        assert reader.wait_indexed(10)
        kinds = {type(e) for e in reader.iter_events()}
    assert {Hello, DeviceSet, ModelLoaded, StreamSynchronized} <= kinds


def test_a_failing_script_shows_its_own_traceback(tmp_path):
    (tmp_path / "bad.py").write_text('def f():\n    raise ValueError("boom")\n\nf()\n')
    result = subprocess.run(
        [sys.executable, "-m", "aclmon.agent", "--sim", "--listen", "a.sock", "bad.py"],
        cwd=tmp_path,
        env=sim_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    # (caret lines under the code differ between Python versions: not compared)
    lines = [line for line in result.stderr.splitlines() if line.strip(" ^~")]
    assert lines[0].startswith("aclmon agent: listening on unix:a.sock")
    # exactly what `python bad.py` prints: the script's frames only
    assert lines[1:] == [
        "Traceback (most recent call last):",
        '  File "bad.py", line 4, in <module>',
        "    f()",
        '  File "bad.py", line 2, in f',
        '    raise ValueError("boom")',
        "ValueError: boom",
    ]


def test_a_job_listening_at_a_chosen_path_is_found_by_pid(tmp_path, model_path):
    """`aclmon run --listen PATH` still registers the agent: `aclmon attach PID` finds it."""
    acl_json = write_acl_json(tmp_path / "acl.json")
    proc, address, _ = start_job(tmp_path, model_path, acl_json)
    try:
        assert registry.resolve_target(str(proc.pid)) == f"unix:{address}"
    finally:
        (tmp_path / "stop").touch()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
