"""The plog tail: the job's own CANN log files, warnings and errors published, bounded."""

from __future__ import annotations

from pathlib import Path

from aclmon.agent import plog as plog_module
from aclmon.agent.context import AgentContext, MemorySink
from aclmon.agent.plog import PlogTail
from aclmon.events import Drops, LogLine

PID = 4242


def entry(level: str, text: str, module: str = "RUNTIME", pid: int = PID) -> str:
    return f"[{level}] {module}({pid},python3):2024-05-01-12:00:00.123.456 [stream.cc:77]{text}\n"


def tail_in(root: Path, **env: str) -> tuple[PlogTail, MemorySink]:
    sink = MemorySink()
    environ = {"ASCEND_PROCESS_LOG_PATH": str(root), "HOME": "/nonexistent", **env}
    return PlogTail(AgentContext(object(), sink), pid=PID, environ=environ), sink


def log_lines(sink: MemorySink) -> list[LogLine]:
    return [e for e in sink.take() if type(e) is LogLine]


def test_new_warnings_and_errors_of_this_process_are_published(tmp_path: Path):
    (tmp_path / "debug" / "plog").mkdir(parents=True)
    old = tmp_path / "debug" / "plog" / f"plog-{PID}_20240501120000000.log"
    old.write_text(entry("ERROR", "before the agent"))
    other = tmp_path / "debug" / "plog" / "plog-7_20240501120000000.log"
    other.write_text("")
    tail, sink = tail_in(tmp_path)
    assert tail.poll() == 0  # what was there before is not news
    with old.open("a") as f:
        f.write(entry("INFO", "not published"))
        f.write(entry("ERROR", "aclrtSynchronizeStream failed\n    stream_id:3, task_id:12."))
        f.write(entry("WARNING", "overflow", module="GE"))
    other.write_text(entry("ERROR", "another process", pid=7))
    tail.poll()
    tail.poll()  # the writer went quiet: the last entry is complete
    lines = log_lines(sink)
    assert [(line.level, line.module, line.text) for line in lines] == [
        ("error", "RUNTIME", "aclrtSynchronizeStream failed\n    stream_id:3, task_id:12."),
        ("warning", "GE", "overflow"),
    ]
    first = lines[0]
    assert (first.pid, first.process, first.location) == (PID, "python3", "stream.cc:77")
    assert first.logged_ns > 0 and first.log_file == str(old)
    # a device log that appears later is read from its start
    (tmp_path / "debug" / "device-0").mkdir()
    device = tmp_path / "debug" / "device-0" / f"device-{PID}_20240501120000001.log"
    device.write_text(entry("ERROR", "from the device", module="AICPU"))
    tail._discovered = 0.0  # look for new files now
    tail.poll()
    tail.poll()
    assert [line.text for line in log_lines(sink)] == ["from the device"]


def test_a_partial_line_waits_for_its_end(tmp_path: Path):
    (tmp_path / "plog").mkdir()
    tail, sink = tail_in(tmp_path)
    tail.poll()
    path = tmp_path / "plog" / f"plog-{PID}_1.log"
    text = entry("ERROR", "split in two")
    path.write_text(text[:30])
    tail._discovered = 0.0
    tail.poll()
    tail.poll()
    assert log_lines(sink) == []
    with path.open("a") as f:
        f.write(text[30:])
    tail.poll()
    tail.poll()
    assert [line.text for line in log_lines(sink)] == ["split in two"]


