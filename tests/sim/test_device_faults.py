"""The device fault kinds: what the failing task looks like, and the lines CANN logs for it.

Each kind runs a small model in the shape of the samples; the plog it leaves is read
back with aclmon's device-error parser (written independently, against public raw
texts), so the simulator's lines are checked field by field, and the exception
info, the op desc and the exception dump are checked against the fault's meaning.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from aclmon.dump.device_errors import parse_device_errors
from aclmon.dump.reader import read_dump
from aclmon.sim import config as sim_config
from aclmon.sim.faults import FaultRuleError, parse_fault_rule

#: the tests' tiny model: MatMul mm1, Add add1, Relu relu1 (float16, ND)
MODEL = json.loads((Path(__file__).parents[1] / "tiny_model.json").read_text())


class Run:
    """A job of ``steps`` launches, each after a scratch buffer's malloc and free;
    what the exception callback saw of each failure (ids and the op desc)."""

    def __init__(self, acl: ModuleType, tmp_path: Path, steps: int = 3) -> None:
        model = tmp_path / "model.json"
        model.write_text(json.dumps(MODEL))
        self.failures: list[dict[str, Any]] = []
        self.freed: list[int] = []
        assert acl.init() == 0
        assert acl.rt.set_exception_info_callback(lambda info: self._seen(acl, info)) == 0
        assert acl.rt.set_device(0) == 0
        stream, _ = acl.rt.create_stream()
        model_id, ret = acl.mdl.load_from_file(str(model))
        assert ret == 0
        desc = acl.mdl.create_desc()
        acl.mdl.get_desc(desc, model_id)
        self.input_ptr, _ = acl.rt.malloc(64, 0)
        host = np.full(32, 0.5, dtype=np.float16)
        acl.rt.memcpy(self.input_ptr, 64, acl.util.numpy_to_ptr(host), 64, 1)
        inputs = acl.mdl.create_dataset()
        acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(self.input_ptr, 64))
        out_ptr, _ = acl.rt.malloc(64, 0)
        outputs = acl.mdl.create_dataset()
        acl.mdl.add_dataset_buffer(outputs, acl.create_data_buffer(out_ptr, 64))
        self.codes = []
        for _ in range(steps):
            scratch, _ = acl.rt.malloc(256, 0)
            acl.rt.free(scratch)
            self.freed.append(scratch)
            acl.mdl.execute_async(model_id, inputs, outputs, stream)
            self.codes.append(acl.rt.synchronize_stream(stream))
        acl.finalize()
        self.plog = "".join(p.read_text() for p in sorted((tmp_path / "log").rglob("plog-*.log")))

    def _seen(self, acl: ModuleType, info: int) -> None:
        rt = acl.rt
        device = rt.get_device_id_from_exception_info(info)
        stream = rt.get_stream_id_from_exception_info(info)
        task = rt.get_task_id_from_exception_info(info)
        name, in_desc, count, _, _, ret = acl.mdl.create_and_get_op_desc(device, stream, task, 256)
        assert ret == 0
        addresses = [
            acl.get_tensor_desc_address(acl.get_tensor_desc_by_index(in_desc, i))
            for i in range(count)
        ]
        self.failures.append({"device": device, "stream": stream, "task": task, "op": name,
                              "code": rt.get_error_code_from_exception_info(info),
                              "addresses": addresses})  # fmt: skip


@pytest.fixture
def run(acl: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path / "log"))
    monkeypatch.setenv("NPU_COLLECT_PATH", str(tmp_path / "collect"))

    def with_faults(*faults: dict[str, Any]) -> Run:
        sim_config.configure(time_scale=0.0, faults=list(faults))
        return Run(acl, tmp_path)

    return with_faults


def only_error(job: Run) -> Any:
    (failure,) = job.failures
    (error,) = parse_device_errors(job.plog)
    # the lines name the task the callback named
    assert (error.device_id, error.stream_id, error.task_id) == (
        failure["device"], failure["stream"], failure["task"],
    )  # fmt: skip
    assert error.node_name == failure["op"]
    assert error.dump_file and Path(error.dump_file).is_file()
    return error, failure


def test_aicore_oob_reads_past_the_end_of_the_input_allocation(run):
    job = run({"kind": "aicore_oob", "op": "mm1", "nth": 2, "overrun": 16})
    assert job.codes == [0, 507015, 0]
    error, failure = only_error(job)
    assert (error.node_type, error.ret_code, error.engine) == ("MatMul", 0x26, "")
    core = error.cores[0]
    assert core.core_type == "aicore" and core.error_code == (0x800000,)
    assert core.extend is not None and core.extend.errcode == (0x800000, 0, 0)
    assert error.bit_numbers() == [23]
    # input x (64 bytes) starts 48 bytes into its 64-byte block: 16 bytes past its end
    assert failure["addresses"][0] == job.input_ptr + 64 + 16 - 64
    dump = read_dump(error.dump_file)
    assert dump.inputs[0].header.address == failure["addresses"][0]


def test_use_after_free_reads_the_buffer_freed_last(run):
    job = run({"kind": "use_after_free", "op": "mm1", "nth": 3})
    error, failure = only_error(job)
    assert failure["addresses"][0] == job.freed[2]
    assert error.bit_numbers() == [23]
    assert "mte_err_type=010: read bus error" in error.register_fields()[0]


def test_use_after_free_waits_for_a_freed_buffer(acl, tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path / "log"))
    sim_config.configure(time_scale=0.0, faults=[{"kind": "use_after_free", "op": "mm1"}])
    model = tmp_path / "model.json"
    model.write_text(json.dumps(MODEL))
    assert acl.init() == 0
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    model_id, _ = acl.mdl.load_from_file(str(model))
    data, _ = acl.rt.malloc(64, 0)
    dataset = acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(data, 64))
    # nothing freed yet: the kernel has no stale pointer to read
    assert acl.mdl.execute_async(model_id, dataset, dataset, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0


def test_nan_input_dumps_the_nan_values(run):
    job = run({"kind": "nan_input", "op": "mm1", "nth": 1})
    error, _ = only_error(job)
    assert error.bit_numbers() == [9]  # the cube read NaN from L0A/L0B
    values = read_dump(error.dump_file).inputs[0].array.astype(np.float32)
    assert int(np.isnan(values).sum()) == 5  # every 7th of 32


def test_vector_error_with_the_extend_lines_errcode(run):
    job = run({"kind": "vector_error", "op": "add1", "nth": 1, "errcode": [0, 0x800]})
    error, failure = only_error(job)
    assert failure["code"] == 507035
    assert (error.ret_code, error.ret_text) == (0x31, "vector core exception")
    assert error.cores[0].core_type == "aivec"
    assert error.bit_numbers() == [75]


def test_aicpu_error_lines(run):
    job = run(
        {"kind": "aicpu_error", "op": "add1", "nth": 1, "errcode": 5, "message": "kernel not found"}
    )
    error, failure = only_error(job)
    assert failure["code"] == 507018
    assert error.cores == [] and error.is_aicpu
    assert (error.aicpu_errcode, error.aicpu_message) == (5, "kernel not found")
    assert error.ret_code == 0x2A


@pytest.mark.parametrize(
    "rule",
    [
        {"kind": "aicore_oob", "op": "a", "overrun": 0},
        {"kind": "vector_error", "op": "a", "errcode": [1, 2, 3, 4]},
        {"kind": "vector_error", "op": "a", "errcode": "0x800"},
        {"kind": "aicpu_error", "op": "a", "message": 3},
        {"kind": "nan_input", "op": "a", "input": -1},
    ],
)
def test_bad_device_fault_rules_are_refused(rule):
    with pytest.raises(FaultRuleError):
        parse_fault_rule(rule, "test")
