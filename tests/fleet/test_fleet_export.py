"""``aclmon export`` of a fleet over NATS: three ranks through a relay, exported
after they exited from JetStream, each rank its own group of processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fleethelpers import wait_until
from test_fleet_end_to_end import aclmon, start_relay, stop_relay, three_jobs

from aclmon.store.trace_check import check_trace

pytestmark = pytest.mark.slow
__all__ = ["three_jobs"]  # a fixture, imported for pytest


def test_a_fleet_of_three_ranks_exports_from_jetstream(nats, three_jobs, tmp_path):
    env, stop, jobs = three_jobs
    env = dict(env, ACLMON_NATS_TOKEN=nats.token)
    nats_url = nats.url
    relay = start_relay(nats_url, env, tmp_path)
    try:
        relay_log = tmp_path / "relay.log"
        wait_until(lambda: relay_log.read_text().count("following pid") == 3, 30, "relay follows")
        live = json.loads(aclmon("attach", f"{nats_url}/train", "--once", "--json", "--wait",
                                 "1", env=env).stdout)  # fmt: skip
        assert all(s["executions"] > 0 for s in live["sources"])
        stop.touch()
        for proc in jobs:
            proc.wait(30)
        wait_until(lambda: relay_log.read_text().count("ended (") == 3, 30, "relay saw exits")
    finally:
        stop_relay(relay)
    out = tmp_path / "fleet.json"
    done = aclmon("export", "--trace", str(out), f"{nats_url}/train", "--since", "10m", env=env)
    assert done.returncode == 0, done.stderr
    report = check_trace(out)
    assert report.ok, report.lines()
    events = json.loads(Path(out).read_text())["traceEvents"]
    labels = {e["pid"]: e["args"]["labels"] for e in events if e["name"] == "process_labels"}
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    groups: dict[int, set[str]] = {}
    for pid, label in labels.items():
        groups.setdefault(pid >> 10, set()).add(f"{names[pid]} {label}")
    assert len(groups) == 3
    for group, rank in zip(sorted(groups), (0, 1, 2), strict=True):
        # groups in rank order; the sim job runs on device 0 whatever its rank
        assert f"Ascend Hardware NPU 0,rank {rank}" in groups[group], groups[group]
        assert f"CANN CPU,rank {rank}" in groups[group]
    executions = [e for e in events if e.get("cat") == "execution"]
    assert {e["pid"] >> 10 for e in executions} == set(groups)
