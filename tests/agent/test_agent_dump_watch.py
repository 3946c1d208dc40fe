"""The dump watcher on hostile trees, and dump file names as hostile input."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.agent import dumps
from aclmon.agent.dumps import DumpWatcher, describe_dump
from aclmon.agent.state import RuntimeState
from aclmon.events import DumpFileSeen
from aclmon.events.optypes import from_dump_name


class FakeAgent:
    """Just what the watcher uses: state and emit (records what would be published)."""

    def __init__(self) -> None:
        self.state = RuntimeState()
        self.sent: list[tuple] = []

    def emit(self, cls, *fields):
        self.sent.append((cls, *fields))
        return True


def announced(agent: FakeAgent) -> dict[str, tuple]:
    return {fields[0]: fields for cls, *fields in agent.sent if cls is DumpFileSeen}


def test_files_are_announced_once_complete(tmp_path):
    agent = FakeAgent()
    watcher = DumpWatcher(agent, str(tmp_path))
    growing = tmp_path / "20260101000000" / "0" / "Conv2D.conv1.5.2.1700000000000"
    growing.parent.mkdir(parents=True)
    growing.write_bytes(b"x" * 10)
    assert watcher.poll() == 0  # seen once: maybe still being written
    growing.write_bytes(b"x" * 20)
    assert watcher.poll() == 0  # grew: wait again
    assert watcher.poll() == 1  # stable: announced
    assert watcher.poll() == 0  # never twice
    _, kind, size, summary = announced(agent)[str(growing)]
    assert kind == "op-dump" and size == 20 and "error" in summary  # garbage: decoded as such
    assert agent.state.op_type_of("conv1") == "Conv2D"  # learned from the file name
    last = tmp_path / "Opdebug.Node_OpDebug.1.2.1700000000000"
    last.write_bytes(b"\0" * 64)
    assert watcher.poll(final=True) == 1  # at exit: no waiting for stability
    assert announced(agent)[str(last)][1] == "overflow"


def test_old_and_odd_entries_are_skipped(tmp_path):
    old = tmp_path / "Add.add1.1.1.1"
    old.write_bytes(b"old")
    past = time.time() - 3600
    os.utime(old, (past, past))
    (tmp_path / "empty.bin").write_bytes(b"")
    (tmp_path / "result.json").write_text("{}")  # msaccucmp's output next to dumps
    (tmp_path / "loop").symlink_to(tmp_path)  # a symlink loop is not followed
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    deep = tmp_path
    for level in range(dumps.MAX_DEPTH + 3):
        deep = deep / f"d{level}"
    deep.mkdir(parents=True)
    (deep / "Add.too_deep.1.1.1").write_bytes(b"x")
    agent = FakeAgent()
    watcher = DumpWatcher(agent, str(tmp_path))
    watcher.started = past + 1  # `old` predates the watch
    assert watcher.poll() == 0
    assert watcher.poll(final=True) == 0
    assert agent.sent == []
    missing = DumpWatcher(agent, str(tmp_path / "not-yet"))
    assert missing.poll() == 0  # the runtime creates the directory later


def test_scan_budget_bounds_a_huge_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(dumps, "MAX_SCAN_ENTRIES", 50)
    for index in range(200):
        (tmp_path / f"Add.a{index}.1.1.1").write_bytes(b"x")
    agent = FakeAgent()
    watcher = DumpWatcher(agent, str(tmp_path))
    watcher.poll()
    assert watcher.poll() <= 50


def test_summary_is_plain_msgpack_data(tmp_path, monkeypatch):
    import numpy as np

    fake = SimpleNamespace(
        classify=lambda path: "nano",
        summarize=lambda path: {"n": np.int64(3), "f": np.float32(1.5), "t": (1, 2), 7: "key"},
    )
    monkeypatch.setattr("aclmon.dump.classify", fake.classify)
    monkeypatch.setattr("aclmon.dump.summarize", fake.summarize)
    kind, summary = describe_dump(str(tmp_path / "x"), "x")
    assert kind == "op-dump"  # a nano dump is an operator dump
    assert summary == {"n": 3, "f": 1.5, "t": [1, 2], "7": "key"}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_dump_names_never_raise(name):
    parsed = from_dump_name(name) or from_dump_name(name, exception_dump=True)
    assert parsed is None or (parsed[0] and parsed[1] and "." not in parsed[0] + parsed[1])
    assert dumps.classify_name(name) in ("op-dump", "exception-dump", "overflow", "stats")
