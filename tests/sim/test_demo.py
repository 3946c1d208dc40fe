"""The demo workload: an ordinary pyACL program that stays alive through injected faults."""

from __future__ import annotations

import json
import threading

import aclmon.sim
from aclmon.sim import config as sim_config
from aclmon.sim import demo_workload
from aclmon.sim import runtime as sim_runtime


def test_demo_runs_recovers_and_writes_dumps(acl, tmp_path, monkeypatch, capsys):
    sim_config.reset_configuration()  # the demo's own clock settings, not the fixture's
    monkeypatch.setenv(
        sim_config.FAULTS_ENV,
        json.dumps(
            [
                {
                    "kind": "aicore_exception",
                    "op": "layer1/conv2",
                    "model": "resnet_tiny",
                    "every_s": 0.5,
                },
                {"kind": "overflow", "op": "attn/scale", "model": "attention_tiny", "every_s": 0.5},
            ]
        ),
    )
    samples: list[dict[str, int]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            rt = sim_runtime.runtime()
            if rt is not None and rt.extras.get("prof") is not None:
                rate, ret = acl.rt.get_device_utilization_rate(0)
                if ret == 0:
                    samples.append(rate)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        aclmon.sim.run_script(
            demo_workload.__file__,
            ["--seconds", "3", "--devices", "2", "--dump-path", str(tmp_path)],
        )
    except SystemExit as exc:
        assert exc.code == 0
    finally:
        done.set()
        sampler.join()
    out = capsys.readouterr().out
    assert "exception callback: device" in out and "operator layer1/conv2" in out
    assert "recreating the stream and carrying on" in out
    assert "done:" in out
    assert list(tmp_path.rglob("Opdebug.Node_OpDebug.*"))
    assert list(tmp_path.rglob("MatMul.dense1_matmul.*"))
    assert any(s["cube_utilization"] > 0 or s["vector_utilization"] > 0 for s in samples)
    assert sim_runtime.runtime() is None  # the demo finalized
