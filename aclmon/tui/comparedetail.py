"""One compared tensor pair side by side (Enter in the Compare view): both
tensors' shapes and statistics, every metric against its line, the worst
elements by index with both values and their errors, and a histogram of the
absolute error. Both tensors are read again in a worker thread, never on the
UI thread (:func:`aclmon.dump.compare.detail.row_detail`)."""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType

from aclmon.dump.compare import metrics as m
from aclmon.dump.compare.detail import DEFAULT_TOP, RowDetail, Side, row_detail, short
from aclmon.dump.compare.rows import CompareRow
from aclmon.dump.compare.thresholds import FAIL, PASS, Thresholds
from aclmon.tui.screens import ScrollingModal
from aclmon.tui.style import Fitted, Roles, roles
from aclmon.tui.views.compare import MARK

HISTOGRAM_BAR = 30


def sides_table(detail: RowDetail, r: Roles) -> Table:
    """my output | ground truth, field by field (long cells fold, never cut)."""
    table = Table(box=None, header_style=r.dim, padding=(0, 1))
    table.add_column("", style=r.dim, no_wrap=True)
    table.add_column("my output", overflow="fold")
    table.add_column("ground truth", overflow="fold")
    mine, golden = detail.mine, detail.golden

    def both(field: Any) -> tuple[str, str]:
        return tuple(field(side) if side is not None else "-" for side in (mine, golden))  # type: ignore[return-value]

    def shape(side: Side) -> str:
        stored = "[" + ",".join(str(d) for d in side.stored_shape) + "]"
        logical = "[" + ",".join(str(d) for d in side.shape) + "]"
        return f"{side.layout} {stored}" + (f" → {logical}" if logical != stored else "")

    def stat(key: str) -> Any:
        return lambda side: short(side.stats.get(key))

    def nonfinite(side: Side) -> str:
        s = side.stats
        return f"{s.get('nan', 0)} / {s.get('pos_inf', 0) + s.get('neg_inf', 0)}"

    table.add_row("file", *both(lambda side: os.path.basename(side.file)))
    table.add_row("dtype", *both(lambda side: side.dtype))
    table.add_row("shape", *both(shape))
    for key in ("min", "max", "mean", "std"):
        table.add_row(key, *both(stat(key)))
    table.add_row("NaN / Inf", *both(nonfinite))
    return table


