"""Exception dumps are their own kind; ``exception_info`` is never an op type."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from dumpfixtures import T, dump_bytes, write
from test_dump_cli import main

from aclmon.dump import classify, read_dump, summarize

NAME = "exception_info.layer1_conv2.42.1700000000000000"


def _exception_dump(directory: Path, name: str = NAME) -> Path:
    data = np.arange(8, dtype=np.float32).tobytes()
    return write(directory, name, dump_bytes(inputs=[T(data, shape=[8])], op_name="layer1/conv2"))


def test_exception_dump_kind_and_summary(tmp_path):
    path = _exception_dump(tmp_path)
    assert classify(path) == "exception-dump"
    summary = summarize(path)
    assert summary["kind"] == "exception-dump"
    assert "op_type" not in summary  # "exception_info" is where an op type would be
    assert "stream_id" not in summary  # exception dump names carry no stream id
    assert summary["op_name"] == "layer1/conv2" and summary["task_id"] == 42
    assert read_dump(path).op_type == ""


def test_exception_dump_named_after_its_kernel_is_known_by_its_directory(tmp_path):
    directory = tmp_path / "extra-info" / "data-dump" / "0"
    path = _exception_dump(directory, "conv2_kernel_mix_aic.layer1_conv2.42.1700000000000000")
    assert classify(path) == "exception-dump"
    assert "op_type" not in summarize(path)
    plain = _exception_dump(tmp_path / "0", "Conv2D.layer1_conv2.42.2.1700000000000000")
    assert classify(plain) == "op-dump" and summarize(plain)["op_type"] == "Conv2D"


def test_decode_says_exception_dump_and_stream_unknown(tmp_path, capsys):
    path = _exception_dump(tmp_path)
    assert main(["decode", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "exception-dump" and "op_type" not in report
    assert main(["decode", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{NAME}  (exception-dump, 2.0" in out
    assert "exception_info" not in out.replace(NAME, "")
    assert "stream id unknown" in out and "None" not in out


def test_agent_never_learns_exception_info_as_an_op_type(tmp_path):
    from test_agent_dump_watch import FakeAgent, announced

    from aclmon.agent.dumps import DumpWatcher

    agent = FakeAgent()
    watcher = DumpWatcher(agent, str(tmp_path))
    path = _exception_dump(tmp_path / "extra-info" / "data-dump" / "0")
    kernel_named = _exception_dump(
        tmp_path / "extra-info" / "data-dump" / "0",
        "conv2_kernel.layer1_conv2.43.1700000000000001",
    )
    assert watcher.poll(final=True) == 2
    seen = announced(agent)
    assert seen[str(path)][1] == seen[str(kernel_named)][1] == "exception-dump"
    assert agent.state.op_type_of("layer1_conv2") == ""
    assert agent.state.op_types == {}
