"""Live triage, end to end: a job under ``aclmon run --sim`` hit by every device fault kind.

One job of 200 launches (``execute_async`` from one function, ``synchronize_stream``
in another, a scratch buffer allocated and freed each step) with five faults on
five launches; ``attach --once --json`` after the launches (a viewer that comes
late) must give, for each exception, the verdict of its kind, exactly the
offending address flagged (no false flag on any other tensor of any exception),
and the line that launched it; ``aclmon events --json`` of the job's recording
carries the ``triage`` events.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agenthelpers import MODEL
from test_agent_end_to_end import sim_env

TRIAGE_JOB = Path(__file__).with_name("triage_job.py")
LAUNCH_LINE = next(
    number
    for number, line in enumerate(TRIAGE_JOB.read_text().splitlines(), start=1)
    if "# the launch site" in line
)
#: mm1 runs every step, so its rules fire at steps 40, 80 and 120; add1 and relu1
#: do not run in a step that failed before them, so theirs fire at steps 153 and 174.
FAULTS = [
    {"kind": "aicore_oob", "op": "mm1", "nth": 40, "overrun": 32},
    {"kind": "use_after_free", "op": "mm1", "nth": 80},
    {"kind": "nan_input", "op": "mm1", "nth": 120},
    {"kind": "vector_error", "op": "add1", "nth": 150},
    {"kind": "aicpu_error", "op": "relu1", "nth": 170},
]
EXPECTED = [  # (operator, error code, cause, the offending finding's status or None)
    ("mm1", 507015, "out_of_bounds", "out_of_range"),
    ("mm1", 507015, "use_after_free", "freed"),
    ("mm1", 507015, "nan_inf_input", None),
    ("add1", 507035, "illegal_instruction", None),
    ("relu1", 507018, "aicpu", None),
]


def run_job(tmp_path: Path, faults: list[dict], *extra: str) -> tuple[dict, Path]:
    """The triage job under the agent until its launches are done; returns what a late
    ``attach --once --json`` says, and the job's recording."""
    model = tmp_path / "model.json"
    model.write_text(json.dumps(MODEL))
    env = sim_env()
    env["ACLMON_SIM_FAULTS"] = json.dumps(faults)
    env["ASCEND_PROCESS_LOG_PATH"] = str(tmp_path / "log")
    env["NPU_COLLECT_PATH"] = str(tmp_path / "collect")
    env.pop("ASCEND_LAUNCH_BLOCKING", None)
    address = tmp_path / "agent.sock"
    recording = tmp_path / "job.rec"
    stop = tmp_path / "stop"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "aclmon", "run", "--sim", "--listen", str(address),
            "--record", str(recording), *extra, str(TRIAGE_JOB), str(model),
            "--iterations", "200", "--idle-until", str(stop), "--max-seconds", "120",
        ],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("iterations 200"), line or proc.stderr.read()
        deadline = time.monotonic() + 60
        while True:  # every exception's triage, once the agent has read its lines and dump
            result = subprocess.run(
                [sys.executable, "-m", "aclmon", "attach", str(address), "--once", "--json",
                 "--wait", "0.3"],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            data = json.loads(result.stdout)
            recent = data["exceptions"]["recent"]
            if (recent and all(e["triage"] for e in recent)) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        stop.touch()
        assert proc.wait(timeout=60) == 0
        return data, recording
    finally:
        stop.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_every_fault_kind_is_triaged_with_its_cause_and_launch_site(tmp_path):
    data, recording = run_job(tmp_path, FAULTS, "--launch-stacks")
    recent = data["exceptions"]["recent"]
    assert len(recent) == len(EXPECTED)
    for exception, (op, code, cause, offending) in zip(recent, EXPECTED, strict=True):
        triage = exception["triage"]
        assert (exception["op_name"], exception["error_code"]) == (op, code)
        assert triage["cause"] == cause, triage["verdict"]
        assert triage["verdict"]
        flagged = [f for f in triage["address_findings"] if f["offending"]]
        if offending is None:
            assert flagged == []
        else:
            (finding,) = flagged
            assert (finding["role"], finding["index"], finding["status"]) == ("input", 0, offending)
        # every other tensor: in a block the job allocated, or in the runtime's own memory
        for finding in triage["address_findings"]:
            assert finding["offending"] or finding["status"] in ("inside", "unknown")
        # the launching line, though the error surfaced at the synchronize elsewhere
        assert exception["launch_site"].endswith(f"triage_job.py:{LAUNCH_LINE} launch")
        assert triage["launch"]["api"] == "mdl.execute_async"
        assert any(site.endswith(" main") for site in triage["launch"]["stack"])
        assert "exception dump" in triage["sources"] and "device error lines" in triage["sources"]
        assert Path(triage["repro"]).is_file()
    oob, freed, nan = (e["triage"] for e in recent[:3])
    (finding,) = [f for f in oob["address_findings"] if f["offending"]]
    assert finding["overrun"] == 32 and finding["allocation"]["api"] == "rt.malloc"
    assert finding["allocation"]["site"].endswith(" dataset")  # where the job allocated it
    (finding,) = [f for f in freed["address_findings"] if f["offending"]]
    assert finding["freed_by"].startswith("rt.free at ") and finding["freed_by"].endswith(" main")
    (poisoned,) = nan["nan_inf_inputs"]
    assert poisoned["index"] == 0 and poisoned["nan"] == 5  # every 7th of 32 values
    assert "bit 23 MTE_BIU_RDWR_RESP" in oob["error_bits"][0]
    vector = recent[3]["triage"]
    assert (
        vector["bits"] == [76]
        and vector["error_str"] == "The VEC instruction parameter is invalid."
    )

    # `aclmon events --json` of the recording: the triage events themselves
    result = subprocess.run(
        [sys.executable, "-m", "aclmon", "events", str(recording), "--json"],
        env=sim_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    triages = [json.loads(line) for line in result.stdout.splitlines() if '"triage"' in line]
    # numbered ones: the agent's last snapshot before its Goodbye restates them (seq 0)
    triages = [t for t in triages if t["kind"] == "triage" and t["seq"]]
    assert [t["triage"]["cause"] for t in triages] == [cause for _, _, cause, _ in EXPECTED]


@pytest.mark.slow
def test_no_false_flag_after_200_clean_launches(tmp_path):
    """200 launches with allocation churn, then a plain AI Core exception: nothing is
    flagged, and the launch site names the launching line without stacks."""
    faults = [{"kind": "aicore_exception", "op": "mm1", "nth": 200}]
    data, _ = run_job(tmp_path, faults)
    (exception,) = data["exceptions"]["recent"]
    triage = exception["triage"]
    assert [f for f in triage["address_findings"] if f["offending"]] == []
    assert {f["status"] for f in triage["address_findings"]} <= {"inside", "unknown"}
    assert triage["cause"] == "trap"
    assert exception["launch_site"].endswith(f"triage_job.py:{LAUNCH_LINE} launch")
    assert "stack" not in triage["launch"]
