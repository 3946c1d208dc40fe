"""Why an AI Core / vector core / AI CPU exception happened: the evidence joined, one verdict.

:func:`triage` takes what is known about one failed task, from whichever
sources there are:

* the exception callback's facts (:class:`ExceptionFacts`: device, stream,
  task, error code, the operator and each input/output's address and size);
* the device error lines of the plog (:class:`~aclmon.dump.device_errors.DeviceError`:
  the error bits and registers, the kernel, the extend info);
* the exception dump the runtime wrote (the operator's inputs at fault time,
  :class:`~aclmon.dump.reader.DumpFile`);
* the job's allocation table (:class:`~aclmon.dump.allocations.AllocationTable`);

and gives a :class:`Triage`: the bits in words, the address findings
(offending first), the inputs holding NaN/±Inf, and a one-line ``verdict``
with its ``cause`` key. How the verdict is reached is written in
docs/triage.md; the order of the rules is :func:`_verdict`'s.

Nothing here raises on bad evidence: a dump that cannot be read is named in
``notes`` and the rest still counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aclmon.acl_constants import error_name, error_text
from aclmon.dump.allocations import (
    FREED,
    OUT_OF_RANGE,
    AddressFinding,
    AllocationTable,
    clock_time,
)
from aclmon.dump.device_errors import DeviceError
from aclmon.dump.error_bits import (
    ARITHMETIC,
    CONFLICT,
    GM_ACCESS,
    HARDWARE,
    ILLEGAL,
    INF_NAN,
    INSTRUCTION_FETCH,
    LOCAL_BOUNDS,
    MISALIGNED,
    TIMEOUT,
    Bit,
    primary_category,
)
from aclmon.errors import AclmonError

#: runtime codes of the AI CPU, of the copy engine and of timeouts (ACL_ERROR_RT_*)
AICPU_CODES = (507017, 507018, 507900)
COPY_CODES = (507013,)
#: the roles of a failed copy's two ends among the address findings
COPY_ENDS = ("source", "destination")
TIMEOUT_CODES = (507014, 507017, 507034, 507046, 507048)
#: task scheduler return codes of a timeout (0x25 AI Core, 0x30 vector core)
TIMEOUT_RET_CODES = (0x25, 0x30)
#: dumped input elements counted for NaN/Inf at most (a bigger tensor is counted in part)
MAX_COUNTED_ELEMENTS = 1 << 26

# cause keys (docs/triage.md lists them with their words)
SUSPECT_HARDWARE = "suspect_hardware"
USE_AFTER_FREE = "use_after_free"
OUT_OF_BOUNDS = "out_of_bounds"
NAN_INF_INPUT = "nan_inf_input"
CODE_OVERWRITTEN = "code_overwritten"
INVALID_ADDRESS = "invalid_address"
INSTRUCTION_FETCH_FAILED = "instruction_fetch"
KERNEL_BOUNDS = "kernel_bounds"
NAN_INF_OPERAND = "nan_inf_operand"
ARITHMETIC_ERROR = "arithmetic"
MISALIGNED_ADDRESS = "misaligned"
CONFLICT_IN_KERNEL = "conflict"
ILLEGAL_INSTRUCTION = "illegal_instruction"
AICPU_FAILURE = "aicpu"
COPY_FAULT = "copy_fault"
KERNEL_TIMEOUT = "timeout"
TRAP = "trap"
UNKNOWN_CAUSE = "unknown"
#: each cause in a few words (a viewer's label for it)
CAUSE_LABELS = {
    SUSPECT_HARDWARE: "suspect hardware",
    USE_AFTER_FREE: "use after free",
    OUT_OF_BOUNDS: "out of bounds",
    NAN_INF_INPUT: "NaN/Inf input",
    CODE_OVERWRITTEN: "code overwritten",
    INVALID_ADDRESS: "invalid address",
    INSTRUCTION_FETCH_FAILED: "instruction fetch",
    KERNEL_BOUNDS: "kernel buffer overrun",
    NAN_INF_OPERAND: "NaN/Inf operand",
    ARITHMETIC_ERROR: "arithmetic error",
    MISALIGNED_ADDRESS: "misaligned address",
    CONFLICT_IN_KERNEL: "read/write conflict",
    ILLEGAL_INSTRUCTION: "illegal instruction",
    AICPU_FAILURE: "AI CPU error",
    COPY_FAULT: "copy fault",
    KERNEL_TIMEOUT: "timeout",
    TRAP: "trap",
    UNKNOWN_CAUSE: "unknown",
}


@dataclass(frozen=True)
class TensorFacts:
    """One input or output of the failing operator, as the exception info gives it."""

    role: str  # "input" or "output"
    index: int
    name: str
    address: int
    size: int


@dataclass(frozen=True)
class ExceptionFacts:
    """What the exception callback said about the failed task."""

    device_id: int
    stream_id: int
    task_id: int
    error_code: int
    op_name: str = ""
    op_type: str = ""
    tensors: tuple[TensorFacts, ...] = ()
    ts_ns: int = 0


@dataclass
class Triage:
    """The result; :meth:`to_dict` is its JSON form (``triage`` in ``--once --json``)."""

    error_code: int | None
    op_name: str
    op_type: str
    kernel: str
    bits: list[int]
    error_bits: list[str]
    error_str: str
    address_findings: list[AddressFinding]
    nan_inf_inputs: list[dict[str, Any]]
    verdict: str
    cause: str
    repro: str = ""
    dump_file: str = ""
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    device_error: DeviceError | None = None

    def to_dict(self) -> dict[str, Any]:
        error = self.device_error
        return {
            "verdict": self.verdict,
            "cause": self.cause,
            "error_code": self.error_code,
            "error_name": error_name(self.error_code) if self.error_code else None,
            "op_name": self.op_name,
            "op_type": self.op_type,
            "kernel": self.kernel,
            "bits": list(self.bits),
            "error_bits": list(self.error_bits),
            "error_str": self.error_str,
            "address_findings": [f.to_dict() for f in self.address_findings],
            "nan_inf_inputs": [dict(x) for x in self.nan_inf_inputs],
            "repro": self.repro,
            "dump_file": self.dump_file,
            "sources": list(self.sources),
            "notes": list(self.notes),
            "device": _device_summary(error) if error is not None else None,
        }


def _device_summary(error: DeviceError) -> dict[str, Any]:
    """The device lines' facts a reader needs beside the verdict (the registers of
    the first core, the scheduler's code, the host call that met the error)."""
    core = error.cores[0] if error.cores else None
    return {
        "serial": error.serial,
        "device_id": error.device_id,
        "stream_id": error.stream_id,
        "task_id": error.task_id,
        "core_type": core.core_type if core is not None else "",
        "core_ids": [c.core_id for c in error.cores if c.core_id is not None],
        "pc_start": _hex(core.registers.get("pc_start")) if core is not None else None,
        "current_pc": _hex(core.registers.get("current")) if core is not None else None,
        "ret_code": f"{error.ret_code:#x}" if error.ret_code is not None else None,
        "ret_text": error.ret_text,
        "engine": error.engine,
        "message_codes": list(error.message_codes),
        "suspect_hardware": error.suspect_hardware,
        "sync_call": error.sync_call,
        "runtime_result": error.runtime_result,
        "extend": core.extend.to_dict() if core is not None and core.extend is not None else None,
        "copy": error.copy.to_dict() if error.copy is not None else None,
        "logged_ns": error.logged_ns or None,
    }


