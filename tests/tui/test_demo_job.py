"""The demo job runner: starts the real demo workload under the agent and always stops it."""

from __future__ import annotations

import os
import sys

import pytest

from aclmon.sources.demo import DemoError, DemoJob
from aclmon.sources.live import LiveSource


def test_demo_job_listens_and_stops_cleanly(tmp_path):
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    stale_log = tmp_path / f"demo-{dead.pid}-1.log"
    stale_log.write_text("old")
    stale_dump = tmp_path / f"demo-{dead.pid}-1-dump"
    (stale_dump / "0").mkdir(parents=True)
    with DemoJob(directory=tmp_path) as job:
        assert not stale_log.exists() and not stale_dump.exists()
        pid = job.process.pid
        source = LiveSource(str(job.socket_path), readonly=True)
        try:
            from aclmon.sources.once import once_snapshot

            data = once_snapshot(source, 1.5, connect_timeout=10)
        finally:
            source.close()
        assert data["target"]["runtime"] == "sim"
        assert len(data["devices"]) >= 2
    # stopped: the process is gone and the socket removed
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not job.socket_path.exists()
    assert job.log_path.exists()  # the job's output went to its log, not the screen
    assert job.dump_path.is_dir()  # its dumps went to the runtime directory, not the cwd


def test_demo_job_that_dies_at_start_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr("aclmon.sources.demo.workload_path", lambda: str(tmp_path / "missing.py"))
    with pytest.raises(DemoError, match="exited with code"), DemoJob(directory=tmp_path):
        pass


def test_stop_kills_a_job_that_ignores_sigterm(tmp_path, monkeypatch):
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import signal, time, socket, sys\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()\n"
        "time.sleep(60)\n"
    )
    job = DemoJob(directory=tmp_path)
    monkeypatch.setattr(job, "command", lambda: [sys.executable, str(script), str(job.socket_path)])
    monkeypatch.setattr("aclmon.sources.demo.STOP_GRACE", 0.5)
    with job:
        pid = job.process.pid
    # SIGTERM was ignored: the grace period ran out and SIGKILL finished it
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
