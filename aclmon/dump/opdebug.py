"""Overflow (``Opdebug``) records: decode both layouts, explain the status words.

The dict keys, their order and which values are hex strings follow msaccucmp
(``DumpDataParser._parse_op_debug_old_version`` and
``OpDebugInfoParser.parse_op_debug_new_version``), so ``aclmon convert`` writes
the same JSON. Layouts: docs/reference/dump_formats.md §2.
"""

from __future__ import annotations

import struct
from typing import Any

from aclmon.errors import DecodeError

MAGIC = 0x5A5A5A5A
OLD_RECORD_SIZE = 2048
_OLD_INFO_FIELDS = ("model_id", "stream_id", "task_id", "task_type", "pc_start", "para_base")
# old layout: info blocks at 0/128/256, statuses at 512 and 768, AI Core status words at 1024
_OLD_SECTIONS = (("DHA Atomic Add", 0, 512), ("L2 Atomic Add", 128, 768), ("AI Core", 256, None))
_AI_CORE_STATUS_AT = 1024

ACC_TYPES = {0: "AIC", 1: "AIV", 2: "AICPU", 3: "SDMA"}
ACC_FIELDS: dict[str, tuple[str, ...]] = {
    "AIC": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
            "pc_start", "para_base", "core_id", "block_id", "status"),
    "AIV": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
            "pc_start", "para_base", "core_id", "block_id", "status"),
    "SDMA": ("model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
             "src_addr", "dst_addr", "channel_id", "status"),
    "AICPU": ("model_id", "stream_id", "task_id", "task_type", "context_id", "cpu_id",
              "thread_id", "status"),
}  # fmt: skip
HEX_FIELDS = ("pc_start", "para_base", "src_addr", "dst_addr")
STATUS_WORDS_V1 = 4
_NEW_HEAD = 24  # magic, version, valid, acc_type, rsv, data_len (u32 each)

#: AI Core status bits (HIDOC MindStudio 8.3.0; Ascend/tools precision_tool).
AI_CORE_STATUS_BITS: tuple[tuple[int, str], ...] = (
    (0x008, "NEG of the most-negative signed integer overflowed (sign-bit flip)"),
    (0x010, "integer add/sub/mul/mul-add overflow"),
    (0x020, "floating-point computation overflow"),
    (0x080, "negative input to a float-to-unsigned conversion"),
    (0x100, "overflow in a float32-to-float16 or int32-to-float16 conversion"),
    (0x400, "CUBE accumulation overflow"),
)
#: finer atomic-add codes from Ascend/tools, not confirmed by the official docs.
ATOMIC_STATUS_CODES = {
    "DHA Atomic Add": {0x9: "overflow", 0xA: "underflow", 0xB: "source NaN", 0xC: "destination NaN", 0xD: "source and destination NaN"},
    "L2 Atomic Add": {0b001: "overflow", 0b010: "underflow", 0b011: "source NaN", 0b100: "destination NaN", 0b101: "source and destination NaN"},
}  # fmt: skip


def _u64(data: bytes, offset: int) -> int:
    value: int = struct.unpack_from("<Q", data, offset)[0]
    return value


def _u32(data: bytes, offset: int) -> int:
    value: int = struct.unpack_from("<I", data, offset)[0]
    return value


def is_new_layout(data: bytes) -> bool:
    return len(data) >= 4 and _u32(data, 0) == MAGIC


def decode_opdebug(data: bytes, source: str = "<bytes>", base: int = 0) -> dict[str, Any]:
    """Decode one overflow record (the raw bytes of an Opdebug file's output).

    ``base`` is the record's offset in its file, used in error messages.
    """
    data = bytes(data)
    if is_new_layout(data):
        return _decode_new(data, source, base)
    return _decode_old(data, source, base)


def _decode_old(data: bytes, source: str, base: int) -> dict[str, Any]:
    if len(data) != OLD_RECORD_SIZE:
        raise DecodeError(
            source,
            base,
            f"old-layout overflow record must be {OLD_RECORD_SIZE} bytes, got {len(data)}",
        )
    record: dict[str, Any] = {}
    for name, info_at, status_at in _OLD_SECTIONS:
        info: dict[str, Any] = {}
        for i, key in enumerate(_OLD_INFO_FIELDS):
            value = _u64(data, info_at + 8 * i)
            info[key] = hex(value) if key in HEX_FIELDS else value
        if status_at is not None:
            info["status"] = _u64(data, status_at)
        else:
            info["kernel_code"] = hex(_u64(data, _AI_CORE_STATUS_AT))
            info["block_idx"] = _u64(data, _AI_CORE_STATUS_AT + 8)
            info["status"] = _u64(data, _AI_CORE_STATUS_AT + 16)
        record[name] = info
    return record