def test_a_flood_is_rate_limited_and_the_drops_counted(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(plog_module, "BURST", 10.0)
    monkeypatch.setattr(plog_module, "RATE", 0.001)
    (tmp_path / "plog").mkdir()
    tail, sink = tail_in(tmp_path)
    tail.poll()
    path = tmp_path / "plog" / f"plog-{PID}_1.log"
    path.write_text("".join(entry("ERROR", f"line {i}") for i in range(30)) + "garbage\x00\n")
    tail._discovered = 0.0
    tail.poll()
    tail.poll()
    events = sink.take()
    assert sum(type(e) is LogLine for e in events) == 10
    drops = [e for e in events if type(e) is Drops]
    assert drops and drops[-1].total == 20 and drops[-1].where == "plog tail"


def test_logs_on_stdout_are_said_once_and_not_followed(tmp_path: Path):
    (tmp_path / "plog").mkdir()
    (tmp_path / "plog" / f"plog-{PID}_1.log").write_text(entry("ERROR", "x"))
    tail, sink = tail_in(tmp_path, ASCEND_SLOG_PRINT_TO_STDOUT="1")
    tail.poll()
    tail.poll()
    (line,) = log_lines(sink)
    assert "ASCEND_SLOG_PRINT_TO_STDOUT=1" in line.text and line.log_file == ""
    assert tail.files == {}


def test_a_missing_log_directory_is_quietly_nothing(tmp_path: Path):
    tail, sink = tail_in(tmp_path / "missing")
    assert tail.poll() == 0 and tail.poll() == 0
    assert sink.take() == []


def test_a_file_made_after_the_tail_but_before_its_first_poll_is_read_whole(tmp_path: Path):
    """The job's first calls may make its log file before the tail's first poll:
    those lines are the job's news, as a replay of the log directory shows them."""
    tail, sink = tail_in(tmp_path)
    (tmp_path / "debug" / "plog").mkdir(parents=True)
    made = tmp_path / "debug" / "plog" / f"plog-{PID}_20240501120000000.log"
    made.write_text(entry("ERROR", "aclrtGetDeviceCount: acl.init was not called"))
    tail.poll()
    tail.poll()
    assert [line.text for line in log_lines(sink)] == [
        "aclrtGetDeviceCount: acl.init was not called"
    ]


def test_the_last_poll_finds_a_file_the_job_made_just_before_it_ended(tmp_path: Path):
    """New files are looked for every DISCOVER_INTERVAL_S; a job whose first log flush
    comes late (its first error) and then ends must not lose those lines."""
    tail, sink = tail_in(tmp_path)
    tail.poll()  # the first poll: no file yet
    (tmp_path / "debug" / "plog").mkdir(parents=True)
    made = tmp_path / "debug" / "plog" / f"plog-{PID}_20240501120000000.log"
    made.write_text(entry("ERROR", "aclrtSynchronizeStream failed"))
    tail.poll()
    assert log_lines(sink) == []  # not looked for yet
    tail.poll(final=True)
    tail.poll()
    assert [line.text for line in log_lines(sink)] == ["aclrtSynchronizeStream failed"]


def test_the_tails_work_is_bounded_and_a_burst_is_read_newest_first(tmp_path: Path):
    """A burst far larger than a second's share: the older part is skipped and
    counted, the newest entry is published at once; below the burst size, a poll
    parses at most PARSE_RATE bytes."""
    (tmp_path / "plog").mkdir()
    path = tmp_path / "plog" / f"plog-{PID}_1.log"
    path.write_text("")
    tail, sink = tail_in(tmp_path)
    tail.poll()
    filler = entry("INFO", "x" * 100)
    with path.open("a") as f:
        f.write(filler * (3 * (1 << 20) // len(filler)))  # 3 MiB
        f.write(entry("ERROR", "the newest"))
    tail.poll()
    tail.poll()  # quiet: the last entry is complete
    events = sink.take()
    assert [e.text for e in events if type(e) is LogLine] == ["the newest"]
    (skips,) = [e for e in events if type(e) is Drops]
    assert skips.where == "plog tail (bytes skipped)"
    assert 3 * (1 << 20) - plog_module.PARSE_RATE <= skips.total < 3 * (1 << 20)
    # Less than a burst: read over several seconds, a second's share at a time.
    followed = tail.files[path]
    start = followed.offset
    with path.open("a") as f:
        f.write(filler * (plog_module.MAX_BACKLOG // len(filler)))
    tail._byte_tokens = float(plog_module.PARSE_RATE)  # a full second's share
    tail.poll()
    assert 0 < followed.offset - start <= plog_module.PARSE_RATE + len(filler)
    assert tail.skipped_bytes == skips.total


# ---------------------------------------------------------------- files that would wedge it
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

WEDGE_JOB = """
import os, sys, time
import acl
acl.init()
acl.rt.set_device(0)
logs = os.path.join(os.environ["ASCEND_PROCESS_LOG_PATH"], "debug", "plog")
os.makedirs(logs, exist_ok=True)
path = os.path.join(logs, f"plog-{os.getpid()}_20240501120000000.log")
with open(path, "w") as f:
    f.write("[ERROR] RUNTIME(1,python):2024-05-01-12:00:00.123.456 [a.cc:1]followed\\n")
time.sleep(3.2)  # found (every 2 s) and followed
os.unlink(path)
if sys.argv[1] == "fifo":
    os.mkfifo(path)
else:
    fifo = path + ".fifo"
    os.mkfifo(fifo)
    os.symlink(fifo, path)
print(time.time_ns(), flush=True)  # when the FIFO took the file's place
time.sleep(1.5)  # the agent looks at it again meanwhile
acl.rt.reset_device(0)
acl.finalize()
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["fifo", "symlink"])
def test_a_plog_replaced_by_a_fifo_wedges_neither_the_agent_nor_the_exit(tmp_path: Path, how):
    """Nobody ever writes to the FIFO: the agent must neither block in open() (its
    sampling goes on) nor keep the job from exiting (the final poll has a deadline)."""
    from aclmon.bus.recording import RecordingReader
    from aclmon.events import HostSample

    script = tmp_path / "job.py"
    script.write_text(WEDGE_JOB)
    recording = tmp_path / "job.aclrec"
    env = dict(os.environ, ASCEND_PROCESS_LOG_PATH=str(tmp_path / "log"),
               XDG_RUNTIME_DIR=str(tmp_path))  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "aclmon", "run", "--sim", "--interval", "0.2", "--record",
         str(recording), str(script), how],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=90)  # a wedged job never ends: this fails it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    fifo_ns = int(out.split()[-1])
    with RecordingReader(recording, background=False) as reader:
        events = list(reader.iter_events())
    assert [e.text for e in events if type(e) is LogLine and "followed" in e.text]
    samples_after = [e for e in events if type(e) is HostSample and e.ts_ns > fifo_ns]
    assert len(samples_after) >= 3  # sampling every 0.2 s went on
    assert any("not a regular file" in e.text for e in events if type(e) is LogLine)