def _hex(value: Any) -> str | None:
    return f"{value:#x}" if isinstance(value, int) else None


# ---------------------------------------------------------------- evidence
def copy_ends(error: DeviceError | None) -> list[TensorFacts]:
    """The two ends of a failed memory copy (roles ``source`` and ``destination``),
    from the copy engine's lines; none for any other error."""
    copy = error.copy if error is not None else None
    if copy is None or not copy.length:
        return []
    return [
        TensorFacts("source", 0, "", copy.source, copy.length),
        TensorFacts("destination", 0, "", copy.destination, copy.length),
    ]


def address_findings(
    facts: ExceptionFacts | None,
    dump: Any,
    table: AllocationTable | None,
    error: DeviceError | None = None,
) -> list[AddressFinding]:
    """Each input/output's place in the job's memory (as it was at the exception),
    offending first. The tensors come from the exception info, else from the
    exception dump's header, else (a failed copy) from the copy engine's lines."""
    if table is None:
        return []
    tensors: list[TensorFacts] = list(facts.tensors) if facts is not None else []
    if not tensors and dump is not None:
        for tensor in list(dump.inputs) + list(dump.outputs):
            header = tensor.header
            if header.address:
                tensors.append(
                    TensorFacts(tensor.role, tensor.index, "", header.address, header.size)
                )
    if not tensors:
        tensors = copy_ends(error)
    as_of = facts.ts_ns if facts is not None else 0
    found = [
        table.classify(t.address, t.size, t.role, t.index, t.name, as_of_ns=as_of) for t in tensors
    ]
    # Offending first (freed before out of range: a freed block explains more), then
    # inputs before outputs, in order.
    rank = {FREED: 0, OUT_OF_RANGE: 1}
    return sorted(found, key=lambda f: (rank.get(f.status, 2), f.role != "input", f.index))


