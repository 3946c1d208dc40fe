"""``aclmon triage DIR``: every AI Core / vector core / AI CPU error of a collected directory.

A directory as ``asys collect`` or a copied job directory leaves it: CANN logs
(``plog-*.log``, ``device-*.log``, anywhere below) and exception dumps
(``extra-info/data-dump/<device>/…``). :func:`triage_directory` parses every
log's device error lines (:mod:`aclmon.dump.device_errors`), finds each
error's exception dump (the ``dump exception to file`` line, else the operator
and task in the dump's name), and triages each error on its own
(:func:`aclmon.dump.triage.triage`): every error, not only the first. Offline
there is no allocation table, so no address findings.

:func:`write_reports` writes one msaicerr-like ``info.txt`` per error under
``<out>/info_<time>/aicerror_<n>_<time>/`` and, where the error's dump is
there, the single-operator re-run (:mod:`aclmon.dump.repro`) beside it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aclmon.dump.device_errors import DeviceError, parse_device_errors
from aclmon.dump.naming import parse_dump_name
from aclmon.dump.plog import find_log_files
from aclmon.dump.summary import KIND_EXCEPTION, classify
from aclmon.dump.triage import ExceptionFacts, Triage, triage
from aclmon.dump.walk import walk_files
from aclmon.errors import AclmonError

#: the task scheduler's return code -> the ACL code the host call returns
RET_CODE_TO_ACL = {0x25: 507014, 0x26: 507015, 0x2A: 507018, 0x30: 507034, 0x31: 507035}
#: a collected directory is searched this deep, this many entries at most
MAX_DEPTH = 12
MAX_ENTRIES = 200_000
#: bytes of one log file read at most
MAX_LOG_BYTES = 64 * 1024 * 1024


@dataclass
class Case:
    """One error of the directory, with what was found for it."""

    number: int
    error: DeviceError
    dump_path: str
    triage: Triage
    log_files: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, **self.triage.to_dict(), "log_files": self.log_files}


def exception_dumps(root: Path) -> list[Path]:
    found = []
    for entry in walk_files(root, MAX_DEPTH, MAX_ENTRIES, ordered=True):
        path = Path(entry.path)
        candidate = "data-dump" in path.parts or path.name.startswith("exception_info.")
        if candidate and classify(path) == KIND_EXCEPTION:
            found.append(path)
    return found


def match_dump(error: DeviceError, dumps: list[Path]) -> Path | None:
    """The exception dump of ``error``: the file its dump line names (by name, the
    directory may have moved), else the one named after its operator and task."""
    if error.dump_file:
        wanted = os.path.basename(error.dump_file)
        for path in dumps:
            if path.name == wanted:
                return path
    op = error.node_name or error.kernel
    for path in dumps:
        name = parse_dump_name(path.name)
        if name is None or error.task_id is None or name.task_id != error.task_id:
            continue
        device = path.parent.name
        if error.device_id is not None and device.isdigit() and int(device) != error.device_id:
            continue
        if not op or name.op_name in (op, op.replace("/", "_")):
            return path
    return None


def exception_facts(error: DeviceError) -> ExceptionFacts:
    code = error.runtime_result
    if code is None and error.ret_code is not None:
        code = RET_CODE_TO_ACL.get(error.ret_code)
    if code is None and error.is_aicpu:
        code = 507018
    return ExceptionFacts(
        device_id=error.device_id if error.device_id is not None else -1,
        stream_id=error.stream_id if error.stream_id is not None else -1,
        task_id=error.task_id if error.task_id is not None else -1,
        error_code=code or 0,
        op_name=error.node_name,
        op_type=error.node_type,
        ts_ns=error.logged_ns,
    )


def triage_directory(directory: str | os.PathLike[str]) -> list[Case]:
    """Every error the directory's logs tell of, each triaged. Raises
    :class:`AclmonError` when ``directory`` is not a directory."""
    root = Path(directory)
    if not root.is_dir():
        raise AclmonError(f"{root}: not a directory")

    dumps = exception_dumps(root)
    cases: list[Case] = []
    for log_file in find_log_files(root):
        try:
            with open(log_file, "rb") as handle:
                text = handle.read(MAX_LOG_BYTES).decode("utf-8", "replace")
        except OSError as exc:
            raise AclmonError(f"{log_file}: cannot read it: {exc}") from exc
        # The raw lines: each plog header's time dates the error.
        for error in parse_device_errors(text):
            if not (error.cores or error.task_id is not None or error.aicpu_errcode is not None):
                continue  # a host line with no device error of its own
            if any(same_error(error, case.error) for case in cases):
                continue  # the same error in the device log and the host log
            result = triage_from_lines(
                error, match_dump(error, dumps),
                "offline: no allocation table, so no address findings",
                missing="no exception dump of this error in the directory",
            )  # fmt: skip
            cases.append(Case(len(cases) + 1, error, result.dump_file, result, [str(log_file)]))
    return cases


def triage_from_lines(
    error: DeviceError, dump_path: Path | None, note: str, *, missing: str = ""
) -> Triage:
    """One failed task triaged from its device lines and its exception dump (where
    found), with no allocation table; ``note`` says why there is none, ``missing``
    what to say when there is no dump."""
    from aclmon.dump.reader import read_dump

    notes = []
    dump = None
    if dump_path is not None:
        try:
            dump = read_dump(dump_path)
        except AclmonError as exc:
            notes.append(f"the exception dump cannot be read: {exc}")
    elif missing:
        notes.append(missing)
    notes.append(note)
    return triage(
        exception_facts(error), error, dump, None,
        dump_path=str(dump_path) if dump_path else "", notes=notes, facts_source="",
    )  # fmt: skip


def same_error(a: DeviceError, b: DeviceError) -> bool:
    """The same failed task told twice (by the device log and by the host log)."""
    if a.serial is not None and a.serial == b.serial and a.device_id == b.device_id:
        return True
    return (
        a.task_id is not None
        and (a.task_id, a.stream_id, a.device_id) == (b.task_id, b.stream_id, b.device_id)
        and a.kernel == b.kernel
    )


# ---------------------------------------------------------------- info.txt
def info_text(case: Case) -> str:
    """msaicerr's ``info.txt`` sections for one error, in its order."""
    t = case.triage
    error = case.error
    core = error.cores[0] if error.cores else None
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(error.logged_ns / 1e9)) if (
        error.logged_ns) else "-"  # fmt: skip
    lines = [
        "***********************0. Root cause conclusion***********************",
        t.verdict,
        f"(cause: {t.cause})",
        "",
        "***********************1. Basic information***********************",
        f"error time   : {when}",
        f"device id    : {_dash(error.device_id)}",
        f"core id      : {_dash(core.core_id if core is not None else None)}",
        f"task id      : {_dash(error.task_id)}",
        f"stream id    : {_dash(error.stream_id)}",
        f"node name    : {error.node_name or '-'}",
        f"node type    : {error.node_type or '-'}",
        f"kernel name  : {t.kernel or '-'}",
        f"error code   : {_dash(t.error_code)}",
        "",
        "***********************2. AICERROR code***********************",
    ]
    if core is not None:
        lines.append(f"code: {', '.join(f'{w:#x}' for w in core.words()) or '0'}")
    lines.extend(t.error_bits or ["no error bit set (a timeout or a trap)"])
    if t.error_str:
        lines.append(f"errorStr: {t.error_str}")
    lines += ["", "***********************3. Instructions***********************"]
    if core is not None:
        for key in ("pc_start", "current", "para_base"):
            value = core.registers.get(key)
            if isinstance(value, int):
                lines.append(f"{key.replace('_', ' ')}: {value:#x}")
    lines += ["", "***********************4. Input and output of node***********************"]
    lines.extend(_tensor_lines(t))
    lines += ["", "***********************5. Dump info***********************"]
    if t.dump_file:
        lines.append(f"exception dump: {t.dump_file}")
        if t.nan_inf_inputs:
            for item in t.nan_inf_inputs:
                lines.append(
                    f"input[{item['index']}] {item['dtype']} {item['shape']}: NaN {item['nan']},"
                    f" +Inf {item['pos_inf']}, -Inf {item['neg_inf']}"
                )
        else:
            lines.append("no input holds NaN or Inf")
    else:
        lines.append("no exception dump")
    lines += ["", "***********************6. Single Op Test***********************"]
    lines.append(f"run: python {t.repro}" if t.repro else "no re-run (no exception dump)")
    lines += ["", "***********************7. Notes***********************", *t.notes, ""]
    return "\n".join(lines)


