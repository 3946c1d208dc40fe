"""Operator dumps, exception dumps and Opdebug overflow records of simulated executions.

The executor (:mod:`aclmon.sim.model`) calls these with what an operator
consumed and produced; the file layouts are described in docs/sim.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from aclmon.sim import dumpfile, layouts
from aclmon.sim.acljson import EXCEPTION_SCENES
from aclmon.sim.devices import Stream, now_ns
from aclmon.sim.faults import KIND_OVERFLOW
from aclmon.sim.kernels import CUBE_OPS
from aclmon.sim.runtime import Runtime

if TYPE_CHECKING:
    from aclmon.sim.model import Model
    from aclmon.sim.model_description import OpSpec, TensorSpec


def exception_dump_dir(rt: Runtime, device_id: int) -> Path:
    """NPU_COLLECT_PATH > ASCEND_WORK_PATH > dump_path > cwd, then extra-info/data-dump/<dev>."""
    dump = rt.acl_json.dump
    base = (
        os.environ.get("NPU_COLLECT_PATH")
        or os.environ.get("ASCEND_WORK_PATH")
        or (dump.path if dump is not None else "")
        or os.getcwd()
    )
    return Path(base) / "extra-info" / "data-dump" / str(device_id)


def exception_dump_wanted(rt: Runtime) -> bool:
    """An exception dump scene is configured (acl.json, ASCEND_DUMP_SCENE), or
    NPU_COLLECT_PATH is set, which turns exception dumps on by itself."""
    dump = rt.acl_json.dump
    return (dump is not None and dump.scene in EXCEPTION_SCENES) or bool(
        os.environ.get("NPU_COLLECT_PATH")
    )


def write_exception_dump(
    rt: Runtime,
    model: Model,
    op: OpSpec,
    stream: Stream,
    task_id: int,
    args: list[np.ndarray],
    addresses: dict[str, int],
) -> Path | None:
    """The failing operator's inputs and (never written) outputs, as an exception
    dump; returns its path (None: it could not be written)."""
    in_specs = [model.specs[n] for n in op.inputs]
    tensors_in = [
        dumpfile.DumpTensor(
            s.acl_dtype,
            s.acl_format,
            s.device_shape,
            s.shape,
            layouts.to_device(a, s.acl_format, s.acl_dtype).tobytes(),
            addresses.get(s.name, 0),
            arg_index=i,
        )
        for i, (s, a) in enumerate(zip(in_specs, args, strict=True))
    ]
    tensors_out = [
        dumpfile.DumpTensor(
            s.acl_dtype,
            s.acl_format,
            s.device_shape,
            s.shape,
            bytes(s.nbytes),
            addresses.get(s.name, 0),
            arg_index=len(in_specs) + i,
        )
        for i, s in enumerate(op.outputs)
    ]
    ts_us = now_ns() // 1000
    # Exception dump names carry no stream id: {op_type}.{op_name}.{task_id}.{timestamp}.
    name = f"exception_info.{dumpfile.sanitize(op.name)}.{task_id}.{ts_us}"
    path = exception_dump_dir(rt, stream.device.device_id) / name
    # Like the runtime: a dump that cannot be written does not change the error.
    try:
        dumpfile.write_atomically(
            path, dumpfile.encode_dump(op.name, ts_us, tensors_in, tensors_out)
        )
    except OSError:
        return None
    return path


def _dump_dir(rt: Runtime, model: Model, device_id: int, step: int, in_model: bool) -> Path:
    dump = rt.acl_json.dump
    assert dump is not None
    base = Path(dump.path) / rt.session_time / str(device_id)
    if in_model:
        return base / model.name / str(model.model_id) / str(step)
    return base


def _dump_tensor(spec: TensorSpec, stored: np.ndarray, address: int) -> dumpfile.DumpTensor:
    return dumpfile.DumpTensor(
        spec.acl_dtype, spec.acl_format, spec.device_shape, spec.shape, stored.tobytes(), address
    )


def write_dumps(
    rt: Runtime,
    model: Model,
    op: OpSpec,
    stream: Stream,
    task_id: int,
    step: int,
    in_stored: list[np.ndarray],
    out_stored: list[np.ndarray],
    addresses: dict[str, int],
    status: int,
    wanted: bool,
) -> None:
    dump = rt.acl_json.dump
    assert dump is not None
    in_model = model.name in dump.model_layers or bool(status)
    directory = _dump_dir(rt, model, stream.device.device_id, step, in_model)
    ts_us = now_ns() // 1000
    name = dumpfile.dump_file_name(op.op_type, op.name, task_id, stream.stream_id, ts_us)
    # An overflow dumps the operator's inputs and outputs whatever dump_mode says.
    mode = dump.mode if wanted else "all"
    in_specs = [model.specs[n] for n in op.inputs]
    in_vals = [
        (_dump_tensor(s, a, addresses.get(s.name, 0)), a)
        for s, a in zip(in_specs, in_stored, strict=True)
    ]
    out_vals = [
        (_dump_tensor(s, a, addresses.get(s.name, 0)), a)
        for s, a in zip(op.outputs, out_stored, strict=True)
    ]
    if mode == "input":
        out_vals = []
    elif mode == "output":
        in_vals = []
    inputs = [t for t, _ in in_vals]
    outputs = [t for t, _ in out_vals]
    if dump.data == "stats" and wanted:
        dumpfile.write_atomically(
            directory / f"{name}.csv", dumpfile.stats_csv(in_vals, out_vals, dump.stats).encode()
        )
    else:
        dumpfile.write_atomically(
            directory / name, dumpfile.encode_dump(op.name, ts_us, inputs, outputs)
        )
    if status:
        rule_layout = "old"
        for state in op.faults:
            if state.rule.kind == KIND_OVERFLOW:
                rule_layout = state.rule.record
        kernel_base = 0x12C0_4000_0000 + stream.device.device_id * (1 << 44)
        info = dumpfile.OverflowInfo(
            model_id=model.model_id,
            stream_id=stream.stream_id,
            task_id=task_id,
            pc_start=kernel_base + op.index * 0x1000,
            para_base=addresses.get(op.outputs[0].name, 0),
            block_idx=0,
            core_id=op.index % rt.config.ai_core_count,
            status=status,
            cube=op.op_type in CUBE_OPS,
        )
        record = (
            dumpfile.new_overflow_record(info)
            if rule_layout == "new"
            else dumpfile.old_overflow_record(info)
        )
        debug_task = stream.take_task_id()
        debug_name = f"Opdebug.Node_OpDebug.{debug_task}.{stream.stream_id}.{ts_us}"
        dumpfile.write_atomically(
            directory / debug_name, dumpfile.encode_overflow_file(record, ts_us)
        )
