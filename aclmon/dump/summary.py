"""``classify`` (cheap) and ``summarize`` (small JSON-able dict, never raises)."""

from __future__ import annotations

import os
import stat
from typing import Any

from aclmon.dump.naming import is_opdebug_name, parse_dump_name
from aclmon.dump.nano import NANO_MAGIC
from aclmon.errors import AclmonError
from aclmon.events.schema import EXCEPTION_DUMP, NANO_DUMP, OP_DUMP, OVERFLOW_DUMP, STATS_DUMP

# The kinds classify() tells apart are the event schema's words (DumpFileSeen.kind);
# KIND_EXCEPTION is what the runtime dumps of a failing operator at an AI Core
# exception (``dump_scene`` aic_err_*/lite_exception): ``exception_info.{op_name}.
# {task}.{ts}`` in ``extra-info/data-dump/{device}/``; its first name field is not
# an op type.
KIND_OP_DUMP = OP_DUMP
KIND_OVERFLOW = OVERFLOW_DUMP
KIND_STATS = STATS_DUMP
KIND_NANO = NANO_DUMP
KIND_EXCEPTION = EXCEPTION_DUMP
EXCEPTION_PREFIX = "exception_info."
#: summaries stay small: at most this many tensors / records are listed.
MAX_LISTED = 64


def classify(path: str | os.PathLike[str]) -> str | None:
    """Kind of a file from its name and first bytes; ``None`` if it is not a dump
    file or cannot be read (:func:`classify_or_raise` says why)."""
    try:
        return classify_or_raise(path)
    except OSError:
        return None


def classify_or_raise(path: str | os.PathLike[str]) -> str | None:
    """:func:`classify`, raising the ``OSError`` of a file that cannot be read."""
    name = os.path.basename(os.fspath(path))
    # never open FIFOs or devices: reading one could block the caller forever
    if not stat.S_ISREG(os.stat(path).st_mode):
        return None
    with open(path, "rb") as handle:
        head = handle.read(16)
    if name.lower().endswith(".csv"):
        # CANN writes "Input/Output,...", msprobe/MindSpore merged files start "Op Type,..."
        return KIND_STATS if head.startswith((b"Input/Output", b"Op Type")) else None
    if len(head) >= 12 and int.from_bytes(head[8:12], "little") == NANO_MAGIC:
        return KIND_NANO
    if len(head) < 9:
        return None
    size = os.path.getsize(path)
    header_len = int.from_bytes(head[:8], "little")
    framed = 0 < header_len <= size - 8 and _plausible_tag(head[8])
    legacy = head[0] == 0x0A and parse_dump_name(name) is not None  # v1: starts with `version`
    if not (framed or legacy):
        return None
    if is_opdebug_name(name):
        return KIND_OVERFLOW
    return KIND_EXCEPTION if is_exception_dump(path) else KIND_OP_DUMP


def is_exception_dump(path: str | os.PathLike[str]) -> bool:
    """An exception dump, by its name or (when the runtime names it after the
    kernel) by its directory ``extra-info/data-dump/{device}/``."""
    path = os.fspath(path)
    if os.path.basename(path).startswith(EXCEPTION_PREFIX):
        return True
    parent, device = os.path.split(os.path.dirname(path))
    return device.isdigit() and os.path.basename(parent) == "data-dump"


def _plausible_tag(byte: int) -> bool:
    """First byte of a DumpData message: a field 1-15 tag with a proto3 wire type."""
    return (byte >> 3) in range(1, 16) and (byte & 7) in (0, 1, 2, 5)


def _why_not_a_dump(path: str) -> str:
    """The reader's own complaint about a file ``classify`` rejected (it names the offset)."""
    from aclmon.dump.reader import read_dump

    try:
        read_dump(path, header_only=True)
    except AclmonError as exc:
        return str(exc)
    return f"{os.path.basename(path)}: not a recognised dump file"


def tensor_summary(tensor: Any) -> dict[str, Any]:
    """A tensor header's plain fields (decode --json, the DumpFileSeen summary)."""
    return {
        "role": tensor.role,
        "index": tensor.index,
        "dtype": tensor.dtype_name,
        "format": tensor.format_name,
        "shape": list(tensor.shape),
        "original_shape": list(tensor.original_shape),
        "size": tensor.size,
    }


