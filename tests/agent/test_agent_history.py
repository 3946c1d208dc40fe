"""A viewer that connects late sees what happened before it: `attach --once --json`
after 100 synchronous executions with 4 AI Core exceptions, then the job's exit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from agenthelpers import MODEL, SIM_JOB, Collector, model_path, write_acl_json  # noqa: F401
from test_agent_end_to_end import sim_env

from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION
from aclmon.bus.subscriber import Subscriber
from aclmon.events import AclException, Goodbye, History

FAULTS = [{"kind": "aicore_exception", "op": "mm1", "every": 25}]


def _attach_once(pid: int, tmp_path: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "aclmon", "attach", str(pid), "--once", "--json", "--wait", "0.3"],
        cwd=tmp_path,
        env=sim_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_late_once_json_reports_everything_since_start(tmp_path, model_path):  # noqa: F811
    env = sim_env()
    env["ACLMON_SIM_FAULTS"] = json.dumps(FAULTS)
    acl_json = write_acl_json(
        tmp_path / "acl.json",
        dump={"dump_path": str(tmp_path / "dumps"), "dump_scene": "aic_err_brief_dump"},
    )
    address = tmp_path / "agent.sock"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "aclmon", "run", "--sim", "--listen", str(address),
            "--interval", "0.2", SIM_JOB, str(model_path), str(acl_json),
            "--sync", "--iterations", "100", "--pause", "0",
            "--idle-until", str(tmp_path / "stop"), "--max-seconds", "60",
            "--exit-status", "3",
        ],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once the 100 executions are done
        assert line.strip() == "iterations 100 failures 4", line or proc.stderr.read()

        deadline = time.monotonic() + 60
        while True:  # the exception dumps are announced once their size is stable
            data = _attach_once(proc.pid, tmp_path)
            # (on a loaded machine the snapshot may come after --wait: ask again)
            done = data["dumps"]["total"] >= 4 and data["models"]
            if done or time.monotonic() > deadline:
                break
        (model,) = data["models"]
        assert (model["name"], model["executions"], model["failures"]) == (MODEL["name"], 100, 4)
        exceptions = data["exceptions"]
        assert exceptions["total"] == 4 and len(exceptions["recent"]) == 4
        for n, e in enumerate(exceptions["recent"], start=1):
            assert e["op_type"] != "exception_info" and e["op_name"] == "mm1"
            assert e["op_type"] == "MatMul"  # from the simulator's model description
            assert e["error_code"] == ACL_ERROR_RT_AICORE_EXCEPTION
            # which execution of which model raised it
            assert (e["model_name"], e["execution"]) == (MODEL["name"], 25 * n)
            # what the runtime said when the execute failed, though we connected later
            assert "EZ9999" in e["runtime_message"], e
        failures = data["call_failures"]
        assert failures["total"] == 4 and len(failures["recent"]) == 4
        assert {f["api"] for f in failures["recent"]} == {"mdl.execute"}
        assert all(f["ret"] == ACL_ERROR_RT_AICORE_EXCEPTION for f in failures["recent"])
        dumps = data["dumps"]
        assert dumps["total"] == 4
        assert {d["file_kind"] for d in dumps["recent"]} == {"exception-dump"}
        assert all("op_type" not in d["summary"] for d in dumps["recent"])
        assert data["since_ns"] and data["goodbye"] is None
        # nothing unknown reads as a figure: no rank -1, no -1 % utilization
        assert [data["target"][k] for k in ("rank", "rank_size", "device_id")] == [None] * 3
        assert not re.search(r'": -\d', json.dumps(data)), "a negative sentinel in the JSON"

        # a live viewer from now on: the history first, then the job's goodbye
        subscriber = Subscriber(str(address)).start()
        try:
            assert subscriber.wait_connected(15), subscriber.state_reason
            events = Collector(subscriber)
            history = events.wait_kind(History)
            assert history.exceptions_total == 4 and history.dumps_total == 4
            assert history.call_failures_total == 4
            assert history.models[1:] == (100, 4)
            assert len(events.of(AclException)) == 4
            (tmp_path / "stop").touch()
            goodbye = events.wait_kind(Goodbye)
            assert (goodbye.exit_status, goodbye.status_known, goodbye.reason) == (3, True, "exit")
        finally:
            subscriber.close()
        assert proc.wait(timeout=30) == 3  # `aclmon run` exits with the job's own status
    finally:
        (tmp_path / "stop").touch()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_history_keeps_the_last_n_and_counts_apart(tmp_path):
    """Unit level: bounded rings, totals since start, the attribution rules."""
    from aclmon.agent.history import HistoryKeeper
    from aclmon.events import (
        CallFailed,
        DumpFileSeen,
        ExecuteEnd,
        LogLine,
        ModelLoaded,
        StreamCreated,
        StreamSynchronized,
    )

    keeper = HistoryKeeper(recent=2)
    exc = lambda seq, task, stream_id=7: AclException(  # noqa: E731
        seq, 1000 + seq, 0, stream_id, task, 1, ACL_ERROR_RT_AICORE_EXCEPTION, "mm1", "", (), ()
    )
    batch = [
        ModelLoaded(1, 1, 5, 0, "m", 0),
        StreamCreated(2, 2, 0, 0xC0, 0xB0, 7, 0, 0),
        ExecuteEnd(3, 3, 5, 0xB0, 10, 0),  # execute_async: launch 1 on the stream
        exc(4, 11),  # raised by launch 1
        StreamSynchronized(5, 5, 0xB0, 10, ACL_ERROR_RT_AICORE_EXCEPTION, -1),
        ExecuteEnd(6, 6, 5, 0, 10, 0),  # synchronous: execution 2
    ]
    out = keeper.observe(batch)
    assert (out[3].model_name, out[3].execution) == ("m", 1)
    keeper.note_running_model(1007, 12, 5)  # the capture saw execution 3 running
    out = keeper.observe([exc(7, 12, stream_id=99), ExecuteEnd(8, 8, 5, 0, 10, 507015)])
    assert (out[0].model_name, out[0].execution) == ("m", 3)
    keeper.observe([exc(9, 13, stream_id=99)])  # nobody known: left unattributed
    keeper.observe([DumpFileSeen(10 + n, 10, f"/d/{n}", "exception-dump", 1, {}) for n in range(3)])
    keeper.observe(
        [CallFailed(20 + n, 20, "mdl.execute", 507015, f"EZ9999 {n}", 1, -1) for n in range(3)]
    )
    keeper.observe([LogLine(30 + n, 30, "error", f"line {n}") for n in range(3)])
    snapshot = keeper.snapshot_events()
    assert [type(e).__name__ for e in snapshot] == [
        "AclException", "AclException", "CallFailed", "CallFailed", "LogLine", "LogLine",
        "DumpFileSeen", "DumpFileSeen", "History",
    ]  # fmt: skip
    assert [e.message for e in snapshot[2:4]] == ["EZ9999 1", "EZ9999 2"]
    assert [e.text for e in snapshot[4:6]] == ["line 1", "line 2"]
    assert all(e.seq == 0 for e in snapshot)
    assert [e.task_id for e in snapshot[:2]] == [12, 13] and snapshot[1].model_name == ""
    history = snapshot[-1]
    # Two executions failed: launch 1 (its exception, then its synchronize: once)
    # and execution 3 (its exception, then the execute's own code: once).
    assert history.models == (5, 3, 2) and history.exceptions_total == 3
    # device 0: one error (the synchronize), three exceptions, one stream that failed
    assert history.devices == (0, 1, 3, 1)
    assert history.through_seq == 32  # the last event counted
    assert history.dumps_total == 3 and history.call_failures_total == 3
    # one exception and the failed synchronize it caused: one error on the stream
    assert history.streams == (0xB0, 1, 1, ACL_ERROR_RT_AICORE_EXCEPTION)
    assert history.stream_exceptions == (0, 7, 1, 0, 99, 2)
