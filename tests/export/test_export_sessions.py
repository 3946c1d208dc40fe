"""``aclmon export`` on real sessions: the demo's recording (with and without its
dump directory, and cut), a job whose msproftx ranges cross threads, a live job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from demo_session import record_demo
from session import wait_for_socket
from tracefiles import comparable, cut_inside_a_frame, load, recording_items, trace_items

from aclmon import events as ev
from aclmon.bus.recording import RecordingReader, RecordingWriter
from aclmon.cli import main
from aclmon.store.trace_check import check_trace

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TX_JOB = Path(__file__).with_name("tx_threads_job.py")
SIM_JOB = ROOT / "tests" / "agent" / "sim_job.py"
MODEL = ROOT / "aclmon" / "sim" / "models" / "mlp_head.json"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return record_demo(tmp_path_factory.mktemp("demo"))


def export(capsys, *argv: str) -> str:
    code = main(["export", *argv])
    err = capsys.readouterr().err
    assert code == 0, err
    return err


def test_the_demo_recording_exports_valid_with_every_item_once(demo, tmp_path, capsys):
    out = tmp_path / "demo.json"
    export(capsys, "--trace", str(out), str(demo.recording))
    report = check_trace(out, 512 << 20)
    assert report.ok, report.lines()
    exported, recorded = comparable(trace_items([out])), comparable(recording_items(demo.recording))
    assert exported == recorded
    kinds = {cat for cat, *_ in recorded}  # marks come every fifty requests: maybe none
    assert kinds >= {"operator", "execution", "synchronize", "msproftx", "exception", "overflow"}
    _, events = load(out)
    exceptions = [e for e in events if e.get("cat") == "exception"]
    assert all(e["args"]["Dump Path"].startswith(str(demo.dumps)) for e in exceptions)
    assert all({"Op Name", "Task Id", "Physic Stream Id"} <= set(e["args"]) for e in exceptions)
    flows = [e for e in events if e["ph"] == "s"]
    executions = [e for e in events if e.get("cat") == "execution"]
    assert len(flows) >= len(executions) - 12  # the ones before live timings started have none


def test_the_demo_recording_with_its_dump_directory(demo, tmp_path, capsys):
    """The agent saw no dump file: the directory names the exceptions' dumps and
    brings the overflows, each once."""
    blind = tmp_path / "blind.aclmrec"
    with RecordingReader(demo.recording, background=False) as reader, RecordingWriter(blind) as w:
        w.write_many([e for e in reader.iter_events() if type(e) is not ev.DumpFileSeen])
    out = tmp_path / "dir.json"
    export(capsys, "--trace", str(out), str(blind), "--dumps", str(demo.dumps))
    assert check_trace(out).ok
    _, events = load(out)
    exceptions = [e for e in events if e.get("cat") == "exception"]
    overflows = [e for e in events if e.get("cat") == "overflow"]
    assert exceptions and all("data-dump" in e["args"]["Dump Path"] for e in exceptions)
    recorded = [k for k in recording_items(demo.recording) if k[0] == "overflow"]
    assert len(overflows) == len(recorded)
    both = tmp_path / "both.json"  # the recording saw them too: still once
    export(capsys, "--trace", str(both), str(demo.recording), "--dumps", str(demo.dumps))
    assert len([e for e in load(both)[1] if e.get("cat") == "overflow"]) == len(recorded)


def test_a_cut_demo_recording(demo, tmp_path, capsys):
    cut = cut_inside_a_frame(demo.recording, tmp_path / "cut.aclmrec")
    out = tmp_path / "cut.json"
    err = export(capsys, "--trace", str(out), str(cut))
    assert "exported up to where it is readable" in err
    assert check_trace(out).ok
    assert comparable(trace_items([out])) == comparable(recording_items(cut))


def test_msproftx_ranges_across_threads(tmp_path, capsys):
    recording = tmp_path / "tx.aclmrec"
    subprocess.run(
        [sys.executable, "-m", "aclmon", "run", "--sim", "--record", str(recording),
         "--listen", str(tmp_path / "a.sock"), str(TX_JOB), str(tmp_path / "prof")],
        check=True, capture_output=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    out = tmp_path / "tx.json"
    export(capsys, "--trace", str(out), str(recording))
    report = check_trace(out)
    assert report.ok, report.lines()
    assert comparable(trace_items([out])) == comparable(recording_items(recording))
    _, events = load(out)
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"
    }
    requests = [e for e in events if e["ph"] == "b" and e["name"].startswith("request")]
    assert len(requests) == 4  # opened on the main thread, closed by a worker: async
    assert all(e["args"]["Thread Id"] != e["args"]["End Thread Id"] for e in requests)
    steps = [e for e in events if e["ph"] == "X" and "step" in e["name"]]
    lanes = {threads[(e["pid"], e["tid"])] for e in steps}
    assert lanes == {"Thread 1", "Thread 2"}  # one lane per worker, nested there
    assert report.phases["X"] == 12 and report.phases["i"] == 6


def test_a_live_job_for_a_duration(tmp_path, capsys):
    acl_json = tmp_path / "acl.json"
    acl_json.write_text("{}")
    socket_path, stop = tmp_path / "agent.sock", tmp_path / "stop"
    job = subprocess.Popen(
        [sys.executable, "-m", "aclmon", "run", "--sim", "--listen", str(socket_path),
         "--interval", "0.1", str(SIM_JOB), str(MODEL), str(acl_json), "--until", str(stop),
         "--max-seconds", "60", "--pause", "0.01"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )  # fmt: skip
    try:
        wait_for_socket(job, socket_path)
        out = tmp_path / "live.json"
        err = export(capsys, "--trace", str(out), str(socket_path), "--duration", "1.5s")
        assert "recording" in err
    finally:
        stop.touch()
        job.wait(30)
    report = check_trace(out)
    assert report.ok, report.lines()
    executions = [e for e in load(out)[1] if e.get("cat") == "execution"]
    assert len(executions) > 5
