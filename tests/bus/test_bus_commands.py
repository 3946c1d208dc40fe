"""``aclmon record`` and ``aclmon events``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from bushelpers import wait_until

from aclmon import cli
from aclmon import events as ev
from aclmon.bus.publisher import Publisher
from aclmon.bus.recording import RecordingReader, RecordingWriter


def _recording(path: Path, count: int) -> list[ev.Event]:
    clock = ev.Clock()
    events = [
        clock.make(ev.DumpFileSeen, f"/d/{i}", "op-dump", i, {"op": "Add"}) for i in range(count)
    ]
    with RecordingWriter(path, {}) as writer:
        writer.write_many(events)
    return events


def test_events_prints_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = _recording(tmp_path / "r.aclrec", 5)
    assert cli.main(["events", str(tmp_path / "r.aclrec"), "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line) for line in lines] == [ev.to_json(e) for e in events]
    assert json.loads(lines[0])["kind"] == "dump_file"


def test_events_count_and_text_form(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _recording(tmp_path / "r.aclrec", 5)
    assert cli.main(["events", str(tmp_path / "r.aclrec"), "--count", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert "dump_file" in lines[0] and "path='/d/0'" in lines[0]


def test_events_reports_a_cut_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.aclrec"
    _recording(path, 3)
    path.write_bytes(path.read_bytes()[:-3])
    assert cli.main(["events", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    assert "file ends inside a frame" in captured.err


def test_events_on_a_file_that_is_not_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.txt").write_text("hello")
    assert cli.main(["events", str(tmp_path / "x.txt")]) == 1
    assert "not an aclmon recording" in capsys.readouterr().err


def _publish_while(publisher: Publisher, stop: threading.Event) -> threading.Thread:
    def run() -> None:
        while not stop.is_set():
            publisher.emit(ev.LogLine, "info", "tick")
            time.sleep(0.002)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_record_and_events_from_a_live_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stop = threading.Event()
    with Publisher(str(tmp_path / "p.sock")) as publisher:
        thread = _publish_while(publisher, stop)
        try:
            out = tmp_path / "live.aclrec"
            assert cli.main(["record", publisher.address, str(out), "--count", "25"]) == 0
            assert cli.main(["events", publisher.address, "--json", "--count", "3"]) == 0
        finally:
            stop.set()
            thread.join()
    captured = capsys.readouterr().out.splitlines()
    assert captured[0] == f"recorded 25 events to {out}"
    assert all(json.loads(line)["kind"] == "log" for line in captured[1:])
    assert len(captured) == 4
    with RecordingReader(out, background=False) as reader:
        assert len(reader) == 25
        assert reader.header.source_info["tool"] == "aclmon record"


def test_record_stops_on_sigint_and_prints_the_count(tmp_path: Path) -> None:
    stop = threading.Event()
    out = tmp_path / "r.aclrec"
    with Publisher(str(tmp_path / "p.sock")) as publisher:
        thread = _publish_while(publisher, stop)
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, aclmon.cli as cli; sys.exit(cli.main(sys.argv[1:]))",
                "record",
                publisher.address,
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert wait_until(lambda: out.exists() and out.stat().st_size > 200)
            child.send_signal(signal.SIGINT)
            stdout, stderr = child.communicate(timeout=20)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            stop.set()
            thread.join()
    assert child.returncode == 0, stderr
    count = int(stdout.split()[1])
    assert count > 0
    with RecordingReader(out, background=False) as reader:
        assert len(reader) == count
        assert reader.cut is None


def test_events_follows_a_growing_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "growing.aclrec"
    clock = ev.Clock()
    writer = RecordingWriter(path, {})
    writer.write(clock.make(ev.LogLine, "info", "first"))
    writer.flush()

    def append_later() -> None:
        for i in range(3):
            time.sleep(0.05)
            writer.write(clock.make(ev.LogLine, "info", f"more {i}"))
            writer.flush()

    thread = threading.Thread(target=append_later)
    thread.start()
    try:
        assert cli.main(["events", str(path), "--follow", "--json", "--count", "4"]) == 0
    finally:
        thread.join()
        writer.close()
    texts = [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()]
    assert texts == ["first", "more 0", "more 1", "more 2"]
