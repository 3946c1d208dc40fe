"""The demo workload: an ordinary pyACL program that stays alive through injected faults."""

from __future__ import annotations

import json
import threading

import aclmon.sim
from aclmon.sim import config as sim_config
from aclmon.sim import runtime as sim_runtime


def test_demo_runs_recovers_and_writes_dumps(acl, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("NPU_COLLECT_PATH", raising=False)
    monkeypatch.delenv("ASCEND_WORK_PATH", raising=False)
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
                {
                    "kind": "overflow",
                    "op": "bert/encoder/layer_11/attention/self/Mul",
                    "model": "bert_tiny",
                    "every_s": 0.5,
                },
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
            aclmon.sim.DEMO_WORKLOAD,
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
    assert list(tmp_path.glob("extra-info/data-dump/*/exception_info.layer1_conv2.*"))
    assert any(s["cube_utilization"] > 0 or s["vector_utilization"] > 0 for s in samples)
    assert sim_runtime.runtime() is None  # the demo finalized


def test_profiling_the_demo_from_another_thread(acl, tmp_path):
    """What the agent does: toggle API-mode profiling while the job's threads run."""
    sim_config.reset_configuration()
    sim_config.configure(faults=[])
    errors: list[BaseException] = []

    def run_demo() -> None:
        try:
            aclmon.sim.run_script(
                aclmon.sim.DEMO_WORKLOAD,
                [
                    "--seconds",
                    "5",
                    "--devices",
                    "2",
                    "--quiet",
                    "--dump-path",
                    str(tmp_path / "d"),
                ],
            )
        except SystemExit as exc:
            if exc.code:
                errors.append(exc)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    job = threading.Thread(target=run_demo)
    job.start()
    try:
        pause = threading.Event()
        for _ in range(200):  # the job loads its models within a fraction of a second
            rt = sim_runtime.runtime()
            if (rt is not None and rt.models) or not job.is_alive():
                break
            pause.wait(0.05)
        prof_dir = tmp_path / "prof"
        assert acl.prof.init(str(prof_dir)) == 0
        cfg = acl.prof.create_config([0, 1], 1, 0, 0x0002 | 0x0080)
        assert acl.prof.start(cfg) == 0
        # longer than bert_tiny's longest pause (1.2 s, x1.8 at the demo's busiest) and
        # its run: every model runs in it
        threading.Event().wait(3.0)
        assert acl.prof.stop(cfg) == 0
        assert acl.prof.destroy_config(cfg) == 0
        assert acl.prof.finalize() == 0
    finally:
        job.join()
    assert not errors
    (session,) = prof_dir.glob("PROF_*")
    for device in (0, 1):
        rows = (session / f"device_{device}/data/task_time.jsonl").read_text().splitlines()
        models = {json.loads(r)["model_name"] for r in rows}
        assert models == {"resnet_tiny", "mlp_head", "bert_tiny"}


def test_steady_demo_holds_its_rate():
    """--steady takes the swell off a worker's pause (benches need the same load each
    second); without it the rate swells and ebbs per device."""
    from aclmon.sim.demo_workload import swell

    assert swell(0, steady=True) == swell(3, steady=True) == 1.0
    assert 0.2 - 1e-9 <= swell(0) <= 1.8 + 1e-9
    assert swell(0) != swell(1)  # a different phase per device