def metrics_table(row: CompareRow, thresholds: Thresholds, r: Roles) -> Table:
    """Every metric of the row; a failing one against its line."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style=r.dim, no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for name in m.ALGORITHMS:
        if name not in row.values:
            continue
        text = row.metric(name)
        failing = name in row.failing
        line = ""
        if name in thresholds.lines:
            line = thresholds.describe(name, text).removeprefix(f"{name} {text} ")
            line = ("fails: " if failing else "line: ") + line
        table.add_row(
            name,
            Text(text, style=r.bad if failing else Style()),
            Text(line, style=r.bad if failing else r.dim),
        )
    return table


def worst_table(detail: RowDetail, r: Roles) -> Table:
    table = Table(
        title=f"the {len(detail.worst)} worst elements (absolute error)",
        title_justify="left", title_style=Style(bold=True), box=None, header_style=r.dim,
        padding=(0, 1),
    )  # fmt: skip
    for label in ("index", "position", "my output", "ground truth", "abs error", "rel error"):
        table.add_column(label, justify="left" if label == "position" else "right", no_wrap=True)
    for e in detail.worst:
        table.add_row(
            str(e.flat),
            "[" + ",".join(str(p) for p in e.position) + "]",
            short(e.mine),
            short(e.golden),
            Text(short(e.abs_error), style=r.bad if not math.isfinite(e.abs_error) else Style()),
            short(e.rel_error),
        )
    return table


def histogram_text(detail: RowDetail, r: Roles) -> Text:
    h = detail.histogram
    text = Text("absolute error by decade", style=Style(bold=True))
    if h is None:
        return text
    text.append(f"   zeros {h.zeros}   NaN/Inf {h.nonfinite}\n", style=r.dim)
    top = max(h.counts, default=0)
    shown = [
        (low, high, count)
        for low, high, count in zip(h.edges, h.edges[1:], h.counts, strict=False)
        if count
    ]
    if not shown:
        text.append("  (no nonzero finite error)", style=r.dim)
    for low, high, count in shown:
        bar = "█" * max(1, round(HISTOGRAM_BAR * count / top)) if top else ""
        text.append(f"  [{low:.0e}, {high:.0e})  {count:>10}  ", style=r.dim)
        text.append(bar + "\n", style=r.bad if high > 1 else r.good)
    text.rstrip()
    return text


def beside(left: RenderableType, right: RenderableType) -> RenderableType:
    """Two blocks side by side where both fit the width, else one under the other."""
    grid = Table.grid(padding=(0, 4))
    grid.add_column(vertical="top")
    grid.add_column(vertical="top")
    grid.add_row(left, right)
    return Fitted(grid, Group(left, Text(""), right))


def render_detail(detail: RowDetail, thresholds: Thresholds, r: Roles) -> list[RenderableType]:
    parts: list[RenderableType] = []
    row = detail.row
    metrics: RenderableType = (
        metrics_table(row, thresholds, r) if row.values else Text("no metrics", style=r.dim)
    )
    if detail.error:
        parts += [Text(detail.error, style=r.bad), Text(""), metrics]
    else:
        parts.append(beside(sides_table(detail, r), metrics))
    if row.reason:
        parts += [Text(""), Text(row.reason, style=r.dim)]
    if not detail.error:
        ranges = Text("\nabsolute error ", style=r.dim)
        ranges.append(f"{short(detail.min_abs_error)} … {short(detail.max_abs_error)}")
        ranges.append("   relative error ", style=r.dim)
        ranges.append(f"{short(detail.min_rel_error)} … {short(detail.max_rel_error)}\n")
        parts.append(ranges)
        histogram = histogram_text(detail, r)
        parts.append(beside(worst_table(detail, r), histogram) if detail.worst else histogram)
    return parts


class CompareDetail(ScrollingModal[None]):
    """A compared row's tensors side by side (loaded in a worker when shown)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "app.pop_screen", "Close", id="detail.close"),
    ]
    PREFIX = "detail"

    def __init__(self, row: CompareRow, thresholds: Thresholds, top: int = DEFAULT_TOP) -> None:
        super().__init__()
        self.row = row
        self.thresholds = thresholds
        self.top = top
        #: the detail once read (None while reading)
        self.detail: RowDetail | None = None

    def on_mount(self) -> None:
        self.show(self._title(), [], "reading both tensors…")
        self._load()

    def _title(self) -> Text:
        r = roles(self)
        row = self.row
        style = r.bad if row.status == FAIL else r.good if row.status == PASS else r.dim
        title = Text(f"{MARK.get(row.status, '?')} ", style=style)
        title.append(row.tensor_index if row.role else row.npu_dump, style=Style(bold=True))
        title.append(f"  {row.op_type}  {row.shape_text}", style=r.dim)
        title.append(f"\n{row.op_name}", style=r.dim)
        return title

    @work(thread=True, exclusive=True, group="compare-detail")
    def _load(self) -> None:
        detail = row_detail(self.row, self.top)
        with contextlib.suppress(RuntimeError):  # the app already stopped
            self.app.call_from_thread(self._loaded, detail)

    def _loaded(self, detail: RowDetail) -> None:
        if not self.is_attached:
            return
        self.detail = detail
        r = roles(self)
        self.show(
            self._title(),
            render_detail(detail, self.thresholds, r),
            f"{self.row.my_file}\n{self.row.golden_file}\nq, Esc or Enter closes",
        )
