"""The pyACL developer-guide flows, run unchanged (only ``import acl`` resolves to the sim)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import aclmon.sim
from aclmon.sim import config as sim_config

SAMPLES = Path(__file__).parent / "samples"


def run_sample(name: str, *args: str) -> None:
    aclmon.sim.run_script(os.fspath(SAMPLES / name), list(args))


def reference_resnet(image: np.ndarray) -> np.ndarray:
    """resnet_tiny recomputed with plain numpy from the same seeded weights."""
    from aclmon.sim.model import _init_weight
    from aclmon.sim.model_description import load_description_file

    parsed = load_description_file(
        os.fspath(Path(aclmon.sim.__file__).parent / "models/resnet_tiny.json")
    )
    w = {
        s.name: _init_weight(s, parsed["weight_init"][s.name], "resnet_tiny", 0).astype(np.float32)
        for s in parsed["weights"]
    }

    def conv(x: np.ndarray, k: np.ndarray) -> np.ndarray:
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((1, k.shape[0], 16, 16), np.float32)
        for i in range(16):
            for j in range(16):
                out[:, :, i, j] = np.einsum("nchw,ochw->no", xp[:, :, i : i + 3, j : j + 3], k)
        return out

    x = image.astype(np.float32)
    c1 = (conv(x, w["conv1_w"]) + w["conv1_b"].reshape(1, 8, 1, 1)).astype(np.float16)
    r1 = np.maximum(c1, 0)
    c2 = conv(r1.astype(np.float32), w["conv2_w"]).astype(np.float16)
    block = np.maximum(c2 + r1, 0)
    pooled = block.astype(np.float32).mean(axis=(2, 3)).astype(np.float16)
    logits = (pooled.astype(np.float32) @ w["fc_w"]).astype(np.float16).astype(np.float32)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float16)


def test_device_synchronization_flow(acl, model_path, tmp_path):
    sim_config.configure(time_scale=1.0)
    result = tmp_path / "result.json"
    run_sample("sample_sync.py", model_path["resnet_tiny"], os.fspath(result))
    data = json.loads(result.read_text())
    assert data["status"] == 0  # ACL_STREAM_STATUS_COMPLETE after synchronize
    assert data["elapsed_ms"] > 0
    image = np.array(data["input"], dtype=np.float16)
    expected = reference_resnet(image)
    np.testing.assert_allclose(
        np.array(data["output"]), expected.astype(float), rtol=0.02, atol=2e-3
    )


def test_aicore_exception_callback_flow(acl, model_path, tmp_path, monkeypatch):
    monkeypatch.setenv(
        sim_config.FAULTS_ENV,
        json.dumps([{"kind": "aicore_exception", "op": "layer1/conv2", "model": "resnet_tiny"}]),
    )
    result = tmp_path / "result.json"
    run_sample("sample_exception.py", model_path["resnet_tiny"], os.fspath(result))
    data = json.loads(result.read_text())
    assert data["sync_ret"] == 507015
    assert data["after_ret"] == 0  # the error is reported once
    (info,) = data["seen"]
    assert info["thread"] != data["main_thread"]  # called from a runtime thread
    assert info["error_code"] == 507015
    assert info["device"] == 0 and info["stream_id"] == data["stream_id"]
    assert info["op_name"] == "layer1/conv2" and info["ret"] == 0
    assert info["task_id"] == 3  # trans_image, conv1, relu1, then conv2
    inputs = [t for t in info["tensors"] if t["kind"] == "input"]
    outputs = [t for t in info["tensors"] if t["kind"] == "output"]
    assert [t["dims"] for t in inputs] == [[1, 1, 16, 16, 16], [8, 8, 3, 3]]
    assert inputs[0]["format"] == 3 and inputs[1]["format"] == 0  # NC1HWC0, NCHW
    assert [t["dims"] for t in outputs] == [[1, 1, 16, 16, 16]]
    assert all(t["dtype"] == 1 and t["address"] > 0 for t in info["tensors"])


def test_profiling_api_flow(acl, model_path, tmp_path):
    result = tmp_path / "result.json"
    run_sample(
        "sample_profiling.py",
        model_path["mlp_head"],
        os.fspath(tmp_path / "prof"),
        os.fspath(result),
    )
    assert json.loads(result.read_text())["ok"]
    (session,) = (tmp_path / "prof").glob("PROF_*")
    info = json.loads((session / "info.json").read_text())
    assert info["devices"] == [0] and info["aicore_metrics"] == "PipeUtilization"
    assert "end_time_us" in info
    rows = [
        json.loads(line)
        for line in (session / "device_0/data/task_time.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 2 * 8  # two executions of the 8-operator model
    assert rows[1]["op_name"] == "dense1/matmul" and rows[1]["op_type"] == "MatMul"
    assert all(r["end_us"] >= r["start_us"] for r in rows)
    assert (session / "device_0/data/aicore.jsonl").exists()
    assert (session / "host/data/acl_api.jsonl").read_text().count("aclmdlExecute") == 2


@pytest.mark.parametrize("variant", ["mark", "push_pop", "range"])
def test_msproftx_flows(acl, tmp_path, variant):
    run_sample("sample_msproftx.py", variant, os.fspath(tmp_path))
    (session,) = tmp_path.glob("PROF_*")
    (record,) = [
        json.loads(x) for x in (session / "host/data/msproftx.jsonl").read_text().splitlines()
    ]
    assert record["kind"] == variant
    assert record["message"] == f"{variant} stamp"
    if variant != "mark":
        assert record["end_ns"] >= record["start_ns"]


def test_subscription_with_pipe_reader_thread(acl, model_path, tmp_path):
    result = tmp_path / "result.json"
    run_sample("sample_subscribe.py", model_path["resnet_tiny"], os.fspath(result))
    data = json.loads(result.read_text())
    records = data["records"]
    assert len(records) == 3 * 12  # three executions of the 12-operator model
    assert {r[0] for r in records} == {data["model_id"]}
    assert records[1][1:3] == ["conv1", "Conv2D"]
    assert all(r[4] >= r[3] and r[5] >= 1 for r in records)


def test_host_callback_flow(acl, model_path, tmp_path):
    sim_config.configure(time_scale=1.0, cost_scale=200.0)
    result = tmp_path / "result.json"
    run_sample("sample_callback.py", model_path["mlp_head"], os.fspath(result))
    data = json.loads(result.read_text())
    assert data["calls"] == [[0, "done"], [1, "done"], [2, "done"]]
    assert data["calls_at_sync"] == 3  # blocking callbacks ran before synchronize returned
    # 107012 until subscribe_report ran, then 0 per callback and 507012 when idle
    assert 0 in data["reports"] and set(data["reports"]) <= {0, 107012, 507012}
