"""Simulated models: building one from its description, and executing it.

A model description (docs/sim.md, read by :mod:`aclmon.sim.model_description`)
stands in for an .om file: named inputs, weights (generated from the seed here),
and an ordered list of operators with their declared output tensors (dtype,
format, logical shape). Executing a model runs
every operator's numpy kernel on the calling thread, advances the stream's
device time by each operator's modelled duration, and on the way writes dump
files, Opdebug overflow records, profiling records and subscription records,
and fires injected faults.
"""

from __future__ import annotations

import itertools
import threading
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import device_faults, layouts, model_dumps, slog
from aclmon.sim.devices import Allocation, Device, Stream, now_ns
from aclmon.sim.errmsg import fail
from aclmon.sim.faults import (
    KIND_AICORE_EXCEPTION,
    KIND_OVERFLOW,
    KIND_PERTURB,
    FaultRule,
)
from aclmon.sim.kernels import KERNELS, KernelError, overflow_status
from aclmon.sim.model_description import ModelError, OpSpec, TensorSpec
from aclmon.sim.runtime import Runtime

TASK_RECORDS_MAX = 65536


@dataclass
class Model:
    model_id: int
    name: str
    device: Device
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    ops: tuple[OpSpec, ...]
    specs: dict[str, TensorSpec]
    weights: dict[str, tuple[np.ndarray, np.ndarray]]  # name -> (stored, logical)
    addresses: dict[str, int]  # weights and activations
    allocations: list[Allocation]
    steps: int = 0
    #: dynamic models: "batch" or "hw", the graph of every gear, the input dims with
    #: -1 for the dynamic ones, the gear set last and where its input is.
    dynamic: str = ""
    gears: dict[tuple[int, ...], Model] = field(default_factory=dict)
    input_dims: tuple[tuple[int, ...], ...] = ()
    current_gear: tuple[int, ...] | None = None
    mbatch_index: int = -1
    #: inputs with static AIPP -> the image dims get_input_dims reports (NHWC)
    aipp_dims: dict[int, list[int]] = field(default_factory=dict)
    #: dynamic models: every input's dims of each gear, one after the other
    gear_dims: dict[tuple[int, ...], tuple[int, ...]] = field(default_factory=dict)


def launch_jitter(task_id: int) -> float:
    """A launch's duration factor, 0.94–1.06, fixed by its task id (so runs repeat):
    real kernels vary a little from launch to launch, and min/max/mean show it."""
    return 0.94 + ((task_id * 2654435761) & 0xFFFF) / 0xFFFF * 0.12


def _init_weight(spec: TensorSpec, raw: dict[str, Any], model_name: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, zlib.crc32(f"{model_name}/{spec.name}".encode())])
    init = raw.get("init", "normal")
    if init == "ones":
        values = np.ones(spec.shape)
    elif init == "zeros":
        values = np.zeros(spec.shape)
    elif init == "constant":
        values = np.full(spec.shape, float(raw.get("value", 0.0)))
    elif init == "values":
        values = np.asarray(raw.get("values"), dtype=np.float64)
        if values.size != int(np.prod(spec.shape)):
            raise ModelError(f"weight {spec.name}: values must hold {int(np.prod(spec.shape))}")
        values = values.reshape(spec.shape)
    elif init == "normal":
        fan_in = int(np.prod(spec.shape[1:])) if len(spec.shape) > 1 else spec.shape[0]
        std = float(raw.get("std", 1.0 / np.sqrt(max(fan_in, 1))))
        values = rng.normal(0.0, std, spec.shape)
    else:
        raise ModelError(
            f"weight {spec.name}: init must be normal, ones, zeros, constant or values"
        )
    return values.astype(spec.dtype)