def nan_inf_inputs(dump: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The dumped inputs holding NaN or ±Inf, with their counts; and notes on the
    inputs that could not be read."""
    from aclmon.dump.stats import tensor_stats

    found: list[dict[str, Any]] = []
    notes: list[str] = []
    if dump is None:
        return found, notes
    for tensor in dump.inputs:
        if not tensor.supported:
            continue
        try:
            array = tensor.array.reshape(-1)
        except (AclmonError, ValueError) as exc:
            notes.append(f"input[{tensor.index}] of the exception dump cannot be read: {exc}")
            continue
        counted = array[:MAX_COUNTED_ELEMENTS]
        stats = tensor_stats(counted, bins=0, first=0)
        nan, pos_inf, neg_inf = stats["nan"], stats["pos_inf"], stats["neg_inf"]
        if nan or pos_inf or neg_inf:
            found.append(
                {
                    "index": tensor.index,
                    "dtype": tensor.dtype_name,
                    "shape": list(tensor.shape),
                    "elements": int(array.shape[0]),
                    "counted": int(counted.shape[0]),
                    "nan": nan,
                    "pos_inf": pos_inf,
                    "neg_inf": neg_inf,
                }
            )
    return found, notes


def bits_in_words(error: DeviceError | None) -> tuple[list[Bit], list[str]]:
    """The set bits and the register fields, each in words."""
    if error is None:
        return [], []
    bits = error.bits()
    lines = []
    for bit in bits:
        name = f" {bit.name}" if bit.name else ""
        lines.append(f"bit {bit.number}{name}: {bit.meaning}")
    lines.extend(error.register_fields())
    return bits, lines


# ---------------------------------------------------------------- the verdict
def _tensor_words(finding: AddressFinding) -> str:
    if finding.role in COPY_ENDS:
        return f"the copy's {finding.role}"
    name = f" ({finding.name})" if finding.name else ""
    return f"{finding.role}[{finding.index}]{name}"


def _verdict(
    facts: ExceptionFacts | None,
    error: DeviceError | None,
    bits: list[Bit],
    findings: list[AddressFinding] | None,
    nan_inf: list[dict[str, Any]],
) -> tuple[str, str]:
    """(cause, verdict): the first rule that matches, in the order docs/triage.md gives."""
    op = (facts.op_type or facts.op_name) if facts is not None else ""
    if not op and error is not None:
        op = error.node_type or error.node_name or error.kernel
    copy = error.copy if error is not None else None
    code = facts.error_code if facts is not None else (error.runtime_result if error else None)
    if not op and (copy is not None or code in COPY_CODES):
        op = "a memory copy"
    op = op or "the operator"
    category = primary_category(bits)
    first_bit = next((b for b in bits if b.category == category), None)
    meaning = first_bit.meaning if first_bit is not None else ""
    if (error is not None and error.suspect_hardware) or category == HARDWARE:
        why = meaning or "the runtime matched a hardware (RAS) fault to this error (EZ2001)"
        return SUSPECT_HARDWARE, (
            f"suspect hardware: {why}; check the device's RAS alarms and health before"
            " debugging {op}".replace("{op}", op)
        )
    have_table = findings is not None
    findings = findings or []
    freed = next((f for f in findings if f.status == FREED), None)
    if freed is not None:
        when = f"freed at {clock_time(freed.freed_ns)} by {freed.freed_by}"
        if freed.role in COPY_ENDS:
            return USE_AFTER_FREE, (
                f"use after free: {_tensor_words(freed)} at {freed.address:#x} is in memory"
                f" {when} before the copy ran"
            )
        return USE_AFTER_FREE, (
            f"use after free: {op} read {_tensor_words(freed)} at {freed.address:#x}, in"
            f" memory {when} before the kernel ran"
        )
    outside = next((f for f in findings if f.status == OUT_OF_RANGE), None)
    if outside is not None:
        block = outside.allocation
        where = f" ({block.api} at {block.site})" if block is not None and block.site else ""
        size = f"{block.size}-byte allocation" if block is not None else "allocation"
        what = "copy:" if outside.role in COPY_ENDS else f"access: {op}"
        return OUT_OF_BOUNDS, (
            f"out-of-bounds {what} {_tensor_words(outside)} runs"
            f" {outside.overrun} bytes past the end of its {size}{where}"
        )
    if nan_inf:
        worst = nan_inf[0]
        counts = ", ".join(
            f"{worst[key]} {label}"
            for key, label in (("nan", "NaN"), ("pos_inf", "+Inf"), ("neg_inf", "-Inf"))
            if worst[key]
        )
        return NAN_INF_INPUT, (
            f"invalid input data: {op} input[{worst['index']}] holds {counts}; the kernel"
            " failed on it (look at the operator that produced it)"
        )
    core = error.cores[0] if error is not None and error.cores else None
    if core is not None and core.registers.get("current") == 0 and "pc_start" in core.registers:
        return CODE_OVERWRITTEN, f"{op}: the kernel's current pc is 0 (its code was overwritten)"
    rules = {
        GM_ACCESS: (
            INVALID_ADDRESS,
            "invalid global memory access ({m}); "
            + (
                "no input or output lies outside the job's allocations: check the kernel's"
                " offsets and tiling"
                if have_table
                else "no allocation table here to tell which address (run the job under"
                " the agent for address findings)"
            ),
        ),
        INSTRUCTION_FETCH: (
            INSTRUCTION_FETCH_FAILED,
            "the kernel's code could not be fetched ({m})",
        ),
        LOCAL_BOUNDS: (
            KERNEL_BOUNDS,
            "on-chip buffer overrun inside the kernel ({m}): an operator bug (a tiling or a"
            " shape it does not support)",
        ),
        INF_NAN: (NAN_INF_OPERAND, "the kernel met Inf/NaN operands ({m})"),
        ARITHMETIC: (ARITHMETIC_ERROR, "arithmetic error in the kernel ({m})"),
        MISALIGNED: (MISALIGNED_ADDRESS, "misaligned address in the kernel ({m}): an operator bug"),
        CONFLICT: (
            CONFLICT_IN_KERNEL,
            "read/write conflict in the kernel ({m}): a pipeline synchronisation bug in the"
            " operator",
        ),
        ILLEGAL: (ILLEGAL_INSTRUCTION, "invalid instruction or parameter in the kernel ({m})"),
        TIMEOUT: (KERNEL_TIMEOUT, "the kernel timed out ({m})"),
    }
    if category in rules:
        cause, words = rules[category]
        return cause, f"{op}: " + words.replace("{m}", meaning)
    if (error is not None and error.is_aicpu) or code in AICPU_CODES:
        message = error.aicpu_message if error is not None and error.aicpu_message else ""
        return AICPU_FAILURE, f"AI CPU operator {op} failed" + (f": {message}" if message else "")
    if copy is not None or code in COPY_CODES:
        what = (
            f"{copy.length} bytes from {copy.source:#x} to {copy.destination:#x}"
            if copy is not None and copy.length
            else "a copy"
        )
        said = f" ({copy.reason})" if copy is not None and copy.reason else ""
        return COPY_FAULT, (
            f"copy engine (SDMA) fault: {what} failed{said}; a memcpy probably ran past"
            " the end of its device allocation, or into memory no allocation holds"
        )
    ret = error.ret_code if error is not None else None
    if code in TIMEOUT_CODES or ret in TIMEOUT_RET_CODES:
        return KERNEL_TIMEOUT, f"{op}: the kernel timed out (no error bit set)"
    if error is not None and error.cores:
        return (
            TRAP,
            f"{op}: the kernel trapped with no error bit set (a trap instruction or an assert)",
        )
    words = error_text(code) if code else "the exception"
    if error is None:
        return UNKNOWN_CAUSE, f"{op}: {words}; no device error lines were found to tell why"
    return UNKNOWN_CAUSE, f"{op}: {words}; the device lines name no known cause"


def triage(
    facts: ExceptionFacts | None,
    error: DeviceError | None = None,
    dump: Any = None,
    table: AllocationTable | None = None,
    *,
    dump_path: str = "",
    notes: list[str] | None = None,
    findings: list[AddressFinding] | None = None,
    facts_source: str = "exception callback",
) -> Triage:
    """Join the evidence of one failed task (see the module docstring). ``findings``:
    the address findings taken already (at the exception, by the agent), instead
    of asking ``table`` now. ``facts_source``: where ``facts`` came from ("" when
    read from the device lines themselves)."""
    sources = []
    if facts is not None and facts_source:
        sources.append(facts_source)
    if error is not None:
        sources.append("device error lines")
    if dump is not None:
        sources.append("exception dump")
    if table is not None or findings is not None:
        sources.append("allocation table")
    all_notes = list(notes or [])
    bits, words = bits_in_words(error)
    if findings is None and table is not None:
        findings = address_findings(facts, dump, table, error)
    nan_inf, read_notes = nan_inf_inputs(dump)
    all_notes.extend(read_notes)
    cause, verdict = _verdict(facts, error, bits, findings, nan_inf)
    kernel = ""
    if error is not None:
        kernel = error.kernel or error.kernel_info_ext
    op_name = facts.op_name if facts is not None and facts.op_name else ""
    op_type = facts.op_type if facts is not None and facts.op_type else ""
    if error is not None:
        op_name = op_name or error.node_name
        op_type = op_type or error.node_type
    if dump is not None:
        op_name = op_name or str(getattr(dump, "op_name", "") or "")
    code = facts.error_code if facts is not None else None
    if code is None and error is not None:
        code = error.runtime_result
    return Triage(
        error_code=code,
        op_name=op_name,
        op_type=op_type,
        kernel=kernel,
        bits=[b.number for b in bits],
        error_bits=words,
        error_str=error.error_str if error is not None else "",
        address_findings=findings or [],
        nan_inf_inputs=nan_inf,
        verdict=verdict,
        cause=cause,
        dump_file=dump_path,
        sources=sources,
        notes=all_notes,
        device_error=error,
    )
