"""Triage without a job: the allocation table, the verdict rules, the re-run script,
and ``aclmon triage DIR`` over a directory a simulated job left (three errors)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.dump.allocations import (
    FREED,
    INSIDE,
    OUT_OF_RANGE,
    UNKNOWN,
    Allocation,
    AllocationTable,
)
from aclmon.dump.device_errors import parse_device_errors
from aclmon.dump.triage import ExceptionFacts, TensorFacts, triage

ROOT = Path(__file__).resolve().parents[2]


def block(address: int, size: int, site: str = "job.py:3 main") -> Allocation:
    return Allocation(address, size, 0, "rt.malloc", site, 1)


# ---------------------------------------------------------------- the allocation table
def test_where_an_address_lies():
    table = AllocationTable()
    table.allocated(block(0x1000, 0x100))
    table.allocated(block(0x2000, 0x40))
    assert table.classify(0x1000, 0x100).status == INSIDE
    over = table.classify(0x10F0, 0x20)
    assert (over.status, over.overrun) == (OUT_OF_RANGE, 0x10)
    assert table.classify(0x1800, 4).status == UNKNOWN  # between blocks: not the job's
    assert table.freed(0x2000, 5_000_000_000, "rt.free", "job.py:9 cleanup")
    gone = table.classify(0x2010, 8)
    assert (gone.status, gone.freed_by) == (FREED, "rt.free at job.py:9 cleanup")
    assert "freed at" in gone.text() and gone.offending
    # the block is given out again: live wins over freed
    table.allocated(block(0x2000, 0x40, "job.py:12 step"))
    assert table.classify(0x2010, 8).status == INSIDE
    assert not table.freed(0x9999, 0, "rt.free", "")  # not ours: nothing recorded


def test_the_table_is_bounded():
    table = AllocationTable(max_live=4, max_freed=2)
    for i in range(6):
        table.allocated(block(0x1000 * (i + 1), 16))
    assert table.live_count() == 4 and table.forgotten == 2
    for i in range(4):
        table.freed(0x1000 * (i + 1), i, "rt.free", "")
    assert table.freed_count() == 2


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 64), st.integers(1, 64), st.booleans()), max_size=30),
    st.integers(0, 64 * 80),
    st.integers(0, 128),
)
def test_a_finding_is_consistent_with_the_blocks(blocks, address, size):
    """A block of its own per slot of 128 bytes; whatever was freed, an address in a
    live block is inside or out of range of that block, never freed or unknown."""
    table = AllocationTable()
    live = {}
    for slot, length, free in blocks:
        start = slot * 128
        if start in live or start in table._freed:
            continue
        table.allocated(block(start, length))
        live[start] = length
        if free:
            table.freed(start, 1, "rt.free", "")
            del live[start]
    finding = table.classify(address, size)
    holder = next((s for s, n in live.items() if s <= address < s + n), None)
    if holder is not None:
        assert finding.status in (INSIDE, OUT_OF_RANGE)
        assert finding.allocation is not None and finding.allocation.address == holder
        assert finding.overrun == max(0, address + size - holder - live[holder])
    else:
        assert finding.status in (FREED, UNKNOWN)


# ---------------------------------------------------------------- verdicts
CORE = (
    "The error from device(chipId:0, dieId:0), serial number is 3, there is an aicore error"
    " exception, core id is 1, error code = {code}, dump info: pc start: 0x100, current: 0x180,"
    " vec error info: 0, mte error info: 0x1000200, ifu error info: 0, ccu error info: 0,"
    " cube error info: 0, biu error info: 0, aic error mask: 0, para base: 0x2000.\n"
    "The extend info: errcode:({code}, {e1}, 0) errorStr: text fixp_error0 info: 0,"
    " fixp_error1 info: 0, fsmId:0, tslot:0, thread:0, ctxid:0, blk:0, sublk:0, subErrType:4."
)


def facts(*tensors: TensorFacts, code: int = 507015) -> ExceptionFacts:
    return ExceptionFacts(0, 2, 7, code, "conv1", "Conv2D", tensors)


def device_error(code: str = "0x800000", e1: str = "0") -> object:
    (error,) = parse_device_errors(CORE.format(code=code, e1=e1))
    return error


def test_an_out_of_range_input_is_the_verdict_and_comes_first():
    table = AllocationTable()
    table.allocated(block(0x1000, 64))
    table.allocated(block(0x2000, 64))
    result = triage(
        facts(TensorFacts("output", 0, "y", 0x2000, 64), TensorFacts("input", 0, "x", 0x1020, 64)),
        device_error(),
        None,
        table,
    )
    assert result.cause == "out_of_bounds"
    assert result.address_findings[0].status == OUT_OF_RANGE
    assert "runs 32 bytes past the end of its 64-byte allocation" in result.verdict
    assert result.to_dict()["address_findings"][0]["offending"]


@pytest.mark.parametrize(
    ("code", "e1", "cause"),
    [
        ("0x800000", "0", "invalid_address"),  # bit 23, every address inside
        ("0x4000000000000000", "0", "kernel_bounds"),  # bit 62: UB out of bounds
        ("0", "0x800", "misaligned"),  # bit 75
        ("0", "0x1000", "illegal_instruction"),  # bit 76
        ("0x40000000000000", "0", "nan_inf_operand"),  # bit 54
        ("0x100", "0", "suspect_hardware"),  # bit 8: CCU_UB_ECC
        ("0", "0", "trap"),
    ],
)
def test_the_bits_decide_when_no_address_is_wrong(code, e1, cause):
    table = AllocationTable()
    table.allocated(block(0x1000, 64))
    result = triage(
        facts(TensorFacts("input", 0, "x", 0x1000, 64)), device_error(code, e1), None, table
    )
    assert result.cause == cause, result.verdict
    assert not any(f.offending for f in result.address_findings)


def test_without_device_lines_the_verdict_says_so():
    result = triage(facts(), None, None, None)
    assert result.cause == "unknown" and "no device error lines" in result.verdict
    assert triage(facts(code=507018), None, None, None).cause == "aicpu"
    assert triage(facts(code=507014), None, None, None).cause == "timeout"


#: the copy engine's lines for a copy of 2000 bytes into a 1000-byte block (the sim's)
COPY_LINES = (
    "The error from device(chipId:0, dieId:0), serial number is 7, there is a sdma error: the"
    " destination runs 1000 bytes past the end of its allocation (1000 bytes at 0x1000).\n"
    "Memory async copy failed, device_id=0, stream_id=2, task_id=7, flip_num=0, copy_type=0,"
    " memcpy_type=4, copy_data_type=0, length=2000, src_addr=0x9000, dst_addr=0x1000."
)


def test_a_failed_copy_is_judged_by_its_two_ends():
    (error,) = parse_device_errors(COPY_LINES)
    assert error.copy is not None and (error.copy.length, error.copy.destination) == (2000, 0x1000)
    assert (error.stream_id, error.task_id, error.engine) == (2, 7, "SDMA")
    copy_facts = ExceptionFacts(0, 2, 7, 507013, ts_ns=100)
    table = AllocationTable()
    table.allocated(Allocation(0x1000, 1000, 0, "media.dvpp_malloc", "job.py:4 main", 10))
    table.freed(0x1000, 200, "media.dvpp_free", "job.py:9 main")  # after the fault
    result = triage(copy_facts, error, None, table)
    assert result.cause == "out_of_bounds", result.verdict
    first = result.address_findings[0]
    assert (first.role, first.status, first.overrun) == ("destination", OUT_OF_RANGE, 1000)
    assert result.verdict.startswith("out-of-bounds copy: the copy's destination runs 1000")
    assert [f.status for f in result.address_findings[1:]] == [UNKNOWN]  # the host source
    # the block was freed before the copy ran: a stale pointer
    stale = triage(ExceptionFacts(0, 2, 7, 507013, ts_ns=300), error, None, table)
    assert stale.cause == "use_after_free" and "the copy's destination" in stale.verdict
    # a block given out at that address after the fault held nothing then
    table.allocated(Allocation(0x1000, 4000, 0, "rt.malloc", "job.py:12 main", 400))
    assert triage(ExceptionFacts(0, 2, 7, 507013, ts_ns=300), error, None, table).cause == (
        "use_after_free"
    )
    assert triage(ExceptionFacts(0, 2, 7, 507013, ts_ns=500), error, None, table).cause == (
        "copy_fault"
    )
    # offline (no table): the copy engine's fault, with what the device said
    offline = triage(None, error, None, None)
    assert offline.cause == "copy_fault" and "2000 bytes from 0x9000 to 0x1000" in offline.verdict
    assert triage(ExceptionFacts(0, 2, 7, 507013), None, None, None).cause == "copy_fault"


# ---------------------------------------------------------------- a simulated job's directory
#: the tests' tiny model: MatMul mm1, Add add1, Relu relu1 (float16, ND)
MODEL = json.loads((Path(__file__).parents[1] / "tiny_model.json").read_text())
JOB = """
import sys
import acl
assert acl.init() == 0
acl.rt.set_device(0)
stream, _ = acl.rt.create_stream()
model_id, ret = acl.mdl.load_from_file(sys.argv[1])
assert ret == 0
data, _ = acl.rt.malloc(64, 0)
acl.rt.memset(data, 64, 0x3C, 64)
dataset = acl.mdl.create_dataset()
acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(data, 64))
out, _ = acl.rt.malloc(64, 0)
outputs = acl.mdl.create_dataset()
acl.mdl.add_dataset_buffer(outputs, acl.create_data_buffer(out, 64))
for _ in range(8):
    acl.mdl.execute_async(model_id, dataset, outputs, stream)
    acl.rt.synchronize_stream(stream)