def _dash(value: Any) -> str:
    return "-" if value is None or value == -1 else str(value)


def _tensor_lines(t: Triage) -> list[str]:
    if not t.dump_file:
        return ["(no exception dump: inputs and outputs not known)"]
    from aclmon.dump.reader import read_dump

    try:
        dump = read_dump(t.dump_file, header_only=True)
    except AclmonError as exc:
        return [f"(cannot read {t.dump_file}: {exc})"]
    lines = []
    for tensor in list(dump.inputs) + list(dump.outputs):
        address = tensor.header.address
        lines.append(
            f"{tensor.role}[{tensor.index}] addr: {address:#x} end_addr: {address + tensor.size:#x}"
            f" size: {tensor.size} {tensor.dtype_name} {tensor.format_name} {list(tensor.shape)}"
        )
    return lines or ["(the dump holds no tensors)"]


def write_reports(cases: list[Case], out: str | os.PathLike[str]) -> Path:
    """``info.txt`` (and the re-run, where there is a dump) of every case under
    ``out/info_<time>/``; returns that directory."""
    from aclmon.dump.reader import read_dump
    from aclmon.dump.repro import write_repro

    stamp = time.strftime("%Y%m%d%H%M%S")
    top = Path(out) / f"info_{stamp}"
    for case in cases:
        folder = top / f"aicerror_{case.number}_{stamp}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AclmonError(f"cannot write into {folder}: {exc}") from exc
        if case.dump_path and case.triage.op_type:
            try:
                dump = read_dump(case.dump_path)
                script = write_repro(
                    folder / "single_op_test", dump, op_type=case.triage.op_type,
                    op_name=case.triage.op_name, task_id=case.error.task_id or -1,
                    device_id=case.error.device_id or 0, verdict=case.triage.verdict,
                )  # fmt: skip
                case.triage.repro = str(script)
            except AclmonError as exc:
                case.triage.notes.append(f"no single-operator re-run: {exc}")
        try:
            (folder / "info.txt").write_text(info_text(case), encoding="utf-8")
        except OSError as exc:
            raise AclmonError(f"cannot write {folder / 'info.txt'}: {exc}") from exc
    return top
