"""A job that does its ACL work in multiprocessing workers: each worker that
initialises ACL gets its own agent (own socket, registered, the job's name, its
worker index as rank), for fork and spawn alike, and the parent's agent carries on."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import aclmon.sim
from aclmon.bus import registry
from aclmon.bus.subscriber import Subscriber
from aclmon.events import ExecuteEnd, Hello, History
from aclmon.fleet.local import LocalFeed

from agenthelpers import Collector  # isort: skip

POOL_JOB = Path(__file__).parent / "pool_job.py"
MODEL = os.path.join(aclmon.sim.MODELS_DIR, "resnet_tiny.json")


def _wait(predicate, timeout: float = 60.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while True:
        found = predicate()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_workers_each_get_an_agent(tmp_path, method):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    registry_dir = runtime / "aclmon"
    stop = tmp_path / "stop"
    address = str(tmp_path / "parent.sock")
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), ACLMON_SIM_CONFIG='{"time_scale": 0}')
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    command = [
        sys.executable, "-m", "aclmon.agent", "--sim", "--listen", address, "--interval", "0.2",
        "--profiling-output", str(tmp_path / "prof"),
        str(POOL_JOB), method, str(stop), MODEL,
    ]  # fmt: skip
    stderr_path = tmp_path / "stderr.txt"
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    feed = None
    parent = None
    try:
        _wait(lambda: Path(address).exists() or proc.poll() is not None, what="the parent agent")
        parent = Subscriber(address).start()
        assert parent.wait_connected(30), parent.state_reason
        parent_events = Collector(parent)
        agents = _wait(
            lambda: (
                len(registry.list_agents(registry_dir)) == 4 and registry.list_agents(registry_dir)
            ),
            what=f"4 agents: {stderr_path.read_text()}",
        )
        workers = [a for a in agents if a.pid != proc.pid]
        assert len(workers) == 3 and all(a.address != address for a in workers)

        # What `aclmon attach --all` reads: every agent on this host, each its Hello.
        feed = LocalFeed(registry_dir=registry_dir)
        feed.start()
        hellos: dict[int, Hello] = {}

        def all_hellos() -> bool:
            for (_, pid), events in feed.poll():
                for event in events:
                    if type(event) is Hello:
                        hellos[pid] = event
            # the workers' after their acl.init (it knows the devices)
            return len(hellos) == 4 and all(
                h.device_count for p, h in hellos.items() if p != proc.pid
            )

        _wait(all_hellos, what="a Hello from each agent")
        parent_hello = hellos[proc.pid]
        worker_hellos = [h for pid, h in hellos.items() if pid != proc.pid]
        assert parent_hello.rank == -1
        assert {h.job for h in hellos.values()} == {"pool_job"}
        assert sorted(h.rank for h in worker_hellos) == [1, 2, 3]
        assert all(h.rank_env["ACLMON_WORKER"] == str(h.rank) for h in worker_hellos)
        assert all(h.runtime == "sim" for h in worker_hellos)

        # Each worker's own agent saw its own model execution: counted in the History a
        # late viewer gets (model_id, executions, failures), or live if it came later.
        def executed(events: list) -> bool:
            return any(
                (type(e) is History and len(e.models) >= 3 and e.models[1] >= 1)
                or type(e) is ExecuteEnd
                for e in events
            )

        for info in workers:
            subscriber = Subscriber(info.address).start()
            try:
                Collector(subscriber).wait_for(executed, timeout=30, what="an execution")
            finally:
                subscriber.close()

        stop.touch()
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr_path.read_text()
        assert "served [0, 1, 2]" in out
        # The parent's agent carried on: connected to the end, with its own events only.
        parent_events.drain(0.5)
        assert not parent_events.of(ExecuteEnd)
        assert parent_events.of(Hello)[0].pid == proc.pid
    finally:
        stop.touch()
        if feed is not None:
            feed.close()
        if parent is not None:
            parent.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