acl.finalize()
"""


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What a job with three failures leaves: its plog and three exception dumps."""
    root = tmp_path_factory.mktemp("collected")
    (root / "model.json").write_text(json.dumps(MODEL))
    (root / "job.py").write_text(JOB)
    faults = [
        {"kind": "nan_input", "op": "mm1", "nth": 2},
        {"kind": "vector_error", "op": "relu1", "nth": 4},
        {"kind": "aicpu_error", "op": "mm1", "nth": 7},
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "HOME": str(root),
        "ASCEND_PROCESS_LOG_PATH": str(root / "log"),
        "NPU_COLLECT_PATH": str(root / "collect"),
        "ACLMON_SIM_FAULTS": json.dumps(faults),
        "ACLMON_SIM_CONFIG": json.dumps({"time_scale": 0}),
    }
    code = "import sys, aclmon.sim; aclmon.sim.run_script(sys.argv[1], sys.argv[2:])"
    subprocess.run(
        [sys.executable, "-c", code, str(root / "job.py"), str(root / "model.json")],
        env=env, check=True, timeout=120, cwd=root,
    )  # fmt: skip
    return root


def run_triage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aclmon", "triage", *args],
        capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                           "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_triage_dir_reports_every_error(collected, tmp_path):
    result = run_triage(str(collected), "--json", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    errors = json.loads(result.stdout)["errors"]
    assert [e["cause"] for e in errors] == ["nan_inf_input", "illegal_instruction", "aicpu"]
    assert [e["op_name"] for e in errors] == ["mm1", "relu1", "mm1"]
    assert [e["error_code"] for e in errors] == [507015, 507035, 507018]
    assert errors[0]["nan_inf_inputs"][0]["nan"] == 5
    assert all(e["dump_file"] and e["repro"] for e in errors)
    reports = sorted(tmp_path.glob("info_*/aicerror_*/info.txt"))
    assert len(reports) == 3
    text = reports[0].read_text()
    for section in ("0. Root cause conclusion", "2. AICERROR code", "6. Single Op Test"):
        assert section in text
    # the text form names each error and its verdict
    plain = run_triage(str(collected), "--out", str(tmp_path / "again"))
    assert plain.returncode == 0 and plain.stdout.count("verdict:") == 3


def test_the_rerun_script_holds_the_dumped_inputs(collected, tmp_path):
    result = run_triage(str(collected), "--json", "--out", str(tmp_path))
    first = json.loads(result.stdout)["errors"][0]
    script = Path(first["repro"])
    values = np.load(script.with_name("input_0.npy")).astype(np.float32)
    assert int(np.isnan(values).sum()) == 5
    # it runs end to end under the sim's acl.op: cleanly without the fault (the sim's
    # MatMul does not fail on NaN), and reproducing it (exit 1) with the fault there
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    rerun = [sys.executable, "-m", "aclmon", "run", "--sim", str(script)]
    clean = subprocess.run(rerun, capture_output=True, text=True, timeout=120, env=env)
    assert clean.returncode == 0, clean.stderr
    assert "MatMul ran cleanly" in clean.stdout
    env["ACLMON_SIM_FAULTS"] = json.dumps([{"kind": "aicore_exception", "op_type": "MatMul"}])
    again = subprocess.run(rerun, capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 1, again.stderr
    assert "reproduced: MatMul failed with 507015" in again.stdout


def test_triage_of_a_missing_directory_is_one_clear_error(tmp_path):
    result = run_triage(str(tmp_path / "nowhere"))
    assert result.returncode != 0
    assert "not a directory" in result.stderr and "Traceback" not in result.stderr