def summarize(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Small plain-value dict describing a dump file; ``{"error": ...}`` on a bad file."""
    path = os.fspath(path)
    name = os.path.basename(path)
    parsed = parse_dump_name(name)
    out: dict[str, Any] = {"kind": None, "file": name}
    if parsed is not None:
        out.update(
            op_type=parsed.op_type,
            op_name=parsed.op_name,
            task_id=parsed.task_id,
            timestamp=parsed.timestamp,
        )
        if parsed.stream_id is not None:  # old names and exception dumps carry none
            out["stream_id"] = parsed.stream_id
        if parsed.task_type is not None:
            out.update(
                task_type=parsed.task_type,
                context_id=parsed.context_id,
                thread_id=parsed.thread_id,
                device_id=parsed.device_id,
            )
    try:
        kind = classify(path)
        out["kind"] = kind
        if kind == KIND_EXCEPTION:
            # "exception_info" (or the kernel's name) stands where an op type would
            out.pop("op_type", None)
        elif kind == KIND_OVERFLOW:
            # "Opdebug.Node_OpDebug.{task}.{stream}": the debug task's own ids, not
            # the overflowing operator's; the records name that one (below)
            for key in ("op_type", "op_name", "task_id", "stream_id", "task_type", "context_id",
                        "thread_id"):  # fmt: skip
                out.pop(key, None)
        if kind is None:
            out["error"] = _why_not_a_dump(path)
        elif kind == KIND_STATS:
            from aclmon.dump.statscsv import read_stats_csv

            rows = read_stats_csv(path)
            out["rows"] = rows[:MAX_LISTED]
            out["row_count"] = len(rows)
        else:
            _summarize_dump(path, kind, out)
    except AclmonError as exc:
        out["error"] = str(exc)
    except Exception as exc:  # the agent calls this inside the user's job: a bug must not raise
        out["error"] = f"{name}: internal error: {type(exc).__name__}: {exc}"
    return out


def _summarize_dump(path: str, kind: str, out: dict[str, Any]) -> None:
    from aclmon.dump.opdebug import decode_opdebug, explain_status
    from aclmon.dump.reader import read_dump

    # Only overflow records need tensor bytes (and those files are small). Everything
    # else is read header-only: the agent runs inside the user's job and reads no
    # tensor there that it does not need.
    dump = read_dump(path, header_only=kind != KIND_OVERFLOW)
    if dump.op_name and kind != KIND_OVERFLOW:  # an Opdebug file's is "Node_OpDebug"
        out["op_name"] = dump.op_name
    out.update(
        container=dump.container,
        version=dump.version,
        dump_time=dump.dump_time,
        file_size=dump.file_size,
        warnings=dump.warnings[:MAX_LISTED],
    )
    tensors = dump.tensors
    out["tensors"] = [tensor_summary(t) for t in tensors[:MAX_LISTED]]
    if len(tensors) > MAX_LISTED:
        out["tensors_omitted"] = len(tensors) - MAX_LISTED
    if kind == KIND_OVERFLOW:
        records = []
        for tensor in dump.outputs[:MAX_LISTED]:
            try:
                record = decode_opdebug(bytes(tensor.raw), os.path.basename(path), tensor.offset)
                records.append(
                    {"output": tensor.index, "record": record, "explained": explain_status(record)}
                )
            except AclmonError as exc:
                records.append({"output": tensor.index, "error": str(exc)})
        out["records"] = records
        _name_overflowing_operator(path, records, out)


def _name_overflowing_operator(
    path: str, records: list[dict[str, Any]], out: dict[str, Any]
) -> None:
    """The ids of the operator the first record says overflowed (task, stream and,
    for FFTS+ sub-tasks, context and thread), and its type and name from the
    operator dump with those ids beside the Opdebug file, when there is one."""
    from aclmon.dump.index import overflow_operator
    from aclmon.dump.opdebug import overflow_target

    for item in records:
        if "record" in item:
            target = overflow_target(item["record"])
            out.update((k, v) for k, v in target.items() if v is not None)
            out.update(overflow_operator(path, target))
            return


def summary_target(summary: Any) -> dict[str, Any]:
    """The ids of the operator an overflow file's summary says overflowed (from its
    first decoded record: ``task_id``, ``stream_id``, ``context_id``, ``thread_id``);
    ``{}`` when it has none. Works on summaries of any age: older ones carry the
    Opdebug file's own ids in ``task_id``/``stream_id``, which are not these."""
    from aclmon.dump.opdebug import overflow_target

    items = summary.get("records") if isinstance(summary, dict) else None
    for item in items if isinstance(items, (list, tuple)) else ():
        record = item.get("record") if isinstance(item, dict) else None
        if isinstance(record, dict):
            try:
                return overflow_target(record)
            except (AttributeError, TypeError):  # a record of another shape
                return {}
    return {}


def summary_operator(summary: Any) -> str:
    """ "MatMul mm1": the operator that overflowed, as an overflow file's summary names
    it; "" when it names none (an older summary's "Opdebug Node_OpDebug" is the
    file's own name, not an operator)."""
    if not isinstance(summary, dict):
        return ""
    if summary.get("operator"):  # set by replay from the directory's index
        return str(summary["operator"])
    if str(summary.get("op_type", "")).lower() == "opdebug":
        return ""
    return " ".join(str(summary[k]) for k in ("op_type", "op_name") if summary.get(k))


__all__ = ["classify", "summarize", "summary_operator", "summary_target"]