def _decode_new(data: bytes, source: str, base: int) -> dict[str, Any]:
    if len(data) < _NEW_HEAD:
        raise DecodeError(
            source,
            base,
            f"overflow record of {len(data)} bytes is shorter than its {_NEW_HEAD}-byte head",
        )
    version = _u32(data, 4)
    acc_code = _u32(data, 12)
    acc_type = ACC_TYPES.get(acc_code)
    if acc_type is None:
        raise DecodeError(source, base + 12, f"unknown acc_type {acc_code} (expected 0-3)")
    names = ACC_FIELDS[acc_type]
    four_word_status = acc_type in ("AIC", "AIV") and version == 1
    words = len(names) + (STATUS_WORDS_V1 - 1 if four_word_status else 0)
    if _NEW_HEAD + 8 * words > len(data):
        raise DecodeError(
            source, base + _NEW_HEAD,
            f"{acc_type} record needs {8 * words} data bytes, {len(data) - _NEW_HEAD} present",
        )  # fmt: skip
    values: dict[str, Any] = {}
    for i, key in enumerate(names):
        at = _NEW_HEAD + 8 * i
        if key == "status" and four_word_status:
            values[key] = [_u64(data, at + 8 * k) for k in range(STATUS_WORDS_V1)]
        else:
            value = _u64(data, at)
            values[key] = hex(value) if key in HEX_FIELDS else value
    return {
        "magic": hex(MAGIC),
        "version": version,
        "acc_list": {
            "valid": _u32(data, 8),
            "acc_type": acc_type,
            "rsv": _u32(data, 16),
            "data_len": _u32(data, 20),
            "data": values,
        },
    }


def expected_data_len(record: dict[str, Any]) -> int | None:
    """The ``data_len`` a new-layout record should carry (msaccucmp's check)."""
    acc = record.get("acc_list")
    if not isinstance(acc, dict):
        return None
    names = ACC_FIELDS.get(acc.get("acc_type", ""), ())
    extra = (
        STATUS_WORDS_V1 - 1
        if acc.get("acc_type") in ("AIC", "AIV") and record.get("version") == 1
        else 0
    )
    return 8 * (len(names) + extra)


def explain_ai_core_status(status: int) -> list[str]:
    if status == 0:
        return ["no overflow"]
    out = [f"{text} (0x{bit:03x})" for bit, text in AI_CORE_STATUS_BITS if status & bit]
    known = 0
    for bit, _ in AI_CORE_STATUS_BITS:
        known |= bit
    if status & ~known:
        out.append(f"undocumented status bits 0x{status & ~known:x}")
    return out


def _explain_atomic(section: str, status: int) -> list[str]:
    if status == 0:
        return ["no overflow"]
    code = ATOMIC_STATUS_CODES[section].get(status)
    detail = (
        f"; code {status:#x} = {code} per Ascend/tools (not in the official doc)" if code else ""
    )
    return [f"overflow (status {status:#x} > 0){detail}"]


def explain_status(record: dict[str, Any]) -> list[str]:
    """Every status word of a decoded record, in words, each line prefixed with its unit."""
    lines: list[str] = []
    if "acc_list" in record:
        acc = record["acc_list"]
        acc_type = acc.get("acc_type", "?")
        status = acc.get("data", {}).get("status", 0)
        if acc.get("valid") != 1:
            lines.append(f"{acc_type}: record marked not valid (valid = {acc.get('valid')})")
        expected = expected_data_len(record)
        if expected is not None and acc.get("data_len") != expected:
            lines.append(
                f"{acc_type}: data_len {acc.get('data_len')} differs from the expected {expected}"
            )
        words = status if isinstance(status, list) else [status]
        for k, word in enumerate(words):
            label = f"{acc_type} status[{k}]" if isinstance(status, list) else f"{acc_type} status"
            if acc_type in ("AIC", "AIV"):
                lines.extend(f"{label}: {text}" for text in explain_ai_core_status(word))
            elif word == 0:
                lines.append(f"{label}: no overflow")
            else:
                lines.append(
                    f"{label}: overflow reported (status {word:#x}; bits not documented for {acc_type})"
                )
        return lines
    for section in ("AI Core", "DHA Atomic Add", "L2 Atomic Add"):
        info = record.get(section)
        if not isinstance(info, dict):
            continue
        status = int(info.get("status", 0))
        texts = (
            explain_ai_core_status(status)
            if section == "AI Core"
            else _explain_atomic(section, status)
        )
        lines.extend(f"{section}: {text}" for text in texts)
    return lines


def overflow_target(record: dict[str, Any]) -> dict[str, int | None]:
    """task/stream (and FFTS+ context/thread) of the operator that overflowed."""
    if "acc_list" in record:
        data = record["acc_list"].get("data", {})
        return {
            "task_id": data.get("task_id"),
            "stream_id": data.get("stream_id"),
            "context_id": data.get("context_id"),
            "thread_id": data.get("thread_id"),
        }
    # old layout: the first section (in report order) that shows an overflow
    for section in ("AI Core", "DHA Atomic Add", "L2 Atomic Add"):
        info = record.get(section, {})
        if info.get("status"):
            return {"task_id": info.get("task_id"), "stream_id": info.get("stream_id"),
                    "context_id": None, "thread_id": None}  # fmt: skip
    info = record.get("AI Core", {})
    return {"task_id": info.get("task_id"), "stream_id": info.get("stream_id"),
            "context_id": None, "thread_id": None}  # fmt: skip
