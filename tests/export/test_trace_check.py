"""The validator: each rule fails on a file broken that way, passes on our own
exports, and never raises on garbage."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from timelines import T0, small_job

from aclmon.store.slice_model import SliceModel
from aclmon.store.trace import TraceWriter
from aclmon.store.trace_check import RULES, check_trace


def export(path: Path, **writer) -> list[Path]:
    out = TraceWriter(path, origin_ns=T0, **writer)
    model = SliceModel(out)
    model.apply_many(small_job().events)
    model.finish()
    return out.close()


@pytest.fixture
def good(tmp_path: Path) -> Path:
    (path,) = export(tmp_path / "good.json")
    return path


def events_of(path: Path) -> tuple[dict, list[dict]]:
    trace = json.loads(path.read_text())
    return trace, trace["traceEvents"]


def rewrite(path: Path, trace: dict, events: list[dict]) -> Path:
    trace["traceEvents"] = events
    broken = path.with_name("broken.json")
    broken.write_text(json.dumps(trace))
    return broken


def test_our_export_passes_and_holds_every_phase(good: Path):
    report = check_trace(good, 512 << 20)
    assert report.ok, report.lines()
    assert {"M", "X", "b", "e", "i", "C", "s", "f"} <= set(report.phases)
    trace, _ = events_of(good)
    assert trace["displayTimeUnit"] == "ns" and trace["otherData"]["session_start_ns"] == T0


def failing(report) -> set[str]:
    return set(report.problems)


def test_rule_ts_string_nan_negative_and_dur(good: Path):
    trace, events = events_of(good)
    x = next(e for e in events if e["ph"] == "X")
    x["ts"] = str(x["ts"])  # msprof's way
    assert failing(check_trace(rewrite(good, trace, events))) == {"ts"}
    x["ts"] = -1.0
    assert failing(check_trace(rewrite(good, trace, events))) == {"ts"}
    x["ts"], x["dur"] = 1.0, "3"
    assert failing(check_trace(rewrite(good, trace, events))) == {"ts"}
    broken = good.with_name("nan.json")
    broken.write_text(re.sub(r'"ts":[0-9.]+', '"ts":NaN', good.read_text(), count=1))
    assert failing(check_trace(broken)) == {"ts"}


def test_rule_nesting(good: Path):
    trace, events = events_of(good)
    x = next(e for e in events if e["ph"] == "X")
    crossing = dict(x, ts=x["ts"] + x["dur"] / 2, dur=x["dur"] * 10, name="crossing")
    report = check_trace(rewrite(good, trace, [*events, crossing]))
    assert failing(report) == {"nesting"}
    assert f"pid {x['pid']} tid {x['tid']}" in report.examples["nesting"][0]


def test_rule_async(good: Path):
    trace, events = events_of(good)
    index = next(i for i, e in enumerate(events) if e["ph"] == "e")
    assert failing(check_trace(rewrite(good, trace, events[:index] + events[index + 1 :]))) == {
        "async"
    }


def test_rule_flow(good: Path):
    trace, events = events_of(good)
    index = next(i for i, e in enumerate(events) if e["ph"] == "f")
    assert failing(check_trace(rewrite(good, trace, events[:index] + events[index + 1 :]))) == {
        "flow"
    }


def test_rule_flow_id(good: Path):
    trace, events = events_of(good)
    for event in events:
        if event["ph"] in ("s", "f") and event["id"] == 1:
            event["id"] = 1 << 53
    assert failing(check_trace(rewrite(good, trace, events))) == {"flow-id"}
    for event in events:
        if event["ph"] in ("s", "f") and event["id"] == 1 << 53:
            event["id"] = str((7 << 32) + 3 << 32)  # msprof's shifted string id
    assert failing(check_trace(rewrite(good, trace, events))) == {"flow-id"}


def test_rule_control_characters(good: Path):
    text = good.read_text()
    broken = good.with_name("control.json")
    broken.write_text(text.replace('"name":"conv1"', '"name":"conv\x011"', 1))
    report = check_trace(broken)
    assert failing(report) == {"control"}


def test_rule_size(good: Path):
    assert failing(check_trace(good, good.stat().st_size - 1)) == {"size"}
    assert check_trace(good, good.stat().st_size).ok


def test_rule_syntax_cut_file_and_not_a_trace(good: Path):
    cut = good.with_name("cut.json")
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    assert failing(check_trace(cut)) == {"syntax"}
    other = good.with_name("other.json")
    other.write_text('{"events": []}')
    assert failing(check_trace(other)) == {"syntax"}
    other.write_text('[{"ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1}')  # legacy, no "]"
    assert failing(check_trace(other)) == {"syntax"}


def test_every_rule_has_a_test():
    tested = {"ts", "nesting", "async", "flow", "flow-id", "control", "size", "syntax"}
    assert tested == set(RULES)


def test_a_split_export_is_valid_file_by_file_and_keeps_pairs_together(tmp_path: Path):
    files = export(tmp_path / "t.json", max_bytes=64 * 1024)
    assert [f.name for f in files] == ["t.json"]  # small: one file
    big = SliceModel(
        writer := TraceWriter(tmp_path / "big.json", origin_ns=T0, max_bytes=64 * 1024)
    )
    for _ in range(40):
        big.apply_many(small_job().events)
    big.finish()
    files = writer.close()
    assert len(files) > 2 and files[0].name == "big_slice_0.json"
    assert not (tmp_path / "big.json").exists()
    total = 0
    for path in files:
        report = check_trace(path, 64 * 1024)
        assert report.ok, report.lines()
        total += report.events - report.phases.get("M", 0)
        events = events_of(path)[1]
        described = {e["pid"] for e in events if e["name"] == "process_name"}
        assert {e["pid"] for e in events} == described  # each part describes what it holds
        threads = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
        assert {(e["pid"], e["tid"]) for e in events if e["ph"] in "Xi"} <= threads
    assert total == writer.events - sum(  # every event once
        check_trace(p).phases.get("M", 0) for p in files
    )


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_is_reported_never_raised(tmp_path_factory, data: bytes):
    path = tmp_path_factory.mktemp("garbage") / "g.json"
    path.write_bytes(data)
    report = check_trace(path)
    assert set(report.problems) <= set(RULES)


_KEYS = st.sampled_from(["ph", "ts", "dur", "pid", "tid", "id", "cat"])
_VALUES = st.one_of(
    st.integers(), st.floats(), st.text(max_size=3), st.sampled_from(list("XbesfiMBE"))
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _VALUES, max_size=7), max_size=20))
def test_arbitrary_events_are_reported_never_raised(tmp_path_factory, events: list[dict]):
    path = tmp_path_factory.mktemp("events") / "e.json"
    path.write_text(json.dumps({"traceEvents": events}))
    report = check_trace(path)
    assert set(report.problems) <= set(RULES)
