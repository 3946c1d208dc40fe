"""The sim's plog writer and acl.get_recent_err_msg, in the formats CANN uses."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import numpy as np
import pytest

from aclmon import acl_constants as C
from aclmon.sim import config as sim_config
from aclmon.sim import slog

LINE = re.compile(
    r"^\[(ERROR|WARNING|INFO|DEBUG)\] ([A-Z]+)\((\d+),([^)]+)\):"
    r"(\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3}) \[([^\]:]+):(\d+)\](\d+) (\w+): (.*)$"
)


@pytest.fixture
def plog_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", os.fspath(tmp_path / "logs"))
    monkeypatch.delenv("ASCEND_SLOG_PRINT_TO_STDOUT", raising=False)
    monkeypatch.delenv("ASCEND_GLOBAL_LOG_LEVEL", raising=False)
    yield tmp_path / "logs"
    slog.WRITER.flush()
    monkeypatch.undo()
    slog.WRITER.reconfigure()


def _plog_lines(base: Path) -> list[str]:
    files = sorted((base / "debug" / "plog").glob(f"plog-{os.getpid()}_*.log"))
    assert len(files) == 1, files
    assert re.fullmatch(rf"plog-{os.getpid()}_\d{{17}}\.log", files[0].name)
    return files[0].read_text().splitlines()


def test_failed_call_is_an_error_line_and_a_recent_message(acl, plog_dir):
    assert acl.init() == 0
    assert acl.rt.set_device(99) == C.ACL_ERROR_RT_INVALID_DEVICEID
    lines = _plog_lines(plog_dir)  # an ERROR is written at once
    match = LINE.match(lines[-1])
    assert match, lines[-1]
    level, module, pid, _pname, _time, source, line, _tid, func, text = match.groups()
    assert (level, module, int(pid), func) == ("ERROR", "RUNTIME", os.getpid(), "aclrtSetDevice")
    assert source == "device.cpp" and int(line) > 0
    assert "result = 107001" in text
    message = acl.get_recent_err_msg()
    assert "Invalid_Argument(EE1001): The argument is invalid.Reason: no device 99" in message
    assert "[FUNC:aclrtSetDevice][FILE:device.cpp][LINE:" in message
    assert acl.get_recent_err_msg() == ""  # read once, then cleared


def test_recent_message_is_per_thread(acl, plog_dir):
    assert acl.init() == 0
    seen = []

    def worker() -> None:
        acl.rt.set_device(99)
        seen.append(acl.get_recent_err_msg())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert "EE1001" in seen[0]
    assert acl.get_recent_err_msg() == ""  # this thread had no failure


def test_levels_buffering_and_finalize(acl, plog_dir, monkeypatch):
    monkeypatch.setenv("ASCEND_GLOBAL_LOG_LEVEL", "1")
    assert acl.init() == 0
    acl.app_log(C.ACL_INFO, "hello from the app")
    acl.app_log(C.ACL_DEBUG, "below the level")
    assert not (plog_dir / "debug" / "plog").exists()  # INFO lines wait in the buffer
    assert acl.finalize() == 0
    lines = _plog_lines(plog_dir)
    assert all(LINE.match(line) for line in lines), lines
    texts = [LINE.match(line).groups() for line in lines]
    assert texts[0][:2] == ("INFO", "ASCENDCL") and texts[0][8] == "aclInit"
    app = [t for t in texts if t[1] == "APP"]
    assert len(app) == 1 and app[0][9] == "hello from the app" and app[0][0] == "INFO"
    assert texts[-1][8] == "aclFinalize"


def test_default_level_writes_errors_only(acl, plog_dir):
    assert acl.init() == 0
    acl.app_log(C.ACL_WARNING, "not written at the default level")
    assert acl.finalize() == 0
    assert not (plog_dir / "debug" / "plog").exists()


def test_print_to_stdout(acl, plog_dir, monkeypatch, capsys):
    monkeypatch.setenv("ASCEND_SLOG_PRINT_TO_STDOUT", "1")
    assert acl.init() == 0
    acl.rt.set_context(0)
    out = capsys.readouterr().out
    assert LINE.match(out.splitlines()[-1])
    assert "aclrtSetContext" in out
    assert not (plog_dir / "debug" / "plog").exists()


def test_aicore_exception_lines_and_message(acl, plog_dir, model_path):
    sim_config.configure(faults=[{"kind": "aicore_exception", "op": "conv1", "nth": 1}])
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    model_id, _ = acl.mdl.load_from_file(model_path["resnet_tiny"])
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    datasets = []
    for count, size_of in (
        (acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index),
        (acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index),
    ):
        dataset = acl.mdl.create_dataset()
        for i in range(count):
            size = size_of(desc, i)
            ptr, _ = acl.rt.malloc(size, 0)
            acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(ptr, size))
        datasets.append(dataset)
    assert acl.mdl.execute_async(model_id, datasets[0], datasets[1], stream) == 0
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_AICORE_EXCEPTION
    stream_id, _ = acl.rt.stream_get_id(stream)
    message = acl.get_recent_err_msg()
    assert message.startswith("EZ9999: Inner Error!\nEZ9999[PID: ")
    assert "there is an aicore error exception" in message
    assert f"Stream synchronize failed, stream_id={stream_id}" in message
    lines = [LINE.match(line).groups() for line in _plog_lines(plog_dir)]
    kernel = [t for t in lines if t[8] == "PrintErrorInfo"]
    assert kernel and f"stream_id={stream_id}," in kernel[0][9]
    assert "fault kernel_name=conv1" in kernel[0][9]
    assert any(t[1] == "GE" and "node_name:conv1, node_type:Conv2D" in t[9] for t in lines)
    assert lines[-1][8] == "aclrtSynchronizeStream"
    np.testing.assert_equal(len(kernel), 1)


def test_work_path_logs_go_to_its_log_directory_where_the_agent_looks(acl, tmp_path, monkeypatch):
    """ASCEND_WORK_PATH (without ASCEND_PROCESS_LOG_PATH): the sim writes under
    $ASCEND_WORK_PATH/log and the agent's log root is that same directory."""
    from aclmon.dump.plog import find_log_files, log_root

    monkeypatch.delenv("ASCEND_PROCESS_LOG_PATH", raising=False)
    monkeypatch.delenv("ASCEND_SLOG_PRINT_TO_STDOUT", raising=False)
    monkeypatch.setenv("ASCEND_WORK_PATH", os.fspath(tmp_path / "work"))
    try:
        slog.WRITER.reconfigure()
        assert acl.init() == 0
        assert acl.rt.set_device(99) == C.ACL_ERROR_RT_INVALID_DEVICEID
        assert slog.log_base() == tmp_path / "work" / "log"
        assert log_root() == tmp_path / "work" / "log"
        (found,) = find_log_files(log_root(), os.getpid())
        assert found.parent == tmp_path / "work" / "log" / "debug" / "plog"
        assert "aclrtSetDevice" in found.read_text()
    finally:
        slog.WRITER.flush()
        monkeypatch.undo()
        slog.WRITER.reconfigure()
