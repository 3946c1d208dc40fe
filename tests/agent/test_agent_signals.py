"""`aclmon run` under repeated and hang-up signals: cleanup always completes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agenthelpers import SIM_JOB, Collector, model_path, write_acl_json
from test_agent_end_to_end import sim_env

from aclmon.bus import registry
from aclmon.bus.recording import RecordingReader
from aclmon.bus.subscriber import Subscriber
from aclmon.events import Drops, Hello, StreamSynchronized

pytestmark = pytest.mark.slow
__all__ = ["model_path"]  # a fixture, imported for pytest


def _start(tmp_path: Path, model_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path, int]:
    acl_json = write_acl_json(tmp_path / "acl.json")
    address = tmp_path / "job.sock"
    recording = tmp_path / "job.aclmon"
    command = [sys.executable, "-m", "aclmon.agent", "--sim", "--listen", str(address),
               "--record", str(recording), SIM_JOB, str(model_path), str(acl_json),
               "--max-seconds", "60", "--pause", "0.001"]  # fmt: skip
    with open(tmp_path / "stderr.txt", "w") as stderr:
        proc = subprocess.Popen(command, cwd=tmp_path, env=sim_env(), stderr=stderr)
    subscriber = Subscriber(str(address)).start()
    try:
        events = Collector(subscriber)
        events.wait_kind(StreamSynchronized, timeout=30)
        seen = max(e.seq for e in events.events)
    finally:
        subscriber.close()
    return proc, address, recording, seen


def _assert_cleaned_up(proc: subprocess.Popen[bytes], address: Path, recording: Path, seen: int):
    assert not address.exists()
    assert all(a.pid != proc.pid for a in registry.list_agents())
    with RecordingReader(recording) as reader:
        assert reader.wait_indexed(10)
        events = list(reader.iter_events())
        assert reader.cut is None and reader.error is None
    assert type(events[0]) is Hello
    seqs = [e.seq for e in events if e.seq]
    # Complete: everything up to the end, nothing lost (the recorder never lags
    # behind this small job), and at least up to what a viewer saw before the signals.
    assert not [e for e in events if type(e) is Drops]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert seqs[-1] >= seen


@pytest.mark.parametrize("run", range(3))
def test_two_sigterms_20ms_apart_still_clean_up(tmp_path: Path, model_path: Path, run: int):
    proc, address, recording, seen = _start(tmp_path, model_path)
    try:
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _assert_cleaned_up(proc, address, recording, seen)


def test_sighup_is_cleaned_up_like_sigterm(tmp_path: Path, model_path: Path):
    proc, address, recording, seen = _start(tmp_path, model_path)
    try:
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=30) == -signal.SIGHUP
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _assert_cleaned_up(proc, address, recording, seen)
