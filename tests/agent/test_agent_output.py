"""The job's stdout and stderr forwarded as log lines (aclmon run --capture-output)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from aclmon.agent import output
from aclmon.agent.output import OutputCapture, line_text
from aclmon.bus.recording import RecordingReader
from aclmon.events import Drops, LogLine

SCRIPT = """
import os, sys
print("hello from stdout")
print("\\x1b[31mred\\x1b[0m and plain")
sys.stdout.flush()
print("oops on stderr", file=sys.stderr)
os.write(1, b"10%\\r50%\\r100%\\n")
os.write(2, b"no newline at the end")
"""


class FakeContext:
    def __init__(self) -> None:
        self.pid = 4242
        self.events: list[tuple] = []
        self.failures: list[str] = []
        self._lock = threading.Lock()

    def emit(self, cls: type, *fields: object) -> bool:
        with self._lock:
            self.events.append((cls, *fields))
        return True

    def fail(self, where: str, exc: BaseException) -> None:
        self.failures.append(where)


def sim_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def test_aclmon_run_forwards_stdout_and_stderr_and_still_writes_them(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    recording = tmp_path / "job.aclmon"
    result = subprocess.run(
        [sys.executable, "-m", "aclmon", "run", "--sim", "--capture-output",
         "--listen", str(tmp_path / "a.sock"), "--record", str(recording), str(script)],
        cwd=tmp_path, env=sim_env(), capture_output=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # passed through unchanged
    assert b"hello from stdout\n\x1b[31mred\x1b[0m and plain\n" in result.stdout
    assert b"10%\r50%\r100%\n" in result.stdout
    assert b"oops on stderr\n" in result.stderr and b"no newline at the end" in result.stderr
    with RecordingReader(recording) as reader:
        assert reader.wait_indexed(10)
        events = list(reader.iter_events())
    # (the job's CANN log lines are log events too, with their own modules)
    lines = [e for e in events if type(e) is LogLine and e.module in ("stdout", "stderr")]
    got = [(line.module, line.text) for line in lines]
    assert ("stdout", "hello from stdout") in got
    assert ("stdout", "red and plain") in got  # colours removed
    assert ("stdout", "100%") in got  # what a redrawn line ends as
    assert ("stderr", "oops on stderr") in got
    assert ("stderr", "no newline at the end") in got
    assert all(line.level == "info" and line.pid > 0 for line in lines)


def test_without_the_option_nothing_is_forwarded(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    recording = tmp_path / "job.aclmon"
    result = subprocess.run(
        [sys.executable, "-m", "aclmon", "run", "--sim", "--listen", str(tmp_path / "a.sock"),
         "--record", str(recording), str(script)],
        cwd=tmp_path, env=sim_env(), capture_output=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and b"hello from stdout" in result.stdout
    with RecordingReader(recording) as reader:
        assert reader.wait_indexed(10)
        events = list(reader.iter_events())
    assert not [e for e in events if type(e) is LogLine and e.module in ("stdout", "stderr")]


def test_a_flood_is_written_through_whole_and_published_within_the_rate(monkeypatch):
    monkeypatch.setattr(output, "BURST", 50.0)
    monkeypatch.setattr(output, "RATE", 1.0)
    reader, writer = os.pipe()
    ctx = FakeContext()
    capture = OutputCapture(ctx, ((writer, "stdout"),))  # type: ignore[arg-type]
    received = bytearray()
    drain = threading.Thread(target=lambda: _read_all(reader, received))
    drain.start()
    capture.start()
    payload = b"".join(b"line %d\n" % n for n in range(2000))
    os.write(writer, payload)
    capture.stop()
    os.close(writer)
    drain.join(10)
    assert bytes(received) == payload  # nothing lost on the way to the real output
    published = [e for e in ctx.events if e[0] is LogLine]
    assert 50 <= len(published) < 60 and published[0][2] == "line 0"
    drops = [e for e in ctx.events if e[0] is Drops]
    assert drops and drops[-1][1] == 2000 - len(published) and drops[-1][2] == "job output"
    assert ctx.failures == []


def _read_all(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 65536):
        into.extend(chunk)
    os.close(fd)


def test_line_text_cuts_long_lines_and_keeps_the_last_redraw():
    assert line_text(b"a\rb\rc\r\n".rstrip(b"\n")) == "c"
    assert line_text(b"\x1b[1;32mok\x1b[0m") == "ok"
    assert len(line_text(b"x" * 10_000)) == output.MAX_LINE
    assert line_text(b"\xff bad utf-8") == "\ufffd bad utf-8"
