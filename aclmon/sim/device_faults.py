"""What a device-side fault kind does to the task it hits, and the lines CANN logs for it.

The kinds (docs/sim.md), each hitting one operator's task the way the bug it
stands for would:

* ``aicore_oob``: the kernel reads past the end of one input's allocation: the
  input's address (in the exception info and the exception dump) is moved so
  that its read runs ``overrun`` bytes beyond the block the job allocated (at
  most the tensor's size less one: the read starts inside the block). The
  device reports an invalid GM access (error bit 23, the MTE's read).
* ``use_after_free``: an input was freed before the asynchronous launch ran: the
  kernel reads through a stale pointer, the device buffer the job freed most
  recently on that device (``acl.rt.free``). Bit 23 again. The rule fires only
  once the job has freed a device buffer.
* ``nan_input``: one input holds NaN (every 7th element): the cube reads NaN from
  L0A/L0B (bit 9) or a vector instruction meets it (bit 54); the exception dump
  holds the NaN values.
* ``vector_error``: a vector-core error given by the extend line's ``errcode``
  (default bit 76, an invalid vector instruction parameter), 507035.
* ``aicpu_error``: an AI CPU task fails (``errcode``/``msg``), 507018, with the AI
  CPU's own lines and no core registers.

Each writes the device error lines to the plog in the layout of 2024–25 CANN
builds (the core line, the extend line, the task scheduler's return code, the
failing kernel, GE's ``[AIC_INFO]`` node line; the AI CPU's task and error
lines), with C's ``%#x`` (zero prints as ``0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import slog
from aclmon.sim.devices import UNIT_CUBE, Stream
from aclmon.sim.faults import (
    KIND_AICORE_OOB,
    KIND_AICPU_ERROR,
    KIND_NAN_INPUT,
    KIND_USE_AFTER_FREE,
    KIND_VECTOR_ERROR,
    FaultRule,
)
from aclmon.sim.runtime import Runtime

if TYPE_CHECKING:
    from aclmon.sim.model import Model
    from aclmon.sim.model_description import OpSpec

#: the aic error mask the 910B devices print
AIC_ERROR_MASK = 0x6500020BD00028C
#: the task scheduler's return code and words of each engine's exception
RET_AICORE = (0x26, "aicore exception")
RET_VECTOR = (0x31, "vector core exception")
RET_AICPU = (0x2A, "aicpu exception")
#: the runtime's sentence for the bits these kinds set
ERROR_STR = {
    23: "The DDR address of the MTE instruction is out of range.",
    9: "The data of L0a and L0b read back is the INF or NAN data.",
    54: "VEC instruction error: the data is inf or nan.",
    76: "The VEC instruction parameter is invalid.",
}
#: every n-th element of a nan_input input becomes NaN
NAN_EVERY = 7


@dataclass
class TaskFault:
    """One fault on one task: what the kernel consumed and what the device says."""

    kind: str
    code: int
    core_type: str  # "aicore", "aivec" or "aicpu"
    words: tuple[int, int, int] = (0, 0, 0)
    error_str: str = ""
    mte_type: int = 0  # MTE_ERR_INFO's type field (the SOC table)
    addresses: dict[str, int] = field(default_factory=dict)
    args: list[np.ndarray] = field(default_factory=list)
    aicpu_errcode: int = 0
    aicpu_message: str = ""


def _c_hex(value: int) -> str:
    """C's ``%#x``: zero prints as ``0``."""
    return f"{value:#x}" if value else "0"


def _target_input(rule: FaultRule, model: Model, op: OpSpec) -> int:
    """The input a rule aims at: ``input`` if given, else the first one the job
    handed the model (a model input), else the first."""
    if rule.input is not None:
        return min(rule.input, len(op.inputs) - 1)
    model_inputs = {spec.name for spec in model.inputs}
    for index, name in enumerate(op.inputs):
        if name in model_inputs:
            return index
    return 0


def plan(
    rt: Runtime,
    rule: FaultRule,
    model: Model,
    op: OpSpec,
    stream: Stream,
    addresses: dict[str, int],
    args: list[np.ndarray],
) -> TaskFault | None:
    """What the fault of ``rule`` does to ``op``'s task; None when it cannot happen
    here (a use after free with no freed buffer to read)."""
    cube = op.unit == UNIT_CUBE
    engine = ("aicore", C.ACL_ERROR_RT_AICORE_EXCEPTION) if cube else (
        "aivec", C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION)  # fmt: skip
    kind = rule.kind
    if kind == KIND_AICPU_ERROR:
        return TaskFault(
            kind, rule.error_code or C.ACL_ERROR_RT_AICPU_EXCEPTION, "aicpu",
            addresses=addresses, args=args, aicpu_errcode=rule.errcode[0] if rule.errcode else 1,
            aicpu_message=rule.message or "execute kernel param invalid",
        )  # fmt: skip
    if kind == KIND_VECTOR_ERROR:
        words = _words(rule.errcode) if rule.errcode else (0, 1 << 12, 0)
        return TaskFault(
            kind, rule.error_code or C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, "aivec", words,
            rule.message or ERROR_STR[76], addresses=addresses, args=args,
        )  # fmt: skip
    index = _target_input(rule, model, op)
    name = op.inputs[index]
    code = rule.error_code or engine[1]
    if kind == KIND_NAN_INPUT:
        poisoned = list(args)
        values = np.array(poisoned[index], copy=True)
        if values.dtype.kind in "fV":
            flat = values.reshape(-1)
            flat[::NAN_EVERY] = np.nan
        poisoned[index] = values
        bit = 9 if cube else 54
        return TaskFault(kind, code, engine[0], (1 << bit, 0, 0), ERROR_STR[bit],
                         addresses=addresses, args=poisoned)  # fmt: skip
    spec = model.specs[name]
    moved = dict(addresses)
    if kind == KIND_AICORE_OOB:
        found = rt.locate(addresses.get(name, 0))
        if found is None:
            return None
        block = found[0]
        # The kernel's read of nbytes ends `overrun` bytes past the block's end; it
        # starts inside the block (at its last byte at the latest), as a read that
        # runs off the end of a buffer does.
        end = block.address + block.size
        moved[name] = min(end + rule.overrun - spec.nbytes, end - 1)
        return TaskFault(kind, code, engine[0], (1 << 23, 0, 0), ERROR_STR[23], 0b001, moved, args)
    if kind == KIND_USE_AFTER_FREE:
        stale = rt.last_freed(stream.device.device_id)
        if stale is None:
            return None
        moved[name] = stale.address
        return TaskFault(kind, code, engine[0], (1 << 23, 0, 0), ERROR_STR[23], 0b010, moved, args)
    return None


