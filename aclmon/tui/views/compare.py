"""The Compare view: this run's tensors against a golden run's (``--golden``).

Rows in execution order, one per tensor pair (or per operator that could not be
paired), with msaccucmp's metrics and a pass/fail mark; ``d`` jumps to the
first divergent operator (the earliest whose output fails while its inputs
pass), ``o`` keeps the failing rows, ``/`` and ``s``/``r`` filter and sort as in
every list, Enter opens both tensors side by side. The rows come from a
:class:`~aclmon.sources.golden.GoldenCompare` that fills its table off the UI
thread; the view only reads it. The app has this view only when it was given a
golden run (``--golden``).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from aclmon.dump.compare import metrics as m
from aclmon.dump.compare.divergence import Divergence
from aclmon.dump.compare.rows import CompareRow
from aclmon.dump.compare.table import OP, ORDER, STATUS, TENSOR, TYPE, row_sort_key, sort_rows
from aclmon.dump.compare.thresholds import FAIL, PASS, SKIP
from aclmon.sources.golden import GoldenCompare
from aclmon.store.state import StoreState
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.listview import Column, ListView, follow_binding
from aclmon.tui.vlist import VirtualList


class MetricColumn(NamedTuple):
    name: str  # the CSV column
    label: str
    width: int


#: the list's metric columns in msaccucmp's order (StandardDeviation, two pairs of
#: figures, is in the row's line under the list and in the detail)
METRIC_COLUMNS: tuple[MetricColumn, ...] = (
    MetricColumn(m.COSINE, "Cos", 8),
    MetricColumn(m.MAX_ABS, "MaxAbs", 8),
    MetricColumn(m.ACC_REL, "AccRel", 8),
    MetricColumn(m.EUCLID, "RelEuc", 8),
    MetricColumn(m.KL, "KL", 8),
    MetricColumn(m.MEAN_ABS, "MAE", 8),
    MetricColumn(m.RMSE, "RMSE", 8),
    MetricColumn(m.MAX_REL, "MaxRel", 8),
    MetricColumn(m.MEAN_REL, "MeanRel", 8),
)
#: which metric columns a narrow screen keeps, first kept first: the ones with a
#: pass line (what decides the mark), then the error sizes
METRIC_PRIORITY = (m.COSINE, m.EUCLID, m.KL, m.RMSE, m.MEAN_REL, m.MAX_ABS, m.MEAN_ABS,
                   m.MAX_REL, m.ACC_REL)  # fmt: skip
TENSOR_MIN = 24  # the tensor's name keeps this much before a metric column is added
TYPE_FROM = 120  # the operator type gets a column from this width
MARK = {FAIL: "✗", PASS: "✓", SKIP: "·"}
FIRST_DIVERGENT_MARK = "▶"
GAP = 2
#: columns of a row that are not cells: the list's edge, the row's leading space,
#: the scroll bar and one to spare
CHROME = 5


def fit_number(text: str, width: int) -> str:
    """A metric's printed text in ``width`` characters: as printed when it fits,
    else with fewer significant digits (never cut in the middle of a number)."""
    if len(text) <= width:
        return text
    number = m.metric_number(text)
    if math.isnan(number) or math.isinf(number):
        return text[:width]
    for digits in range(width, 0, -1):
        short = f"{number:.{digits}g}"
        if len(short) <= width:
            return short
    return "…"


def metric_columns(width: int, *, with_type: bool) -> list[MetricColumn]:
    """The metric columns that fit ``width`` beside the mark, the index, the type
    (``with_type``) and a tensor name of at least ``TENSOR_MIN``, in msaccucmp's order."""
    room = width - CHROME - (1 + GAP) - (4 + GAP) - TENSOR_MIN - GAP
    if with_type:
        room -= 10 + GAP
    by_name = {c.name: c for c in METRIC_COLUMNS}
    kept: set[str] = set()
    for name in METRIC_PRIORITY:
        need = by_name[name].width + GAP
        if need > room:
            break
        kept.add(name)
        room -= need
    return [c for c in METRIC_COLUMNS if c.name in kept]