def build_model(rt: Runtime, parsed: dict[str, Any], device: Device) -> Model | int:
    """Allocate weights and activations on ``device`` and dry-run the graph."""
    name = parsed["name"]
    weights: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for spec in parsed["weights"]:
        logical = _init_weight(spec, parsed["weight_init"][spec.name], name, rt.config.seed)
        stored = layouts.to_device(logical, spec.acl_format, spec.acl_dtype)
        weights[spec.name] = (stored, layouts.from_device(stored, spec.acl_format, spec.shape))
    allocations: list[Allocation] = []
    addresses: dict[str, int] = {}
    resident = list(parsed["weights"]) + [s for op in parsed["ops"] for s in op.outputs]
    # A dynamic model's activations are sized for the biggest gear that uses them.
    sizes: dict[str, int] = {}
    for variant in parsed.get("gears", {}).values() or [parsed]:
        for op in variant["ops"]:
            for spec in op.outputs:
                sizes[spec.name] = max(sizes.get(spec.name, 0), spec.nbytes)
    for spec in resident:
        allocation = rt.allocate(device, sizes.get(spec.name, spec.nbytes))
        if allocation is None:
            for done in allocations:
                rt.release(done)
            return fail(C.ACL_ERROR_RT_MEMORY_ALLOCATION, f"model {name}: out of device memory")
        allocations.append(allocation)
        addresses[spec.name] = allocation.address
    for spec_name, (stored, _) in weights.items():
        rt.write_device(addresses[spec_name], stored)
    model_id = rt.next_model_id
    rt.next_model_id += 1
    built = _assemble(rt, parsed, model_id, device, weights, addresses, allocations)
    if isinstance(built, Model):
        built.aipp_dims = parsed.get("aipp_dims", {})
    if isinstance(built, Model) and "gears" in parsed:
        built.dynamic = parsed["dynamic"]
        built.input_dims = parsed["input_dims"]
        built.gear_dims = parsed["gear_dims"]
        built.mbatch_index = len(built.inputs) - 1
        for gear, variant in parsed["gears"].items():
            graph = _assemble(rt, variant, model_id, device, weights, addresses, allocations)
            if isinstance(graph, int):
                return graph
            built.gears[gear] = graph
    return built


def _assemble(
    rt: Runtime,
    parsed: dict[str, Any],
    model_id: int,
    device: Device,
    weights: dict[str, tuple[np.ndarray, np.ndarray]],
    addresses: dict[str, int],
    allocations: list[Allocation],
) -> Model | int:
    """The executable graph of a parsed description on memory already placed."""
    name = parsed["name"]
    ops = []
    for op in parsed["ops"]:
        states = tuple(s for s in rt.fault_states if s.rule.matches(name, op.name, op.op_type))
        ops.append(
            OpSpec(
                op.index,
                op.name,
                op.op_type,
                op.inputs,
                op.outputs,
                op.attrs,
                int(op.cost_ns * rt.config.cost_scale),
                op.unit,
                states,
            )
        )
    model = Model(
        model_id,
        name,
        device,
        parsed["inputs"],
        parsed["outputs"],
        tuple(ops),
        parsed["specs"],
        weights,
        addresses,
        allocations,
    )
    zeros = {s.name: np.zeros(s.shape, dtype=s.dtype) for s in model.inputs}
    try:
        _dry_run(model, zeros)
    except (KernelError, ValueError, TypeError, KeyError, IndexError) as exc:
        for done in allocations:
            rt.release(done)
        allocations.clear()
        return fail(C.ACL_ERROR_PARSE_FILE, f"model {name}: {exc}")
    return model


def _run_kernel(op: OpSpec, args: list[np.ndarray]) -> list[np.ndarray]:
    results = KERNELS[op.op_type](args, op.attrs, [s.dtype for s in op.outputs])
    if len(results) != len(op.outputs):
        raise KernelError(f"operator {op.name} produced {len(results)} outputs")
    for spec, value in zip(op.outputs, results, strict=False):
        if value.shape != spec.shape:
            raise KernelError(
                f"operator {op.name} produces shape {value.shape}, {spec.name} declares {spec.shape}"
            )
    return results


def _dry_run(model: Model, inputs: dict[str, np.ndarray]) -> None:
    values = {**inputs, **{k: v[1] for k, v in model.weights.items()}}
    for op in model.ops:
        for spec, value in zip(
            op.outputs, _run_kernel(op, [values[n] for n in op.inputs]), strict=False
        ):
            values[spec.name] = value


def release_model(rt: Runtime, model: Model) -> None:
    for allocation in model.allocations:
        rt.release(allocation)
    model.allocations.clear()


# ---------------------------------------------------------------- execution
@dataclass(frozen=True)
class TaskRecord:
    model: Model
    op: OpSpec
    addresses: dict[str, int]


