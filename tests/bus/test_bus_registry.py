"""The agent registry and target resolution."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from aclmon.bus import registry
from aclmon.bus.registry import TargetError


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_register_list_unregister(tmp_path: Path) -> None:
    path = registry.register(
        "unix:/run/a.sock", argv=["train.py", "--epochs", "3"], directory=tmp_path
    )
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (agent,) = registry.list_agents(tmp_path)
    assert agent.pid == os.getpid()
    assert agent.address == "unix:/run/a.sock"
    assert agent.argv == ("train.py", "--epochs", "3")
    assert agent.started > 0
    assert "train.py --epochs 3" in agent.describe()
    registry.unregister(directory=tmp_path)
    assert registry.list_agents(tmp_path) == []


def test_dead_and_unreadable_entries_are_cleaned(tmp_path: Path) -> None:
    registry.register("unix:/run/live.sock", directory=tmp_path)
    registry.register("unix:/run/dead.sock", pid=_dead_pid(), directory=tmp_path)
    (tmp_path / "agent-77.json").write_text("{not json")
    agents = registry.list_agents(tmp_path)
    assert [a.address for a in agents] == ["unix:/run/live.sock"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"agent-{os.getpid()}.json"]


def test_the_entries_of_skipped_pids_are_left_unread(tmp_path: Path) -> None:
    """A relay skips the agents it follows: their entries are neither read nor listed
    (an unreadable one is not even cleaned), the others are as before."""
    registry.register("unix:/run/followed.sock", directory=tmp_path)
    parent = os.getppid()
    registry.register("unix:/run/new.sock", pid=parent, directory=tmp_path)
    (tmp_path / "agent-77.json").write_text("{not json")
    agents = registry.list_agents(tmp_path, skip={os.getpid(), 77})
    assert [a.address for a in agents] == ["unix:/run/new.sock"]
    assert (tmp_path / "agent-77.json").exists()  # not read, so not found unreadable
    everyone = registry.list_agents(tmp_path)
    assert {a.address for a in everyone} == {"unix:/run/followed.sock", "unix:/run/new.sock"}
    assert not (tmp_path / "agent-77.json").exists()


def test_resolve_target_forms(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="no running agent"):
        registry.resolve_target(None, tmp_path)
    registry.register("unix:/run/a.sock", directory=tmp_path)
    assert registry.resolve_target(None, tmp_path) == "unix:/run/a.sock"
    assert registry.resolve_target(str(os.getpid()), tmp_path) == "unix:/run/a.sock"
    sock = tmp_path / "b.sock"
    sock.touch()
    assert registry.resolve_target(str(sock), tmp_path) == f"unix:{sock}"
    assert registry.resolve_target(f"unix:{sock}", tmp_path) == f"unix:{sock}"
    with pytest.raises(TargetError, match="no agent socket"):
        registry.resolve_target("/run/missing.sock", tmp_path)
    assert registry.resolve_target("tcp://127.0.0.1:7000", tmp_path) == "tcp://127.0.0.1:7000"
    with pytest.raises(TargetError, match="PID 1234567"):
        registry.resolve_target("1234567", tmp_path)
    with pytest.raises(TargetError, match="not a target"):
        registry.resolve_target("what", tmp_path)


def test_several_agents_need_a_choice(tmp_path: Path) -> None:
    registry.register("unix:/run/a.sock", directory=tmp_path)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        registry.register("unix:/run/b.sock", pid=other.pid, argv=["b.py"], directory=tmp_path)
        with pytest.raises(TargetError, match="several agents") as info:
            registry.resolve_target(None, tmp_path)
        assert str(other.pid) in str(info.value) and "b.py" in str(info.value)
        assert registry.resolve_target(str(other.pid), tmp_path) == "unix:/run/b.sock"
    finally:
        other.kill()
        other.wait()


def test_entry_is_plain_json(tmp_path: Path) -> None:
    path = registry.register("tcp://127.0.0.1:1", argv=["x"], directory=tmp_path)
    data = json.loads(path.read_text())
    assert set(data) == {"pid", "address", "host", "argv", "started"}
