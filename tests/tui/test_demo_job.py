"""The demo job runner: starts the real demo workload under the agent and always stops it."""

from __future__ import annotations

import os
import sys
import time

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


def test_a_recorded_demo_keeps_its_dumps_beside_the_recording_and_ends_as_a_job_that_exited(
    tmp_path,
):
    """Quitting the demo stops the job with SIGTERM: the workload finishes its
    batch and exits 0, so the recording ends with "job exited (status 0)", not
    "killed by SIGTERM"; its dumps are beside it, where the next demo leaves them."""
    from aclmon.bus.recording import RecordingReader
    from aclmon.sources.demo import dumps_beside
    from aclmon.sources.replay_inputs import find_inputs
    from aclmon.tui.fmt import job_end_text

    recording = tmp_path / "demo.aclmrec"
    (tmp_path / "run").mkdir()
    with DemoJob(record=str(recording), directory=tmp_path / "run") as job:
        assert job.dump_path == dumps_beside(recording) == tmp_path / "demo.aclmrec.dumps"
        deadline = time.monotonic() + 30
        while not any(job.dump_path.rglob("*.*.*.*")) and time.monotonic() < deadline:
            time.sleep(0.1)  # the first step of mlp_head is dumped
    with RecordingReader(recording, background=False) as reader:
        events = list(reader.iter_events())
    goodbye = events[-1]
    assert type(goodbye).__name__ == "Goodbye", goodbye
    assert job_end_text(goodbye) == "job exited (status 0)"
    # replaying the recording alone finds the dumps beside it
    inputs = find_inputs(recording)
    assert inputs.dump_files and all(job.dump_path in p.parents for p in inputs.dump_files)


async def test_a_dump_file_that_is_gone_says_so_and_why(tmp_path):
    """A recording of an unrecorded demo's dumps (in the runtime directory, which the
    next demo cleans): decoding one says it is gone, and why."""
    from tui_helpers import replay_to_the_end, static_text

    from aclmon import events as ev
    from aclmon.bus import runtime_dir
    from aclmon.bus.recording import RecordingWriter
    from aclmon.sources.replay_inputs import find_inputs
    from aclmon.tui.replay import build_app

    gone = runtime_dir() / "demo-1-2-dump" / "0" / "MatMul.mm.7.3.1764669648123456"
    recording = tmp_path / "old.aclmrec"
    with RecordingWriter(recording, {"source": "test"}) as writer:
        writer.write(ev.DumpFileSeen(1, 1_764_669_648_123_456_000, str(gone), "op-dump", 64,
                                     {"kind": "op-dump", "op_name": "mm"}))  # fmt: skip
    app = build_app(find_inputs(recording), interval=30.0, clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await replay_to_the_end(app, pilot, "4")
        await pilot.press("enter")
        for _ in range(200):
            text = static_text(app, "#dump-detail")
            if "is gone" in text:
                break
            await pilot.pause(0.02)
        text = " ".join(text.split())
        assert "MatMul.mm.7.3.1764669648123456 is gone" in text
        assert "removed when the next demo starts" in text