def row_text(row: CompareRow) -> str:
    """What ``/`` matches: the operator, its type, the tensor and the reason."""
    return " ".join((row.op_name, row.npu_dump, row.op_type, row.tensor_index, row.reason)).lower()


def same_tensor(a: CompareRow, b: CompareRow) -> bool:
    return (a.npu_dump, a.role, a.tensor) == (b.npu_dump, b.role, b.tensor)


class CompareView(ListView):
    """Tensor pairs of this run and the golden one; see the module docstring."""

    FILTER_HINT = "operator, type, tensor or reason"
    #: it draws the compare's table (its content_version), nothing of the store
    SECTIONS = ()
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "first_divergent", "First divergent", id="compare.divergent"),
        Binding("o", "toggle_failing_only", "Failing only", id="compare.failing_only"),
        follow_binding("compare"),
    ]
    #: the table's sorts, execution order first (``sorted`` is the table's ``sort_rows``:
    #: the rows without a number stay last in either direction)
    SORTS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        name: row_sort_key(name)
        for name in (ORDER, OP, TYPE, TENSOR, STATUS, *(c.name for c in METRIC_COLUMNS))
    }
    REDRAWN_BY: ClassVar[tuple[str, ...]] = ("failing_only",)

    sort: reactive[str] = reactive(ORDER)
    failing_only: reactive[bool] = reactive(False)
    """Only the rows that fail their lines."""

    class Opened(Message):
        """Enter on a row: show both tensors side by side (read off the UI thread)."""

        def __init__(self, row: CompareRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: what is compared (set by the app when it mounts, before the first redraw)
        self.compare: GoldenCompare | None = None
        self._table_version = -1
        self._divergence: Divergence | None = None
        self._counts = {FAIL: 0, PASS: 0, SKIP: 0}
        self._placed = False  # the cursor was put on the first divergent row once
        self._positions: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="compare-status", classes="status")
        yield from self.compose_list()
        yield Static(id="compare-row")

    # ------------------------------------------------------------ what is compared
    def content_version(self) -> object:
        compare = self.compare
        if compare is None:
            return None
        return (compare.table.version, compare.status)

    def tab_count(self, state: StoreState) -> str:
        if self.compare is None:
            return ""
        self._read_table()
        if self._counts[FAIL]:
            return f" ({self._counts[FAIL]}✗)"
        return " ✓" if self._counts[PASS] else ""

    def _read_table(self) -> None:
        """The counts and the first divergent operator, once per table version."""
        compare = self.compare
        if compare is None or compare.table.version == self._table_version:
            return
        table = compare.table
        self._table_version = table.version
        view = table.query()
        self._divergence, self._counts = view.first_divergent, dict(view.counts)
        # an operator's place in execution order (a live compare numbers operators as
        # their files arrive, which is not the order they ran in)
        self._positions = {}
        for row in view.rows:
            self._positions.setdefault(row.npu_dump, len(self._positions))
        self.vlist.clear_cache()  # rows may have been inserted in the middle (live)

    # ------------------------------------------------------------ ListView's part
    def source_rows(self) -> tuple[list[Any], int]:
        if self.compare is None:
            return [], 0
        return self.compare.table.rows(), self.compare.table.dropped

    def row_text(self, row: Any) -> str:
        return row_text(row) if isinstance(row, CompareRow) else ""

    @property
    def narrowed(self) -> bool:
        return self.failing_only

    def narrow(self, rows: list[Any]) -> list[Any]:
        return [r for r in rows if r.status == FAIL] if self.failing_only else rows

    def sorted(self, rows: Any) -> list[Any]:
        return sort_rows(rows, self.sort, self.sort_reverse)

    def _layout(self, width: int) -> tuple[bool, list[MetricColumn], int]:
        """(type column shown, metric columns, the tensor column's width)."""
        with_type = width >= TYPE_FROM
        metrics = metric_columns(width, with_type=with_type)
        used = CHROME + (1 + GAP) + (4 + GAP) + sum(c.width + GAP for c in metrics)
        if with_type:
            used += 10 + GAP
        # what the metrics leave, up to a name's usual length; the reason gets the rest
        tensor = max(TENSOR_MIN, min(48, width - used - GAP - 16))
        if width - used - tensor - GAP < 16:
            tensor = max(TENSOR_MIN, width - used - GAP)
        return with_type, metrics, tensor

    def columns(self, width: int) -> list[Column]:
        with_type, metrics, tensor = self._layout(width)
        out = [Column("", 1), Column("#", 4, right=True, sort=ORDER)]
        if with_type:
            out.append(Column("TYPE", 10, sort=TYPE))
        out.append(Column("TENSOR", tensor, sort=TENSOR))
        out += [Column(c.label, c.width, right=True, sort=c.name) for c in metrics]
        out.append(Column("REASON", 0, sort=STATUS))
        return out

    def render_row(self, row: Any, width: int) -> Text:
        r: CompareRow = row
        # the header's layout (the view's width), so the cells sit under their labels
        with_type, metrics, tensor = self._layout(self.width)
        bad = theme_style(self, "aclmon-bad", bold=True)
        good = theme_style(self, "aclmon-idle")
        dim = theme_style(self, "aclmon-dim")
        first = self._divergence is not None and same_tensor(self._divergence.row, r)
        text = Text(" ", no_wrap=True, overflow="ellipsis")
        mark = FIRST_DIVERGENT_MARK if first else MARK.get(r.status, "?")
        text.append(mark, style=bad if r.status == FAIL else good if r.status == PASS else dim)
        text.append(" " * GAP)
        text.append(f"{self._positions.get(r.npu_dump, r.index):>4}", style=dim)
        text.append(" " * GAP)
        if with_type:
            text.append(f"{middle(r.op_type or '?', 10):<10}")
            text.append(" " * GAP)
        name = r.tensor_index if r.role else r.npu_dump
        text.append(f"{middle(name, tensor):<{tensor}}", style=Style(bold=first))
        text.append(" " * GAP)
        if not r.values and r.reason:
            # nothing computed: the reason is what the row has to say
            text.append(r.reason, style=dim)
            return text
        for column in metrics:
            value = fit_number(r.metric(column.name), column.width)
            style = bad if column.name in r.failing else Style()
            text.append(f"{value:>{column.width}}", style=style)
            text.append(" " * GAP)
        if r.reason:
            text.append(r.reason, style=dim)
        return text

    def describe(self, text: Text, state: Any, dim: Style) -> None:
        compare = self.compare
        if compare is None:
            return
        counts, status = self._counts, compare.status
        total = sum(counts.values())
        text.append(f"{total} row(s)", style=Style(bold=True))
        if counts[FAIL]:
            text.append(f"  ·  {counts[FAIL]} fail", style=theme_style(self, "aclmon-bad"))
        text.append(f"  ·  {counts[PASS]} pass", style=dim)
        if counts[SKIP]:
            text.append(f"  ·  {counts[SKIP]} not judged", style=dim)
        if self._divergence is not None:
            row = self._divergence.row
            text.append(f"  ·  {FIRST_DIVERGENT_MARK} ", style=theme_style(self, "aclmon-bad"))
            text.append(f"{row.op_name} ({row.op_type})", style=Style(bold=True))
            text.append(f" {self.key('compare.divergent', 'd')}", style=dim)
        elif total and not status.busy:
            text.append("  ·  no first divergent operator", style=dim)
        if self.failing_only:
            text.append(f"  ·  failing only ({self.key('compare.failing_only', 'o')})", style=dim)
        text.append(self.filter_note(len(self._rows), self.match_count()), style=dim)
        text.append(self.sort_note(), style=dim)
        style = theme_style(self, "aclmon-bad") if status.error else dim
        text.append(f"  ·  {status.text}", style=style)

    # ------------------------------------------------------------ drawing
    def redraw(self) -> None:
        if self.store is None or self.compare is None or not self.is_mounted:
            return
        self._read_table()
        super().redraw()
        if not self._placed and self._rows and not self.compare.live:
            # a finished compare is read from where it goes wrong (else from the top)
            self._placed = True
            if self._divergence is None or not self._show(self._divergence.row):
                self.vlist.move_cursor_to(self._offset)
        self._show_row(self.vlist.cursor)

    def on_resize(self) -> None:
        super().on_resize()
        self.vlist.clear_cache()

    def _show_row(self, index: int) -> None:
        """Under the list: the highlighted row's tensor, and why it fails (or its reason)."""
        dim = theme_style(self, "aclmon-dim")
        row = self.compare_row_at(index)
        text = Text(no_wrap=True, overflow="ellipsis")
        if row is None:
            status = self.compare.status if self.compare is not None else None
            if status is not None and status.error:  # its two lines, where it is not cut
                assert self.compare is not None
                golden = self.compare.golden  # its path shortened: the reason must fit
                said = status.text.replace(golden, middle(golden, 32))
                lines = textwrap.wrap(said, max(20, self.width - 2), break_on_hyphens=False)
                text.append("\n".join(lines[:2]), style=theme_style(self, "aclmon-bad"))
            else:
                busy = status is not None and status.busy
                text.append("comparing…" if busy else "no rows", style=dim)
            self.query_one("#compare-row", Static).update(text)
            return
        text.append(row.tensor_index if row.role else row.npu_dump, style=Style(bold=True))
        text.append(f"  {row.op_type}  {row.shape_text}  {row.my_dtype}", style=dim)
        if row.golden_dtype != row.my_dtype:
            text.append(f" vs {row.golden_dtype}", style=dim)
        std = row.metric(m.STD)
        if std != m.NAN:
            text.append(f"  mean;std {std}", style=dim)
        text.append("\n")
        thresholds = self.compare.table.thresholds if self.compare is not None else None
        described = [
            thresholds.describe(name, row.metric(name))
            for name in row.failing
            if thresholds is not None and name in thresholds.lines
        ]
        if described:
            text.append("; ".join(described), style=theme_style(self, "aclmon-bad"))
            text.append("  ")
        if row.reason:
            text.append(row.reason, style=dim)
        elif not described:
            text.append(
                "passes every line" if row.status == PASS else "nothing to judge", style=dim
            )
        text.append(f"  ·  {self.key('list.open', 'Enter')} both tensors side by side", style=dim)
        self.query_one("#compare-row", Static).update(text)

    def compare_row_at(self, index: int) -> CompareRow | None:
        row = self.row_at(index)
        return row if isinstance(row, CompareRow) else None

    def selected_row(self) -> CompareRow | None:
        return self.compare_row_at(self.vlist.cursor)

    def on_virtual_list_highlighted(self, message: VirtualList.Highlighted) -> None:
        self._show_row(message.index)

    @on(VirtualList.Selected, "#compare-list")
    def _selected(self, message: VirtualList.Selected) -> None:
        message.stop()
        row = self.compare_row_at(message.index)
        if row is not None:
            self.vlist.set_follow(False)  # new rows must not move what is being read
            self.post_message(self.Opened(row))

    # ------------------------------------------------------------ keys
    def action_toggle_failing_only(self) -> None:
        self.failing_only = not self.failing_only

    def action_first_divergent(self) -> None:
        """The cursor to the first divergent operator's failing output."""
        self._read_table()
        divergence = self._divergence
        if divergence is None:
            fails = self._counts[FAIL]
            said = (
                f"no first divergent operator: {fails} row(s) fail, none with passing inputs"
                if fails
                else "no operator diverges"
            )
            self.notify(said, timeout=4)
            return
        if not self._show(divergence.row):
            self.set_filter("")  # hidden by the filter: show every row
            self._show(divergence.row)

    def _show(self, wanted: CompareRow) -> bool:
        for position, row in enumerate(self._rows):
            if isinstance(row, CompareRow) and same_tensor(row, wanted):
                self.vlist.move_cursor_to(self._offset + position)
                self.vlist.focus()
                self.call_after_refresh(self.vlist.scroll_to_cursor)
                return True
        return False
