"""Decoding one dump file for the Dumps view, off the UI thread.

:func:`decode_for_view` runs in a worker thread and returns plain values (a
:class:`DumpReport`); :func:`render_report` turns them into Rich renderables on
the UI thread. An overflow file gives its decoded records with the status bits
explained, then the tensors (with statistics and a histogram) of the operator
it points at, found by task and stream id among the files in its directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from aclmon.errors import AclmonError
from aclmon.tui import fmt
from aclmon.tui.style import Fitted, key_values

#: tensors whose statistics are computed (the rest are listed without them).
MAX_STAT_TENSORS = 16
HIST_BINS = 24


@dataclass
class TensorReport:
    role: str
    index: int
    dtype: str
    format: str
    shape: tuple[int, ...]
    size: int
    original_shape: tuple[int, ...] = ()
    stats: dict[str, Any] | None = None
    error: str = ""


@dataclass
class DumpReport:
    path: str
    kind: str
    error: str = ""
    op_type: str = ""
    op_name: str = ""
    records: list[tuple[dict[str, Any], list[str]]] = field(default_factory=list)
    target: dict[str, Any] | None = None
    related_path: str = ""
    related_note: str = ""
    tensors: list[TensorReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _tensor_reports(path: str, report: DumpReport) -> None:
    from aclmon.dump import read_dump
    from aclmon.dump.stats import logical_tensor_stats

    dump = read_dump(path)
    report.warnings.extend(dump.warnings)
    if not report.op_name:
        report.op_name = dump.op_name
        report.op_type = dump.op_type
    for n, tensor in enumerate([*dump.inputs, *dump.outputs]):
        item = TensorReport(
            tensor.role, tensor.index, tensor.dtype_name, tensor.format_name,
            tuple(tensor.shape), tensor.size, tuple(tensor.original_shape),
        )  # fmt: skip
        if n < MAX_STAT_TENSORS:
            try:
                # over the tensor in its original shape, as `aclmon decode` does
                item.stats = logical_tensor_stats(
                    tensor.array, tensor.format, tensor.original_shape, bins=HIST_BINS
                )
            except AclmonError as exc:
                item.error = str(exc)
            except (ValueError, TypeError) as exc:  # an array the statistics cannot take
                item.error = f"no statistics: {exc}"
        report.tensors.append(item)


def decode_for_view(path: str, kind: str) -> DumpReport:
    """Everything the detail pane shows for one file. Never raises."""
    report = DumpReport(path, kind)
    try:
        from aclmon.dump import decode_opdebug, explain_status, read_dump
        from aclmon.dump.index import find_op_dump
        from aclmon.dump.opdebug import overflow_target

        if kind == "overflow":
            dump = read_dump(path)
            report.warnings.extend(dump.warnings)
            for tensor in dump.outputs:
                record = decode_opdebug(bytes(tensor.raw), os.path.basename(path), tensor.offset)
                report.records.append((record, explain_status(record)))
            if report.records:
                target = overflow_target(report.records[0][0])
                report.target = target
                task, stream = target.get("task_id"), target.get("stream_id")
                if task is not None:
                    report.related_path = find_op_dump(os.path.dirname(path) or ".", task, stream)
                if not report.related_path:
                    report.related_note = (
                        f"no operator dump for task {task} stream {stream} next to this file"
                    )
            if report.related_path:
                _tensor_reports(report.related_path, report)
        else:
            _tensor_reports(path, report)
    except AclmonError as exc:
        report.error = str(exc)
    except ImportError as exc:  # a build without the dump decoder
        report.error = f"dump decoding is not available: {exc}"
    return report


def _file_head(path: str, kind: str, dim: Style) -> RenderableType:
    """A file's name, then what it is and where: one line when it fits, else
    key/value lines with the directory whole (folded, never cut)."""
    name = Text(os.path.basename(path), style=Style(bold=True))
    wide = name.copy()
    wide.append(f"\n{kind} · {path}", style=dim)
    narrow = Group(
        name,
        key_values([("kind", Text(kind)), ("dir", Text(os.path.dirname(path) or "."))], dim),
    )
    return Fitted(wide, narrow)


def _histogram_line(counts: list[int], width: int = HIST_BINS) -> str:
    top = max(counts) if counts else 0
    return fmt.sparkline(counts[:width], min(width, len(counts)), top=float(top or 1))


def render_report(report: DumpReport, styles: dict[str, Style]) -> RenderableType:
    dim, bad, bold = styles["dim"], styles["bad"], Style(bold=True)
    parts: list[RenderableType] = [_file_head(report.path, report.kind, dim)]
    if report.error:
        parts.append(Text(f"\n{report.error}", style=bad))
    for n, (record, explained) in enumerate(report.records):
        section = Text(f"\nOVERFLOW RECORD {n}\n", style=bold)
        for line in explained:
            quiet = line.endswith("no overflow")
            section.append(f"  {line}\n", style=dim if quiet else bad)
        # key/value lines: a long value wraps under itself, not under its key
        rows: list[tuple[str, RenderableType]] = []
        for key, value in record.items():
            if isinstance(value, dict) and value.get("status") == 0:
                continue  # a unit that saw no overflow: its line above says so
            if isinstance(value, dict):
                inner = ", ".join(f"{k}={v}" for k, v in value.items() if not isinstance(v, dict))
                rows.append((f"  {key}", Text(inner)))
                data = value.get("data")
                if isinstance(data, dict):
                    rows.append(("    data", Text(", ".join(f"{k}={v}" for k, v in data.items()))))
            else:
                rows.append((f"  {key}", Text(str(value))))
        if rows:
            section.rstrip()
        parts.append(section)
        if rows:
            parts.append(key_values(rows, dim))
    if report.target is not None:
        line = Text("\nOPERATOR THAT OVERFLOWED  ", style=bold)
        line.append(
            " ".join(f"{k}={v}" for k, v in report.target.items() if v is not None), style=dim
        )
        if report.related_path:
            line.append(f"\n{os.path.basename(report.related_path)}")
        elif report.related_note:
            line.append(f"\n{report.related_note}", style=dim)
        parts.append(line)
    if report.op_name:
        parts.append(Text(f"\n{report.op_type} {report.op_name}", style=bold))
    for t in report.tensors:
        title = Text(f"\n{t.role} {t.index}  ", style=bold)
        title.append(f"{t.dtype} {t.format} {fmt.shape(t.shape)} {fmt.size(t.size)}", style=dim)
        if t.original_shape and tuple(t.original_shape) != tuple(t.shape):
            title.append(f" original {fmt.shape(t.original_shape)}", style=dim)
        parts.append(title)
        if t.error:
            parts.append(Text(f"  {t.error}", style=bad))
        if not t.stats:
            continue
        parts.append(_stats_table(t.stats, dim, bad))
    for warning in report.warnings:
        parts.append(Text(f"warning: {warning}", style=dim))
    return Group(*parts)


def _stats_table(stats: dict[str, Any], dim: Style, bad: Style) -> RenderableType:
    table = Table.grid(padding=(0, 2))
    table.add_column(style=dim, no_wrap=True, min_width=10)
    table.add_column(overflow="fold")

    def num(key: str) -> str:
        value = stats.get(key)
        if isinstance(value, float):
            return f"{value:.6g}"
        return "–" if value is None else str(value)

    if stats.get("stored_stats"):
        table.add_row("values", f"{stats.get('count')} in the original shape")
    if stats.get("finite") == 0:
        table.add_row("min / max", Text("no finite values", style=bad))
    else:
        table.add_row("min / max", f"{num('min')} / {num('max')}")
        table.add_row("mean / std", f"{num('mean')} / {num('std')}")
    counts = Text()
    for key, label in (("nan", "NaN"), ("pos_inf", "+Inf"), ("neg_inf", "-Inf"), ("zeros", "zero")):
        value = stats.get(key) or 0
        style = bad if value and key != "zeros" else Style()
        counts.append(f"{label} {value}  ", style=style)
    table.add_row("counts", counts)
    first = stats.get("first")
    if first is not None:
        table.add_row("first", _preview(list(first)[:8], bad))
    hist = stats.get("histogram")
    if isinstance(hist, dict):
        counts_list = list(hist.get("counts", []))
        edges = list(hist.get("edges", []))
        if counts_list:
            label = Text(_histogram_line([int(c) for c in counts_list]))
            if len(edges) >= 2:
                label.append(f"  [{edges[0]:.4g} … {edges[-1]:.4g}]", style=dim)
            table.add_row("histogram", label)
    stored = stats.get("stored_stats")
    if isinstance(stored, dict):
        table.add_row(
            "stored",
            Text(
                f"{stored.get('count')} values, padding included: zero {stored.get('zeros', 0)}",
                style=dim,
            ),
        )
    if stats.get("logical_error"):
        table.add_row("stored", Text(f"figures of the stored layout: {stats['logical_error']}"))
    return table


def _preview(values: list[Any], bad: Style) -> Text:
    """The first values; NaN and ±Inf (strings in the statistics) in the error colour."""
    text = Text()
    for n, value in enumerate(values):
        if n:
            text.append(", ")
        if isinstance(value, str) and value in ("nan", "inf", "-inf"):
            text.append({"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[value], style=bad)
        else:
            text.append(f"{value:.4g}" if isinstance(value, float) else str(value))
    return text


def overflowing_operator(summary: dict[str, Any]) -> str:
    """The operator an overflow file's records point at, as its summary names it
    ("MatMul mm1"), else by the ids its record gives."""
    from aclmon.dump.summary import summary_operator, summary_target

    named = summary_operator(summary)
    if named:
        return named
    target = summary_target(summary)
    if target.get("task_id") is None:
        return "operator not known"
    stream = target.get("stream_id")
    return (
        f"task {target['task_id']} stream {'?' if stream is None else stream} (no dump of it found)"
    )


def render_summary(dump: Any, styles: dict[str, Style]) -> RenderableType:
    """What the agent already said about a file (its ``DumpFileSeen.summary``):
    shown at once when the file is highlighted, before any decoding."""
    from aclmon.dump.summary import summary_operator, summary_target

    dim, bad, bold = styles["dim"], styles["bad"], Style(bold=True)
    summary = dump.summary if isinstance(dump.summary, dict) else {}
    parts: list[RenderableType] = [
        _file_head(dump.path, f"{dump.kind} · {fmt.size(dump.size)}", dim)
    ]
    if summary.get("error"):
        parts.append(Text(f"\n{summary['error']}", style=bad))
    op = " ".join(str(summary.get(k) or "") for k in ("op_type", "op_name")).strip()
    if dump.kind == "overflow":  # the file's own name and ids are the debug task's
        summary = {**summary, **summary_target(summary)}
        op = f"overflowed: {summary_operator(summary) or 'operator (no dump of it found)'}"
    if op:
        stream = summary.get("stream_id")  # exception dump names carry none
        stream_text = "unknown" if stream is None else str(stream)
        ids = f"task {summary.get('task_id', '?')} · stream {stream_text}"
        line = Text(f"{op}  ", style=bold)
        line.append(ids, style=dim)
        _key, found, name = op.rpartition("overflowed: ")
        value = Text(name, style=bold)
        value.append(f"\n{ids}", style=dim)
        narrow = key_values([("overflowed" if found else "operator", value)], dim)
        parts.extend([Text(""), Fitted(line, narrow)])
    records = summary.get("records")
    for n, item in enumerate(records if isinstance(records, (list, tuple)) else []):
        if not isinstance(item, dict):
            continue
        text = Text(f"\nOVERFLOW RECORD {n}\n", style=bold)
        if item.get("error"):
            text.append(f"  {item['error']}\n", style=bad)
        explained = item.get("explained")
        for line in explained if isinstance(explained, (list, tuple)) else []:
            text.append(f"  {line}\n", style=dim if str(line).endswith("no overflow") else bad)
        parts.append(text)
    tensors = summary.get("tensors")
    if isinstance(tensors, (list, tuple)) and tensors:
        table = Table(box=None, header_style=dim, pad_edge=False)
        for column in ("ROLE", "#", "DTYPE", "FORMAT", "SHAPE", "SIZE"):
            table.add_column(column, no_wrap=True)
        narrow: list[tuple[str, RenderableType]] = []
        for t in tensors:
            if isinstance(t, dict):
                shape = t.get("shape")
                role, index = str(t.get("role", "")), str(t.get("index", ""))
                fields = (
                    str(t.get("dtype", "")), str(t.get("format", "")),
                    fmt.shape(shape) if isinstance(shape, list | tuple) else "",
                    fmt.size(t["size"]) if isinstance(t.get("size"), int) else "",
                )  # fmt: skip
                table.add_row(role, index, *fields)
                # the shape without spaces stays whole when the line wraps
                narrow.append(
                    (
                        f"{role} {index}",
                        Text(
                            "  ".join(fields[:2])
                            + "  "
                            + fields[2].replace(" ", "")
                            + "  "
                            + fields[3]
                        ),
                    )
                )
        parts.append(Text(""))
        parts.append(Fitted(table, key_values(narrow, dim)))
    parts.append(Text("\nEnter decodes the file: records, tensors, statistics", style=dim))
    return Group(*parts)
