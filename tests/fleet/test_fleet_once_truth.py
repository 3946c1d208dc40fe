"""``attach nats://…/JOB --once --json``, with and without ``--since all``, while
the ranks run and after they exited, says for each rank what that rank's direct
``attach PID --once --json`` says (and what the job itself counted): each
exception once, the executions and the failures where they surfaced."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from fleethelpers import end_jobs, wait_until
from test_fleet_end_to_end import MODEL, SIM_JOB, aclmon, env_for, start_relay, stop_relay

from aclmon.bus import registry
from aclmon.children import dies_with_me

pytestmark = pytest.mark.slow

RANKS = 3
ITERATIONS = 24


def _figures(exceptions: list, executions: int, failures: int) -> dict:
    return {"exceptions": exceptions, "executions": executions, "failures": failures}


def direct(pid: int, env: dict[str, str]) -> dict:
    done = aclmon("attach", str(pid), "--once", "--json", "--wait", "1", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    keys = [[e["ts_ns"], e["device_id"], e["stream_id"], e["task_id"]]
            for e in data["exceptions"]["recent"]]  # fmt: skip
    assert data["exceptions"]["total"] == len(keys)  # fewer than the 20 listed
    return _figures(
        keys,
        sum(m["executions"] for m in data["models"]),
        sum(m["failures"] for m in data["models"]),
    )


def over_nats(nats_url: str, env: dict[str, str], *extra: str) -> dict[int, dict]:
    for _ in range(3):
        done = aclmon("attach", f"{nats_url}/train", "--once", "--json", "--wait", "0.3", *extra,
                      env=env)  # fmt: skip
        # A machine loaded far beyond its cores can take --once past its 10 s to set up
        # its subscriptions ("could not connect ... (connecting)"): that asks again; a
        # wrong answer never does.
        if "(connecting)" not in done.stderr:
            break
    assert done.returncode == 0, done.stderr
    sources = json.loads(done.stdout)["sources"]
    out = {}
    for s in sources:
        assert s["exceptions_total"] == len(s["exceptions"])
        assert s["gaps"] == 0, s  # the snapshot and the events met by their numbers
        out[s["pid"]] = _figures(s["exceptions"], s["executions"], s["failures"])
    return out


def test_once_over_nats_equals_each_ranks_direct_once(nats, runtime_dir, tmp_path):
    env = dict(env_for(runtime_dir), ACLMON_NATS_TOKEN=nats.token)
    nats_url = nats.url
    acl_json = tmp_path / "acl.json"
    acl_json.write_text("{}")
    idle = tmp_path / "idle"
    jobs = []
    relay = start_relay(nats_url, env, tmp_path)
    try:
        relay_log = tmp_path / "relay.log"
        for rank in range(RANKS):
            faults = [{"kind": "aicore_exception", "op_type": "MatMul", "every": 3 + rank}]
            job_env = dict(env, RANK_ID=str(rank), RANK_SIZE=str(RANKS), DEVICE_ID=str(rank),
                           ACLMON_SIM_FAULTS=json.dumps(faults))  # fmt: skip
            log = open(tmp_path / f"job{rank}.log", "w")  # noqa: SIM115 (closed below)
            command = [sys.executable, "-m", "aclmon", "run", "--sim", "--interval", "0.2",
                       SIM_JOB, str(MODEL), str(acl_json), "--iterations", str(ITERATIONS),
                       "--idle-until", str(idle), "--max-seconds", "90", "--pause", "0.05"]  # fmt: skip
            proc = subprocess.Popen(command, env=job_env, cwd=tmp_path, stdout=log, stderr=log,
                                    preexec_fn=dies_with_me())  # fmt: skip
            jobs.append((proc, log, tmp_path / f"job{rank}.log"))
        wait_until(lambda: len(registry.list_agents()) == RANKS, 30, "three agents registered")
        wait_until(lambda: relay_log.read_text().count("following pid") == RANKS, 30, "relay")

        # The jobs count their own failures; they idle once done, so the counts stay.
        def counted() -> dict[int, tuple[int, int]]:
            found = {}
            for proc, _, path in jobs:
                match = re.search(r"iterations (\d+) failures (\d+)\n", path.read_text())
                if match:
                    found[proc.pid] = (int(match.group(1)), int(match.group(2)))
            return found

        own = wait_until(lambda: len(counted()) == RANKS and counted(), 90, "jobs done")
        truth = {proc.pid: direct(proc.pid, env) for proc, _, _ in jobs}
        for pid, (iterations, failures) in own.items():
            said = (truth[pid]["executions"], truth[pid]["failures"])
            assert said == (iterations, failures), (pid, own, truth)
            assert failures > 0 and len(truth[pid]["exceptions"]) == failures

        assert over_nats(nats_url, env) == truth  # live: fresh snapshots through the relay
        assert over_nats(nats_url, env, "--since", "all") == truth

        idle.touch()
        for proc, _, _ in jobs:
            assert proc.wait(30) == 0
        wait_until(lambda: relay_log.read_text().count("ended (") == RANKS, 30, "relay saw exits")
        assert over_nats(nats_url, env) == truth  # the final snapshots the agents left
        assert over_nats(nats_url, env, "--since", "all") == truth
    finally:
        idle.touch()
        end_jobs([(proc, log) for proc, log, _ in jobs])
        stop_relay(relay)
