"""Three simulated jobs, one relay, one nats-server: what a fleet viewer sees,
live and, after everything exited, from JetStream; a command over NATS."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fleethelpers import end_jobs, wait_until

from aclmon import events as ev
from aclmon.acl_constants import ACL_AICORE_PIPE_UTILIZATION, ACL_PROF_ACL_API, ACL_PROF_TASK_TIME
from aclmon.bus import registry
from aclmon.children import dies_with_me
from aclmon.fleet import subjects as sj
from aclmon.fleet.nats_source import NatsFeed

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
SIM_JOB = str(ROOT / "tests" / "agent" / "sim_job.py")
MODEL = ROOT / "aclmon" / "sim" / "models" / "mlp_head.json"


def env_for(runtime_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["XDG_RUNTIME_DIR"] = str(runtime_dir.parent)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("ACLMON_JOB", None)
    return env


def aclmon(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aclmon", *args],
        env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@pytest.fixture
def three_jobs(tmp_path: Path, runtime_dir: Path):
    model = MODEL
    acl_json = tmp_path / "acl.json"
    acl_json.write_text("{}")
    env = env_for(runtime_dir)
    stop = tmp_path / "stop"
    jobs = []
    try:
        for rank in range(3):
            job_env = dict(env, RANK_ID=str(rank), RANK_SIZE="3", DEVICE_ID=str(rank))
            log = open(tmp_path / f"job{rank}.log", "w")  # noqa: SIM115 (closed below)
            command = [sys.executable, "-m", "aclmon", "run", "--sim", "--interval", "0.2",
                       "--profiling-output", str(tmp_path / f"prof{rank}"),
                       SIM_JOB, str(model), str(acl_json), "--until", str(stop),
                       "--max-seconds", "60", "--pause", "0.01"]  # fmt: skip
            proc = subprocess.Popen(command, env=job_env, cwd=tmp_path, stdout=log, stderr=log,
                                    preexec_fn=dies_with_me())  # fmt: skip
            jobs.append((proc, log))
        wait_until(lambda: len(registry.list_agents()) == 3, 30, "three agents registered")
        yield env, stop, [proc for proc, _ in jobs]
    finally:
        stop.touch()
        end_jobs(jobs)


def start_relay(nats_url: str, env: dict[str, str], tmp_path: Path, *extra: str):
    log = open(tmp_path / "relay.log", "w")  # noqa: SIM115 (closed by stop_relay)
    proc = subprocess.Popen(
        [sys.executable, "-m", "aclmon", "relay", "--nats", nats_url, "--job", "train",
         "--flush-ms", "10", *extra],
        env=env, stdout=log, stderr=log, preexec_fn=dies_with_me(),
    )  # fmt: skip
    return proc, log


def stop_relay(relay) -> None:
    proc, _ = relay
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    end_jobs([relay])


def fleet_json(nats_url: str, env: dict[str, str], *extra: str) -> dict:
    done = aclmon("attach", f"{nats_url}/train", "--once", "--json", *extra, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_three_jobs_live_then_from_jetstream_and_a_command(nats, three_jobs, tmp_path):
    env, stop, jobs = three_jobs
    env = dict(env, ACLMON_NATS_TOKEN=nats.token)
    relay = start_relay(nats.url, env, tmp_path)
    try:
        relay_log = tmp_path / "relay.log"
        wait_until(lambda: relay_log.read_text().count("following pid") == 3, 30, "relay follows")
        pids = {proc.pid for proc in jobs}

        live = fleet_json(nats.url, env, "--wait", "1.5")
        assert {s["pid"] for s in live["sources"]} == pids
        assert sorted(s["rank"] for s in live["sources"]) == [0, 1, 2]
        for source in live["sources"]:
            identity = source["identity"]
            assert identity["rank_size"] == 3 and identity["device_id"] == source["rank"]
            assert identity["job"] == "sim_job"  # the script's name; the relay's --job wins
        for source in live["sources"]:
            assert source["state"] == "live"
            assert source["executions"] > 0, source
            assert source["models"] and source["models"][0]["name"]

        # A profiling command over NATS reaches the one agent it names.
        target = sorted(pids)[1]
        host = sj.short_host(live["sources"][0]["host"])
        feed = NatsFeed(nats.url, sj.Scope("train"), nats.credentials)
        feed.start()
        try:
            wait_until(lambda: feed.state == "connected", 10, "viewer connected")
            flags = ACL_PROF_TASK_TIME | ACL_PROF_ACL_API
            reply = feed.send_command(
                (host, target), ev.SetProfilingConfig, flags, ACL_AICORE_PIPE_UTILIZATION, (0,), 0,
                timeout=10,
            )  # fmt: skip
            assert reply.code == 0, reply
            reply = feed.send_command((host, target), ev.StartProfiling, timeout=10)
            assert reply.code == 0, reply
            running: dict = {}

            def target_running() -> bool:
                for key, events in feed.poll():
                    for e in events:
                        if isinstance(e, ev.ProfilingState):
                            running[key] = e.running
                return running.get((host, target), False)

            wait_until(target_running, 15, "the target's profiling running")
            assert not any(on for key, on in running.items() if key != (host, target))
        finally:
            feed.close()
        light = fleet_json(nats.url, env, "--summary-only", "--wait", "1.5")
        assert {s["pid"] for s in light["sources"]} == pids  # from summary and state alone
        assert sorted(s["rank"] for s in light["sources"]) == [0, 1, 2]
        after = fleet_json(nats.url, env, "--since", "all", "--wait", "0.5")
        assert {s["pid"] for s in after["sources"]} == pids

        # Jobs and relay exit; JetStream still has them.
        stop.touch()
        for proc in jobs:
            proc.wait(30)
        wait_until(lambda: relay_log.read_text().count("ended (") == 3, 30, "relay saw exits")
    finally:
        stop_relay(relay)
    relay_log = (tmp_path / "relay.log").read_text()
    assert "stopped after 3 agents" in relay_log and " 0 dropped" in relay_log
    history = fleet_json(nats.url, env, "--since", "10m", "--wait", "0.3")
    assert {s["pid"] for s in history["sources"]} == pids
    for source in history["sources"]:
        assert source["executions"] > 0, source
        assert source["state"] == "exited"
        assert source["gaps"] == 0
        assert source["dropped"] == 0

    # One source's stream into today's recording format.
    source = history["sources"][0]
    host = sj.short_host(source["host"])
    recording = tmp_path / "rank.aclrec"
    done = aclmon("record", f"{nats.url}/train/{host}/{source['pid']}", str(recording),
                  "--since", "all", "--count", "200", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    from aclmon.bus.recording import RecordingReader

    with RecordingReader(recording, background=False) as reader:
        events = list(reader.iter_events())
    assert len(events) == 200
    assert isinstance(events[0], ev.Hello) and events[0].pid == source["pid"]
    assert events[0].rank == source["rank"]


def test_attach_without_the_token_is_refused(nats, runtime_dir, tmp_path):
    env = env_for(runtime_dir)
    env.pop("ACLMON_NATS_TOKEN", None)
    refused = aclmon("attach", f"{nats.url}/train", "--once", "--json", env=env)
    assert refused.returncode == 1
    assert "authorization violation" in refused.stderr
    assert "Traceback" not in refused.stderr
    token_file = tmp_path / "nats.token"
    token_file.write_text(f"{nats.token}\n")
    token_file.chmod(0o600)
    allowed = aclmon(
        "attach", f"{nats.url}/train", "--once", "--json", "--wait", "0.2",
        "--token-file", str(token_file), env=env,
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["sources"] == []


def test_run_with_relay_starts_one_relay_for_the_host(nats, runtime_dir, tmp_path):
    from aclmon.fleet.hostrelay import running_relay

    env = dict(env_for(runtime_dir), ACLMON_NATS_TOKEN=nats.token)
    stop = tmp_path / "stop"
    jobs = []
    relay_pid = None
    try:
        for rank in range(2):
            log = open(tmp_path / f"job{rank}.log", "w")  # noqa: SIM115 (closed below)
            command = [sys.executable, "-m", "aclmon", "run", "--sim", "--relay", nats.url,
                       "--job", "relayed", SIM_JOB, str(MODEL), "/dev/null", "--until", str(stop),
                       "--max-seconds", "60", "--pause", "0.01"]  # fmt: skip
            proc = subprocess.Popen(command, env=env, stdout=log, stderr=log,
                                    preexec_fn=dies_with_me())  # fmt: skip
            jobs.append((proc, log))
        wait_until(lambda: len(registry.list_agents()) == 2, 30, "two agents")
        relay_pid = running_relay(runtime_dir)
        assert relay_pid and relay_pid > 0
        started = sum((tmp_path / f"job{r}.log").read_text().count("started this host's relay")
                      for r in range(2))  # fmt: skip
        assert started == 1
        done = aclmon("attach", f"{nats.url}/relayed", "--once", "--json", "--wait", "1",
                      env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert len(json.loads(done.stdout)["sources"]) == 2
    finally:
        stop.touch()
        end_jobs(jobs)
        if relay_pid and relay_pid > 0:
            os.kill(relay_pid, signal.SIGTERM)
            wait_until(lambda: running_relay(runtime_dir) is None, 20, "the relay stopped")