def _scale_for_overflow(args: list[np.ndarray], scale: float) -> list[np.ndarray]:
    """Multiply float inputs by ``scale``, staying finite in their own dtype."""
    scaled = []
    for arg in args:
        if arg.dtype.kind == "f" or arg.dtype.kind == "V":
            limit = float(np.finfo(arg.dtype).max) if arg.dtype.kind == "f" else 3.0e38
            wide = np.clip(arg.astype(np.float64) * scale, -limit, limit)
            scaled.append(wide.astype(arg.dtype))
        else:
            scaled.append(arg)
    return scaled


def _perturb(
    results: list[np.ndarray], rule: FaultRule, seed: int, op_name: str
) -> list[np.ndarray]:
    """Float outputs times ``1 + error * noise``: the same noise in every run with this seed."""
    rng = np.random.default_rng([seed, zlib.crc32(f"perturb/{op_name}".encode())])
    out = []
    for value in results:
        if value.dtype.kind == "f" or value.dtype.kind == "V":
            noise = rng.standard_normal(value.shape)
            out.append((value.astype(np.float64) * (1.0 + rule.error * noise)).astype(value.dtype))
        else:
            out.append(value)
    return out


def execute(
    rt: Runtime,
    model: Model,
    stream: Stream,
    in_addresses: list[int],
    out_addresses: list[tuple[int, int]],
) -> int:
    """Run one model execution on ``stream``; the code is for argument errors only.

    Device-side failures (injected AI Core exceptions) are reported the way the
    hardware reports them: through the exception callback and the stream's next
    synchronize.
    """
    addresses = dict(model.addresses)
    values: dict[str, np.ndarray] = {k: v[1] for k, v in model.weights.items()}
    stored: dict[str, np.ndarray] = {k: v[0] for k, v in model.weights.items()}
    for spec, address in zip(model.inputs, in_addresses, strict=False):
        raw = rt.read_device(address, spec.nbytes)
        if raw is None:
            return fail(
                C.ACL_ERROR_INVALID_PARAM,
                f"model {model.name}: input {spec.name} buffer {address:#x} is not "
                f"{spec.nbytes} bytes of device memory",
            )
        device_array = raw.view(spec.dtype).reshape(spec.device_shape).copy()
        stored[spec.name] = device_array
        values[spec.name] = layouts.from_device(device_array, spec.acl_format, spec.shape)
        addresses[spec.name] = address
    for spec, (address, size) in zip(model.outputs, out_addresses, strict=False):
        if size < spec.nbytes or rt.find_allocation(address, spec.nbytes) is None:
            return fail(
                C.ACL_ERROR_INVALID_PARAM,
                f"model {model.name}: output {spec.name} needs {spec.nbytes} bytes of device memory",
            )
        addresses[spec.name] = address
    step = model.steps
    model.steps += 1
    device = stream.device
    device_id = device.device_id
    dump = rt.acl_json.dump
    dump_step = dump is not None and dump.step_selected(step)
    detect_overflow = (dump is not None and dump.debug) or stream.overflow_switch
    prof = rt.extras.get("prof")
    prof_hook = prof.op_hook(model, device_id) if prof is not None else None
    time_scale = rt.config.time_scale
    tasks = rt.tasks
    failed = False
    for op in model.ops:
        task_id = stream.take_task_id()
        tasks[(device_id, stream.stream_id, task_id)] = TaskRecord(model, op, addresses)
        if len(tasks) > TASK_RECORDS_MAX:
            _prune_tasks(rt)
        args = [values[n] for n in op.inputs]
        raise_code = 0
        overflow_rule = perturb_rule = None
        fault = None
        for state in op.faults:
            if state.should_fire(device_id):
                kind = state.rule.kind
                if kind == KIND_AICORE_EXCEPTION:
                    raise_code = state.rule.error_code or C.ACL_ERROR_RT_AICORE_EXCEPTION
                elif kind == KIND_OVERFLOW:
                    overflow_rule = state.rule
                elif kind == KIND_PERTURB:
                    perturb_rule = state.rule
                elif fault is None:
                    fault = device_faults.plan(rt, state.rule, model, op, stream, addresses, args)
        task_addresses = addresses
        if fault is not None:
            raise_code = fault.code
            args = fault.args
            task_addresses = fault.addresses
            tasks[(device_id, stream.stream_id, task_id)] = TaskRecord(model, op, task_addresses)
        if overflow_rule is not None:
            args = _scale_for_overflow(args, overflow_rule.scale)
        start = max(now_ns(), stream.busy_until)
        duration = int(op.cost_ns * launch_jitter(task_id))
        stream.busy_until = start + int(duration * time_scale)
        device.add_busy(start, duration, op.unit)
        if raise_code:
            dumped = None
            if model_dumps.exception_dump_wanted(rt):
                dumped = model_dumps.write_exception_dump(
                    rt, model, op, stream, task_id, args, task_addresses
                )
            kernel_base = 0x12C0_4000_0000 + device_id * (1 << 44)
            core_id = op.index % rt.config.ai_core_count
            pc_start = kernel_base + op.index * 0x1000
            para_base = addresses.get(op.outputs[0].name, 0)
            detail = ""
            if fault is not None:
                detail = device_faults.log_fault(
                    fault, model, op, stream, task_id, core_id, pc_start, para_base
                )
            rt.raise_exception(
                stream,
                task_id,
                raise_code,
                op_name=op.name,
                op_type=op.op_type,
                core_id=core_id,
                pc_start=pc_start,
                para_base=para_base,
                detail=detail,
            )
            if dumped is not None:
                device_faults.log_dump_written(dumped)
            failed = True
            break
        results = _run_kernel(op, args)
        if perturb_rule is not None:
            results = _perturb(results, perturb_rule, rt.config.seed, op.name)
        out_stored = [
            layouts.to_device(v, s.acl_format, s.acl_dtype)
            for s, v in zip(op.outputs, results, strict=False)
        ]
        for spec, value, dev in zip(op.outputs, results, out_stored, strict=False):
            values[spec.name] = value
            stored[spec.name] = dev
        if prof_hook is not None:
            prof_hook(op, stream.stream_id, task_id, start, duration)
        status = overflow_status(op.op_type, args, results) if detect_overflow else 0
        if status:
            slog.WRITER.write(
                slog.LEVEL_WARNING,
                "RUNTIME",
                "stream.cc:1624",
                "ProcessOverflow",
                f"Aicore overflow happened, device_id={device_id}, stream_id={stream.stream_id}, "
                f"task_id={task_id}, op_name={op.name}, op_type={op.op_type}, "
                f"status={status:#x}",
            )
        if status and stream.overflow_switch and stream.pending_error is None:
            done = _set_event()
            stream.pending_error = (C.ACL_ERROR_RT_AICORE_OVER_FLOW, done, "")
        wants_dump = dump is not None and dump_step and dump.wants_op(model.name, op.name)
        if dump is not None and (wants_dump or (status and dump.debug)):
            in_specs = [model.specs[n] for n in op.inputs]
            if overflow_rule is None:
                in_stored = [stored[n] for n in op.inputs]
            else:  # the operator consumed the scaled inputs: dump those
                in_stored = [
                    layouts.to_device(a, s.acl_format, s.acl_dtype)
                    for a, s in zip(args, in_specs, strict=True)
                ]
            model_dumps.write_dumps(
                rt,
                model,
                op,
                stream,
                task_id,
                step,
                in_stored,
                out_stored,
                addresses,
                status if dump.debug else 0,
                wants_dump,
            )
    if not failed:
        for spec, (address, _) in zip(model.outputs, out_addresses, strict=False):
            rt.write_device(address, stored[spec.name])
    if prof is not None:
        prof.model_done(model, device_id)
    return C.ACL_SUCCESS


def _prune_tasks(rt: Runtime) -> None:
    """Forget the older half of the task records (other threads keep inserting)."""
    with rt.lock:
        try:
            oldest = list(itertools.islice(rt.tasks, TASK_RECORDS_MAX // 2))
        except RuntimeError:  # resized by another thread mid-iteration: next time
            return
        for key in oldest:
            rt.tasks.pop(key, None)


def _set_event() -> threading.Event:
    """An already-set event: an overflow error has no callback to wait for."""
    event = threading.Event()
    event.set()
    return event
