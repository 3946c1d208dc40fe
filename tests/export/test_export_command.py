"""``aclmon export``: recordings, several ranks, dump directories, cut files,
windows, op_summary, the size cap, ``--check`` and bad arguments."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from timelines import MS, T0, small_job
from tracefiles import comparable, cut_inside_a_frame, load, recording_items, trace_items

from aclmon import events as ev
from aclmon.bus.recording import RecordingWriter
from aclmon.cli import main
from aclmon.store.trace_check import check_trace


def record(path: Path, events) -> Path:
    with RecordingWriter(path, {"source": "test"}) as writer:
        writer.write_many(events)
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["export", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    return record(tmp_path / "job.aclmrec", small_job().events)


def test_a_recording_exports_to_a_valid_trace_with_everything_once(tmp_path, recording, capsys):
    out = tmp_path / "t.json"
    code, stdout, _ = run(capsys, "--trace", str(out), str(recording))
    assert code == 0 and f"wrote {out}" in stdout
    assert "5 operators, 2+1 executions" not in stdout and "5 operators" in stdout
    assert check_trace(out).ok
    assert comparable(trace_items([out])) == comparable(recording_items(recording))
    trace, events = load(out)
    # ts 0 is the session's first event (nothing shown began before it)
    assert trace["otherData"]["session_start_ns"] == T0
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names >= {"Ascend Hardware", "CANN", "job.py", "NPU MEM", "CPU Usage", "Memory Usage"}


def test_what_began_before_the_first_event_moves_ts_0_back(tmp_path, capsys):
    """A recording that starts while a call and a range are running: nothing is
    drawn at a time it did not happen (Perfetto refuses negative times)."""
    job = small_job()
    early = [e._replace(ts_ns=e.ts_ns + 40 * MS) if i else e for i, e in enumerate(job.events)]
    early.insert(1, ev.TxRange(99, T0 + 41 * MS, "running", T0 - 5 * MS, T0 + 41 * MS, 7, 7))
    path = record(tmp_path / "late.aclmrec", early)
    out = tmp_path / "late.json"
    code, _, err = run(capsys, "--trace", str(out), str(path))
    assert code == 0 and "before the session start" not in err
    trace, _ = load(out)
    assert trace["otherData"]["session_start_ns"] == T0 - 5 * MS
    assert comparable(trace_items([out])) == comparable(recording_items(path))


def test_a_range_from_the_epoch_does_not_push_ts_0_back_for_ever(tmp_path, capsys):
    """A bogus start (a hostile or broken source) far before everything else is
    drawn at 0 rather than making every other time unwritable."""
    events = small_job().events
    events.insert(1, ev.TxRange(99, T0 + MS, "bogus", 1, T0 + MS, 7, 7))
    path = record(tmp_path / "bogus.aclmrec", events)
    out = tmp_path / "bogus.json"
    code, _, err = run(capsys, "--trace", str(out), str(path))
    assert code == 0 and "1 items began long before the rest" in err
    assert check_trace(out).ok
    trace, _ = load(out)
    assert trace["otherData"]["session_start_ns"] == T0
    assert len(comparable(trace_items([out]))) == len(comparable(recording_items(path)))


def test_three_ranks_each_get_their_own_process_group(tmp_path, capsys):
    paths = [record(tmp_path / f"rank{r}.aclmrec", small_job(rank=r).events) for r in (2, 0, 1)]
    out = tmp_path / "fleet.json"
    code, _, _ = run(capsys, "--trace", str(out), *map(str, paths))
    assert code == 0 and check_trace(out).ok
    _, events = load(out)
    labels = {e["pid"]: e["args"]["labels"] for e in events if e["name"] == "process_labels"}
    hardware = {e["pid"] for e in events if e.get("args", {}).get("name") == "Ascend Hardware"}
    assert sorted(labels[pid] for pid in hardware) == sorted(
        f"NPU {d},rank {r}" for r in (0, 1, 2) for d in (0, 1)
    )
    groups = {pid >> 10 for pid in hardware}
    assert len(groups) == 3  # rank 0 is group 1, sorted by rank
    assert {labels[pid] for pid in hardware if pid >> 10 == 1} == {"NPU 0,rank 0", "NPU 1,rank 0"}
    flows = [e["id"] for e in events if e["ph"] == "s"]
    assert len(flows) == len(set(flows)) == 9


def test_a_cut_recording_exports_what_is_readable(tmp_path, recording, capsys):
    cut = cut_inside_a_frame(recording, tmp_path / "cut.aclmrec", 2 / 3)
    out = tmp_path / "cut.json"
    code, _, err = run(capsys, "--trace", str(out), str(cut))
    assert code == 0 and "exported up to where it is readable" in err
    assert check_trace(out).ok
    exported = comparable(trace_items([out]))
    assert exported and exported == comparable(recording_items(cut))


def test_windows_cut_the_span(tmp_path, recording, capsys):
    def exported(*options: str) -> set[tuple]:
        out = tmp_path / "w.json"
        code, _, err = run(capsys, "--trace", str(out), str(recording), *options)
        assert code == 0, err
        assert check_trace(out).ok
        return {(cat, name) for cat, name, *_ in trace_items([out]) if cat == "operator"}

    assert len(exported()) == 3
    assert exported("--window", "19ms..22ms") == {("operator", "conv1"), ("operator", "relu1")}
    assert exported("--since", "0.019", "--until", "+2ms") == exported("--window", "19ms..21ms")
    assert exported("--model", "bert") == {("operator", "matmul")}
    assert exported("--model", "1", "--iteration", "2") == {
        ("operator", "conv1"),
        ("operator", "relu1"),
    }
    # an iteration runs from its execution's call to the next one's
    out = tmp_path / "w.json"
    run(capsys, "--trace", str(out), str(recording), "--model", "resnet", "--iteration", "1")
    spans = {(cat, name): (start, end) for cat, name, start, end in trace_items([out])}
    assert ("operator", "matmul") in spans and ("msproftx mark", "epoch 1") not in spans
    assert max(start for start, _ in spans.values()) < T0 + 20 * MS


def test_op_summary(tmp_path, recording, capsys):
    out = tmp_path / "op_summary.csv"
    code, _, _ = run(capsys, "--format", "op-summary", "-o", str(out), str(recording))
    assert code == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 5
    first = min(rows, key=lambda r: float(r["Task Start Time(us)"]))
    assert first["Op Name"] == "conv1" and first["Stream ID"] == "3" and first["Device_id"] == "0"
    assert first["Model Name"] == "resnet" and first["Task ID"] == "N/A"
    assert float(first["Task Duration(us)"]) == 700.0
    second = next(r for r in rows if r["Op Name"] == "relu1")
    assert float(second["Task Wait Time(us)"]) == 0.0


def test_the_size_cap_splits_into_valid_slices(tmp_path, capsys):
    job = small_job()
    events = list(job.events)
    for n in range(60):
        job.at(40 + n * 10).add(ev.TxRange, f"long message {'x' * 900} {n}", job.now - MS, job.now,
                                1, 1)  # fmt: skip
        events.append(job.events[-1])
    path = record(tmp_path / "big.aclmrec", events)
    out = tmp_path / "big.json"
    code, stdout, _ = run(capsys, "--trace", str(out), str(path), "--max-size", "64KiB")
    assert code == 0 and stdout.count("wrote") > 1
    parts = sorted(tmp_path.glob("big_slice_*.json"))
    assert len(parts) == stdout.count("wrote")
    code, report, _ = run(capsys, "--check", *map(str, parts), "--max-size", "64KiB")
    assert code == 0 and report.count(": ok") == len(parts)
    assert comparable(trace_items(parts)) == comparable(recording_items(path))


def test_check_reports_and_fails(tmp_path, recording, capsys):
    out = tmp_path / "t.json"
    run(capsys, "--trace", str(out), str(recording))
    broken = tmp_path / "broken.json"
    broken.write_text(out.read_text().replace('"ts":', '"ts":"', 1).replace(',"dur"', '","dur"', 1))
    code, stdout, _ = run(capsys, "--check", str(out), str(broken), "--json")
    reports = json.loads(stdout)
    assert code == 1 and [r["ok"] for r in reports] == [True, False]
    assert reports[1]["problems"] == {"ts": 1}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["job.aclmrec"], "say where to write"),
        (["--trace", "a.json", "-o", "b.json", "job.aclmrec"], "give the output once"),
        (["--trace", "a.json", "nothing-here.aclmrec"], "no such file"),
        (["--trace", "a.json", "job.aclmrec", "--iteration", "0"], "counted from 1"),
        (["--trace", "a.json", "job.aclmrec", "--iteration", "2"], "several models ran"),
        (["--trace", "a.json", "job.aclmrec", "--model", "gpt"], "no execution of model 'gpt'"),
        (["--trace", "a.json", "job.aclmrec", "--window", "10s"], "expected FROM..TO"),
        (["--trace", "a.json", "job.aclmrec", "--since", "tomorrow"], "cannot read"),
        (["--trace", "a.json", "job.aclmrec", "--max-size", "1KiB"], "at least 64KiB"),
        (["--trace", "a.json", "job.aclmrec", "--duration", "3s"], "live source"),
        (["--trace", "a.json", "notes.txt"], "not an aclmon recording"),
        (["--trace", "a.json", "nats://127.0.0.1:1/train"], "needs --since"),
    ],
)
def test_bad_arguments_get_one_clear_message(
    tmp_path, recording, capsys, monkeypatch, argv, message
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("hello")
    code, _, err = run(capsys, *argv)
    assert code == 1 and message in err and "Traceback" not in err
    assert not (tmp_path / "a.json").exists()
