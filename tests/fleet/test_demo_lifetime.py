"""``aclmon demo --ranks N [--nats]`` starts every time and leaves nothing behind:
it is ready once every rank is registered (the fleet looks its ranks up there),
and every process it starts (ranks, relay, nats-server) dies with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from fleethelpers import wait_until

from aclmon.fleet.local import LocalFeed
from aclmon.sources.demo import RankedDemo

ROOT = Path(__file__).parents[2]


def _gone(pid: int) -> bool:
    """Ended (or a zombie nobody reaped yet: a container's init may not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_the_ranks_are_registered_before_the_fleet_looks_them_up(
    runtime_dir, tmp_path, monkeypatch
):
    """The race forced: each rank's agent registers a second after it listens."""
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text(textwrap.dedent("""
        import time
        from aclmon.bus import registry
        _register = registry.register
        def register(*args, **kwargs):
            time.sleep(1.0)
            return _register(*args, **kwargs)
        registry.register = register
    """))  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(slow), str(ROOT)]))
    for _ in range(2):
        with RankedDemo(2, job="demo-test") as demo:
            feed = LocalFeed(demo.pids(), readonly=True)
            feed.start()  # raised "no running agent with PID N" when it lost the race
            feed.close()
            pids = demo.pids()
        assert all(_gone(pid) for pid in pids)


def test_nats_server_and_ranks_die_with_a_killed_viewer(runtime_dir, tmp_path, nats_binary):
    viewer = tmp_path / "viewer.py"
    viewer.write_text(textwrap.dedent(f"""
        import sys, time
        from aclmon.fleet.server import LocalNatsServer
        from aclmon.sources.demo import RankedDemo
        server = LocalNatsServer({nats_binary!r}, scratch={str(runtime_dir)!r}).start()
        demo = RankedDemo(1, job="demo-test").__enter__()
        print(server.process.pid, *demo.pids(), server.directory, flush=True)
        time.sleep(120)
    """))  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(viewer)], stdout=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip
    try:
        *pids, directory = proc.stdout.readline().split()
        children = [int(pid) for pid in pids]
        assert children and not any(_gone(pid) for pid in children)
        assert Path(directory).parent == runtime_dir  # beside the demo's files
        proc.send_signal(signal.SIGKILL)  # no cleanup of its own can run
        proc.wait(10)
        wait_until(lambda: all(_gone(pid) for pid in children), 30, "children gone")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
