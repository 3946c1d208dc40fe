"""``bench/fleet_load.py``, the synthetic ranks of the 1,024-source benchmark: one
process drives every rank's publisher (none has a thread), and what each rank says
it emitted is what a subscriber of that rank receives, in sequence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from aclmon import events as ev
from aclmon.bus import registry
from aclmon.bus.subscriber import Subscriber

LOAD = Path(__file__).resolve().parents[1] / "bench" / "fleet_load.py"
RANKS = 3


def test_each_synthetic_rank_delivers_what_it_says_it_emitted(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime))
    start_at = time.time() + 3.0
    load = subprocess.Popen(
        [sys.executable, str(LOAD), "--host", "node07", "--ranks", str(RANKS),
         "--first-rank", "8", "--world", "16", "--rate", "40", "--seconds", "1.5",
         "--start-at", str(start_at), "--faulty", "9", "--fault-at", "0.5"],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    subscribers: dict[int, Subscriber] = {}
    try:
        deadline = time.monotonic() + 30
        while len(subscribers) < RANKS and time.monotonic() < deadline:
            for info in registry.list_agents(runtime / "aclmon"):
                if info.pid not in subscribers:
                    subscribers[info.pid] = Subscriber(info.address).start()
            time.sleep(0.05)
        assert len(subscribers) == RANKS
        for sub in subscribers.values():
            assert sub.wait_connected(30)
        assert load.stdout is not None
        report = json.loads(load.stdout.readline())
        received: dict[int, list[ev.Event]] = {pid: [] for pid in subscribers}
        deadline = time.monotonic() + 30
        emitted = {int(pid): count for pid, count in report["emitted"].items()}
        while time.monotonic() < deadline and any(
            sum(1 for e in received[pid] if e.seq) < emitted[pid] for pid in subscribers
        ):
            for pid, sub in subscribers.items():
                received[pid] += sub.poll(10_000, 0.01)
        out, _ = load.communicate("\n", timeout=30)
    finally:
        for sub in subscribers.values():
            sub.close()
        load.kill()
        load.wait(10)
    assert report["dropped"] == 0 and json.loads(out)["subscriber_drops"] == 0
    assert sorted(emitted) == sorted(subscribers)
    hosts, ranks, exceptions = set(), set(), 0
    for pid, events in received.items():
        numbered = [e for e in events if e.seq]
        # set-up (Hello, device, context, stream, model) and at least 1.5 s at 40/s
        assert len(numbered) == emitted[pid] >= 5 + 50
        assert [e.seq for e in numbered] == list(range(1, len(numbered) + 1))
        hello = next(e for e in numbered if isinstance(e, ev.Hello))
        assert hello.pid == pid
        hosts.add(hello.host)
        ranks.add(hello.rank)
        exceptions += sum(1 for e in numbered if isinstance(e, ev.AclException))
        kinds = {type(e) for e in numbered}
        assert {ev.ExecuteEnd, ev.OpTiming, ev.StreamSynchronized, ev.DeviceSample} <= kinds
    assert hosts == {"node07"} and ranks == {8, 9, 10}
    assert exceptions == 1  # rank 9 alone, once
