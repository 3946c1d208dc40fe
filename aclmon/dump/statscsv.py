"""Statistics CSV files (acl.json ``"dump_data": "stats"``): one row per tensor."""

from __future__ import annotations

import csv
import io
import os
from typing import Any

from aclmon.errors import DecodeError

#: a stats CSV has one row per tensor; anything far larger is not one.
MAX_CSV_BYTES = 64 << 20
# host-side columns, then the device-side names (dump_stats: Nan, Negative Inf, ...)
_INT_COLUMNS = {
    "Index", "Slot", "Data Size", "Count", "Nan Count", "Negative Inf Count",
    "Positive Inf Count", "Task ID", "Stream ID", "Timestamp", "Nan", "Negative Inf", "Positive Inf",
}  # fmt: skip
_FLOAT_COLUMNS = {"Max Value", "Min Value", "Avg Value", "Max", "Min", "Avg", "L2norm"}
#: every stats CSV names the tensor's direction (CANN: "Input/Output", MindSpore: "IO")
#: and its data type.
_DIRECTION_COLUMNS = ("Input/Output", "IO")


def _value(column: str, text: str) -> Any:
    text = text.strip()
    try:
        if column in _INT_COLUMNS:
            return int(text)
        if column in _FLOAT_COLUMNS:
            return float(text)
    except ValueError:
        return text
    if column == "Shape":
        if text in ("", "-"):
            return []
        try:
            return [int(d) for d in text.split("x")]
        except ValueError:
            return text
    return text


def read_stats_csv(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows as dicts keyed by the CSV header; numbers parsed, shapes as lists."""
    path = os.fspath(path)
    source = os.path.basename(path)
    try:
        size = os.path.getsize(path)
        if size > MAX_CSV_BYTES:
            raise DecodeError(source, 0, f"{size} bytes is too large for a stats CSV")
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
    except OSError as exc:
        raise DecodeError(source, 0, f"cannot read: {exc.strerror or exc}") from None
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DecodeError(source, 0, "empty stats CSV") from None
    except csv.Error as exc:
        raise DecodeError(source, 0, f"bad CSV: {exc}") from None
    if "Data Type" not in header or not any(c in header for c in _DIRECTION_COLUMNS):
        raise DecodeError(
            source, 0, "not a stats CSV: no column Input/Output (or IO) and Data Type"
        )
    rows: list[dict[str, Any]] = []
    offset = len(text.split("\n", 1)[0]) + 1
    try:
        for record in reader:
            if not record:
                continue
            if len(record) != len(header):
                raise DecodeError(
                    source,
                    offset,
                    f"row {len(rows) + 1} has {len(record)} fields, header has {len(header)}",
                )
            rows.append({col: _value(col, val) for col, val in zip(header, record, strict=True)})
            offset += len(",".join(record)) + 1
    except csv.Error as exc:
        raise DecodeError(source, offset, f"bad CSV: {exc}") from None
    return rows
