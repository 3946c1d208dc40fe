"""A dump file in the Dumps pane and the exception detail, off the UI thread.

:func:`decode_for_view` runs in a worker thread and returns the file's
decode report (:mod:`aclmon.dump.report`, the one ``aclmon decode`` prints);
:func:`render_report` turns it into Rich renderables on the UI thread. An
overflow file gives its decoded records with the status bits explained, then
the tensors (with statistics and a histogram) of the operator it points at.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from aclmon import events as ev
from aclmon.tui import fmt
from aclmon.tui.style import Fitted, key_values

#: tensors whose statistics are computed (the rest are listed without them).
MAX_STAT_TENSORS = 16
HIST_BINS = 24


def decode_for_view(path: str) -> dict[str, Any]:
    """The file's :func:`~aclmon.dump.report.decode_report` (an overflow file's with
    its operator's), as the pane shows it. Run it off the UI thread; never raises."""
    try:
        from aclmon.dump.report import decode_report
    except ImportError as exc:  # a build without the dump decoder
        return {"path": path, "kind": None, "error": f"dump decoding is not available: {exc}"}
    return decode_report(path, bins=HIST_BINS, stat_tensors=MAX_STAT_TENSORS, follow_overflow=True)


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


def render_report(report: dict[str, Any], styles: dict[str, Style]) -> RenderableType:
    """A decode report (:func:`decode_for_view`) as the pane shows it."""
    from aclmon.dump.report import target_ids

    dim, bad, bold = styles["dim"], styles["bad"], Style(bold=True)
    kind = str(report.get("kind") or "unknown")
    parts: list[RenderableType] = [_file_head(report["path"], kind, dim)]
    if report.get("error"):
        parts.append(Text(f"\n{report['error']}", style=bad))
    records = report.get("records", [])
    for n, item in enumerate(records):
        parts.extend(_record_parts(n, item, dim, bad))
    operator = report.get("operator")
    if kind == ev.OVERFLOW_DUMP and target_ids(report):
        parts.append(_target_line(report, operator, dim))
    shown = operator if isinstance(operator, dict) else report
    if operator is not None and operator.get("error"):
        parts.append(Text(f"\n{operator['error']}", style=bad))
    if shown.get("op_name") and (kind != ev.OVERFLOW_DUMP or operator is not None):
        parts.append(Text(f"\n{shown.get('op_type') or ''} {shown['op_name']}", style=bold))
    for t in shown.get("tensors", []):
        title = Text(f"\n{t['role']} {t['index']}  ", style=bold)
        title.append(f"{t['dtype']} {t['format']} {fmt.shape(t['shape'])} {fmt.size(t['size'])}",
                     style=dim)  # fmt: skip
        if t.get("original_shape") and list(t["original_shape"]) != list(t["shape"]):
            title.append(f" original {fmt.shape(t['original_shape'])}", style=dim)
        parts.append(title)
        for problem in (t.get("note"), t.get("error")):
            if problem:
                parts.append(Text(f"  {problem}", style=bad))
        if t.get("stats"):
            parts.append(_stats_table(t["stats"], dim, bad))
    warnings = report.get("warnings", []) + (operator.get("warnings", []) if operator else [])
    for warning in warnings:
        parts.append(Text(f"warning: {warning}", style=dim))
    return Group(*parts)


def _record_parts(n: int, item: dict[str, Any], dim: Style, bad: Style) -> list[RenderableType]:
    """One overflow record: its status in words, then its fields as key/value lines."""
    section = Text(f"\nOVERFLOW RECORD {n}\n", style=Style(bold=True))
    if item.get("error"):
        section.append(f"  {item['error']}\n", style=bad)
    for line in item.get("explained", []):
        section.append(f"  {line}\n", style=dim if line.endswith("no overflow") else bad)
    # key/value lines: a long value wraps under itself, not under its key
    rows: list[tuple[str, RenderableType]] = []
    for key, value in item.get("record", {}).items():
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
    if not rows:
        return [section]
    section.rstrip()
    return [section, key_values(rows, dim)]


def _target_line(report: dict[str, Any], operator: Any, dim: Style) -> Text:
    """The ids of the operator that overflowed, and its dump (or that none is beside)."""
    from aclmon.dump.report import target_ids

    target = target_ids(report)
    line = Text("\nOPERATOR THAT OVERFLOWED  ", style=Style(bold=True))
    line.append(" ".join(f"{k}={v}" for k, v in target.items()), style=dim)
    if isinstance(operator, dict):
        line.append(f"\n{os.path.basename(operator['path'])}")
    else:
        line.append(
            f"\nno operator dump for task {target.get('task_id')}"
            f" stream {target.get('stream_id')} next to this file",
            style=dim,
        )
    return line


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
            bars = Text(_histogram_line([int(c) for c in counts_list]))
            if len(edges) >= 2:
                bars.append(f"  [{edges[0]:.4g} … {edges[-1]:.4g}]", style=dim)
            table.add_row("histogram", bars)
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
    if dump.kind == ev.OVERFLOW_DUMP:  # the file's own name and ids are the debug task's
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
        narrow_op = key_values([("overflowed" if found else "operator", value)], dim)
        parts.extend([Text(""), Fitted(line, narrow_op)])
    records = summary.get("records")
    for n, item in enumerate(records if isinstance(records, (list, tuple)) else []):
        if not isinstance(item, dict):
            continue
        text = Text(f"\nOVERFLOW RECORD {n}\n", style=bold)
        if item.get("error"):
            text.append(f"  {item['error']}\n", style=bad)
        explained = item.get("explained")
        for said in explained if isinstance(explained, (list, tuple)) else []:
            text.append(f"  {said}\n", style=dim if str(said).endswith("no overflow") else bad)
        parts.append(text)
    tensors = summary.get("tensors")
    if isinstance(tensors, (list, tuple)) and tensors:
        table = Table(box=None, header_style=dim, pad_edge=False)
        for column in ("ROLE", "#", "DTYPE", "FORMAT", "SHAPE", "SIZE"):
            table.add_column(column, no_wrap=True)
        narrow_rows: list[tuple[str, RenderableType]] = []
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
                narrow_rows.append(
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
        parts.append(Fitted(table, key_values(narrow_rows, dim)))
    parts.append(Text("\nEnter decodes the file: records, tensors, statistics", style=dim))
    return Group(*parts)
