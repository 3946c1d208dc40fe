"""Injected fp16 overflows: real infs from the kernels and the Opdebug records they produce."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from aclmon import acl_constants as C
from aclmon.sim import config as sim_config
from aclmon.sim import kernels

from . import dumpreader
from .test_dumps import dump_files, run_models


def _overflow_rule(**extra):
    return [{"kind": "overflow", "op": "attn/scale", "model": "attention_tiny", "nth": 1, **extra}]


@pytest.mark.parametrize("record", ["old", "new"])
def test_overflow_writes_opdebug_and_op_dump(acl, tmp_path, model_path, record):
    sim_config.configure(faults=_overflow_rule(record=record))
    dump_dir = run_models(
        acl, tmp_path, model_path, {"dump_debug": "on"}, names=("attention_tiny",), runs=2
    )
    files = dump_files(dump_dir)
    debug = [n for n in files if n.startswith("Opdebug.Node_OpDebug.")]
    ops = [n for n in files if not n.startswith("Opdebug.")]
    assert len(debug) == 1 and len(ops) == 1  # only the first execution overflowed
    op_dump = dumpreader.read_dump(files[ops[0]].read_bytes())
    assert op_dump.op_name == "attn/scale"
    assert files[ops[0]].parent == files[debug[0]].parent
    assert files[debug[0]].parent.relative_to(dump_dir).parts[2:] == ("attention_tiny", "1", "0")
    scores, scale = (t.logical() for t in op_dump.inputs)
    product = op_dump.outputs[0].logical()
    assert np.isfinite(scores).all() and np.isfinite(scale).all()
    assert np.isinf(product).any()  # the numpy kernel really overflowed in float16
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(product, scores * scale)
    container = dumpreader.read_dump(files[debug[0]].read_bytes())
    assert container.op_name == "Node_OpDebug" and not container.inputs
    payload = container.outputs[0].data
    _, _, task_id, stream_id, _ = ops[0].split(".")
    _, _, debug_task, debug_stream, _ = debug[0].split(".")
    assert debug_stream == stream_id and debug_task != task_id
    if record == "old":
        info = dumpreader.read_old_overflow(payload)
        assert info["kernel_code"] == info["pc_start"] and info["block_idx"] == 0
        assert info["dha_status"] == 0 and info["l2_status"] == 0
    else:
        info = dumpreader.read_new_overflow(payload)
        assert len(payload) == 24 + 88
        assert (info["valid"], info["acc_type"], info["data_len"]) == (1, 1, 88)  # AIV
    assert info["status"] == kernels.STATUS_FLOAT_OVERFLOW
    assert (info["model_id"], info["stream_id"], info["task_id"]) == (
        1,
        int(stream_id),
        int(task_id),
    )


def test_no_opdebug_without_dump_debug(acl, tmp_path, model_path):
    sim_config.configure(faults=_overflow_rule())
    dump_dir = run_models(
        acl,
        tmp_path,
        model_path,
        {"dump_list": [{"model_name": "attention_tiny", "layer": ["attn/q"]}]},
        names=("attention_tiny",),
    )
    assert [n.split(".")[1] for n in dump_files(dump_dir)] == ["attn_q"]


def test_overflow_switch_reports_207003(acl, model_path):
    sim_config.configure(faults=_overflow_rule())
    acl.init()
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    assert acl.rt.set_stream_overflow_switch(stream, 1) == 0
    assert acl.rt.get_stream_overflow_switch(stream) == (1, 0)
    model_id, _ = acl.mdl.load_from_file(model_path["attention_tiny"])
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    for ds, size in (
        (ins, acl.mdl.get_input_size_by_index(desc, 0)),
        (outs, acl.mdl.get_output_size_by_index(desc, 0)),
    ):
        ptr, _ = acl.rt.malloc(size, 0)
        acl.rt.memset(ptr, size, 0x3C, size)  # fp16 0x3C3C ~ 1.06
        acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size))
    acl.mdl.execute_async(model_id, ins, outs, stream)
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_AICORE_OVER_FLOW
    acl.mdl.execute_async(model_id, ins, outs, stream)
    assert acl.rt.synchronize_stream(stream) == 0


def test_status_bits_follow_the_kernel():
    f16 = np.float16
    big = np.array([60000.0], f16)
    add = kernels.KERNELS["Add"]([big, big], {}, [np.dtype(f16)])
    assert kernels.overflow_status("Add", [big, big], add) == kernels.STATUS_FLOAT_OVERFLOW
    wide = np.array([1e6], np.float32)
    cast = kernels.KERNELS["Cast"]([wide], {}, [np.dtype(f16)])
    assert np.isinf(cast[0]).all()
    assert kernels.overflow_status("Cast", [wide], cast) == kernels.STATUS_CONVERT_TO_FP16_OVERFLOW
    a = np.full((2, 4), 300.0, f16)
    mm = kernels.KERNELS["MatMul"]([a, a.T.copy()], {}, [np.dtype(f16)])
    assert kernels.overflow_status("MatMul", [a, a.T], mm) == kernels.STATUS_CUBE_OVERFLOW
    i = np.array([2**31 - 1], np.int32)
    one = np.array([1], np.int32)
    wrapped = kernels.KERNELS["Add"]([i, one], {}, [np.dtype(np.int32)])
    assert kernels.overflow_status("Add", [i, one], wrapped) == kernels.STATUS_INT_OVERFLOW
    inf_in = np.array([np.inf], f16)
    passed = kernels.KERNELS["Relu"]([inf_in], {}, [np.dtype(f16)])
    assert kernels.overflow_status("Relu", [inf_in], passed) == 0  # an inf that came in


def test_fault_rules_from_env_file(acl, tmp_path, monkeypatch, model_path):
    rules = tmp_path / "faults.json"
    rules.write_text(json.dumps({"faults": _overflow_rule(record="new")}))
    monkeypatch.setenv(sim_config.FAULTS_ENV, os.fspath(rules))
    dump_dir = run_models(
        acl, tmp_path, model_path, {"dump_debug": "on"}, names=("attention_tiny",)
    )
    assert any(n.startswith("Opdebug.") for n in dump_files(dump_dir))