def _words(errcode: tuple[int, ...]) -> tuple[int, int, int]:
    padded = (*errcode, 0, 0, 0)
    return (padded[0], padded[1], padded[2])


def log_fault(
    fault: TaskFault,
    model: Model,
    op: OpSpec,
    stream: Stream,
    task_id: int,
    core_id: int,
    pc_start: int,
    para_base: int,
) -> str:
    """Write the device lines of ``fault`` to the plog; returns the device's text
    (what ``get_recent_err_msg`` repeats)."""
    writer = slog.WRITER
    device_id, stream_id = stream.device.device_id, stream.stream_id
    if fault.core_type == "aicpu":
        writer.write(
            slog.LEVEL_ERROR, "RUNTIME", "stars_engine.cc:1548", "ProcLogicCqReport",
            f"Task run failed, device_id={device_id}, stream_id={stream_id}, task_id={task_id},"
            " sqe_type=1(aicpu), errType=0x1(task exception), sqSwStatus=0x1",
        )  # fmt: skip
        detail = (
            f"The error from device(chipId:{device_id}, dieId:0), serial number is {task_id}, "
            f"an exception occurred during AICPU execution, stream_id:{stream_id}, "
            f"task_id:{task_id}, errcode:{fault.aicpu_errcode}, msg:{fault.aicpu_message}."
        )
        writer.write(slog.LEVEL_ERROR, "RUNTIME", "device_error_proc.cc:1644",
                     "ProcessStarsAicpuErrorInfo", detail)  # fmt: skip
        ret, _ = RET_AICPU
        writer.write(slog.LEVEL_ERROR, "RUNTIME", "davinci_task.cc:209",
                     "SetStarsResultForDavinciTask",
                     f"AICPU Kernel task happen error, retCode={ret:#x}.")  # fmt: skip
    else:
        vector = fault.core_type == "aivec"
        e0, e1, e2 = fault.words
        offset = (para_base >> 5) & 0x7FFF
        mte = (fault.mte_type << 24) | (offset << 8) if fault.words[0] & (1 << 23) else 0
        detail = (
            f"The error from device(chipId:{device_id}, dieId:0), serial number is {task_id}, "
            f"there is an {fault.core_type} error exception, core id is {core_id}, "
            f"error code = {_c_hex(e0)}, dump info: pc start: {_c_hex(pc_start)}, "
            f"current: {_c_hex(pc_start + 0x2C4)}, vec error info: 0, "
            f"mte error info: {_c_hex(mte)}, ifu error info: 0, ccu error info: 0, "
            f"cube error info: 0, biu error info: 0, "
            f"aic error mask: {_c_hex(AIC_ERROR_MASK)}, para base: {_c_hex(para_base)}."
        )
        writer.write(slog.LEVEL_ERROR, "RUNTIME", "device_error_proc.cc:1434",
                     "ProcessStarsCoreErrorInfo", detail)  # fmt: skip
        writer.write(
            slog.LEVEL_ERROR, "RUNTIME", "device_error_proc.cc:1446", "ProcessStarsCoreErrorInfo",
            f"The extend info: errcode:({_c_hex(e0)}, {_c_hex(e1)}, {_c_hex(e2)}) errorStr: "
            f"{fault.error_str} fixp_error0 info: 0, fixp_error1 info: 0, fsmId:0, tslot:0, "
            f"thread:0, ctxid:0, blk:0, sublk:0, subErrType:4.",
        )  # fmt: skip
        ret, reason = RET_VECTOR if vector else RET_AICORE
        writer.write(
            slog.LEVEL_ERROR, "RUNTIME", "davinci_kernel_task.cc:1539", "PreCheckTaskErr",
            f"Kernel task happen error, retCode={ret:#x}, [{reason}].",
        )  # fmt: skip
        writer.write(
            slog.LEVEL_ERROR, "RUNTIME", "stream.cc:1183", "GetError",
            f"Aicore kernel execute failed, device_id={device_id}, stream_id={stream_id}, "
            f"report_stream_id={stream_id}, task_id={task_id}, flip_num=0, "
            f"fault kernel_name={op.name}, fault kernel info ext={op.op_type}, "
            f"program id={op.index}, hash=0.",
        )  # fmt: skip
    writer.write(
        slog.LEVEL_ERROR, "GE", "error_tracking.cc:172", "ProcessException",
        f"[AIC_INFO] node_name:{op.name}, node_type:{op.op_type}, stream_id:{stream_id}, "
        f"task_id:{task_id}",
    )  # fmt: skip
    return detail


def log_dump_written(path: Any) -> None:
    """The line the exception dump writer logs once the failing operator is dumped."""
    slog.WRITER.write(
        slog.LEVEL_ERROR, "ADUMP", "exception_dumper.cpp:245", "DumpException",
        f"dump exception to file, file: {path}",
    )  # fmt: skip
