"""Errors are one line on stderr with exit status 1; no sentinel reaches the output."""

from __future__ import annotations

import subprocess
import sys

from aclmon import events as ev
from aclmon.bus.recording import RecordingWriter


def run(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aclmon", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_replay_with_an_unknown_theme_is_one_line_and_exit_1(tmp_path):
    recording = tmp_path / "job.aclmrec"
    with RecordingWriter(recording, {"source": "test"}) as writer:
        writer.write(ev.LogLine(1, 1_700_000_000_000_000_000, "info", "hello"))
    result = run("replay", "--theme", "nosuch", str(recording))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aclmon replay: unknown theme 'nosuch'")


def test_a_missing_path_has_one_wording_in_every_command(tmp_path):
    missing = tmp_path / "missing.aclmrec"
    expected = f"{missing}: no such file or directory"
    for argv in (
        ("decode", str(missing)),
        ("convert", "-d", str(missing), "-out", str(tmp_path / "out")),
        ("replay", str(missing)),
        ("events", str(missing)),
    ):
        result = run(*argv)
        assert result.returncode == 1, argv
        assert result.stderr.startswith(f"aclmon {argv[0]}: {expected}"), result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_decode_of_a_bad_file_says_so_on_stderr_in_text_mode_too(tmp_path):
    bad = tmp_path / "Add.add.1.2.1700000000000000"
    bad.write_bytes(b"\x63\x00\x00\x00\x00\x00\x00\x00\x0a")
    result = run("decode", str(bad))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "aclmon decode: Add.add.1.2.1700000000000000: at byte 0: header length 99"
        " exceeds the 1 bytes after it"
    )
    assert "error" not in result.stdout


def test_once_text_never_prints_a_sentinel_utilization(capsys):
    from aclmon.tui.commands import print_store_text

    sample = ev.DeviceSample(1, 1, 0, 37, -1, 2, 1 << 30, 32 << 30, "OK", None, None)
    data = {
        "target": {"host": "h", "pid": 1, "runtime": "real", "soc_name": "Ascend910A"},
        "devices": [{"device_id": 0, "sample": ev.to_json(sample), "contexts": []}],
        "models": [],
        "exceptions": {"total": 0, "dropped": 0, "recent": []},
        "dumps": {"total": 0, "dropped": 0, "recent": []},
        "counters": {"events": 1, "gaps": 0, "agent_dropped": 0},
    }
    print_store_text(data)
    out = capsys.readouterr().out
    assert "vector n/a" in out and "aicore 37%" in out
    assert "-1" not in out and "None" not in out
