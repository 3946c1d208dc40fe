"""The operator table of the Profiling view: one row per operator of a model on
a device, sortable by any column (``s`` cycles, ``r`` reverses, a click on a
header sorts by it, a second click reverses), scrollable with a cursor, the AI
Core metric columns the profiling data carries, and a line that says how many
rows lie below (and above) the pane. Columns that do not fit are dropped, least
important first; nothing wraps.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Hashable
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static

from aclmon.acl_constants import AICORE_METRICS
from aclmon.store import Store, StoreState
from aclmon.store.ops import METRIC_SORT, op_name_order, op_sort_key
from aclmon.store.state import OpKey, OpStats
from aclmon.tui import fmt
from aclmon.tui.columns import Cell, Column, Layout
from aclmon.tui.names import NameFitter
from aclmon.tui.style import theme_style
from aclmon.tui.views.base import show_text
from aclmon.tui.vlist import VirtualList

#: the operator name's column never gets narrower than this
OP_MIN = 26
#: a metric column's width at most (its label is shortened to fit)
METRIC_MAX = 11
#: label shortenings, in order: msprof's op_summary names are long
_SHORT = (
    ("(GB/s)", ""), ("(KB)", ""), ("_ratio", "%"), ("main_mem_", "mm_"), ("_main_memory", "_mm"),
    ("_read", "_rd"), ("_write", "_wr"), ("_datas", ""), ("_cache", ""), ("_exe", "_x"),
    ("bankgroup", "bg"), ("_cflt", ""), ("_bw_vector", "_v"), ("_bw_scalar", "_s"),
    ("_cube", ""), ("_bw", ""), ("_miss_allocate", "_miss"), ("fixpipe", "fixp"),
    ("_fp16", "16"), ("_fp32", "32"), ("_int32", "i32"), ("_int8", "i8"),
)  # fmt: skip


def metric_label(name: str) -> str:
    """A short header for an msprof op_summary column: ``aic_mac_ratio`` -> ``c.mac%``
    (``c.`` cube core, ``v.`` vector core)."""
    label = name
    for old, new in _SHORT:
        label = label.replace(old, new)
    if label.startswith(("aic_", "aiv_")):
        label = ("c." if label.startswith("aic_") else "v.") + label[4:]
    return label[:METRIC_MAX]


def metric_cell(name: str, value: float | None) -> str:
    if value is None:
        return "–"
    if name.endswith("ratio"):
        return f"{value * 100:.0f}%"
    if name.endswith("(GB/s)"):
        return f"{value:.1f}"
    return fmt.count(value)


def _device(o: OpStats) -> str:
    return str(o.device_id) if o.device_id >= 0 else "–"


def _model(o: OpStats) -> str:
    return o.model_name or (f"#{o.model_id}" if o.model_id >= 0 else "–")


#: what each fixed column (by its sort key) shows of an operator
CELLS: dict[str, Callable[[OpStats], str]] = {
    "op": lambda o: o.op_name,
    "total": lambda o: fmt.duration_us(o.total_us),
    "model": _model,
    "device": _device,
    "count": lambda o: fmt.count(o.count),
    "mean": lambda o: fmt.duration_us(o.mean_us),
    "max": lambda o: fmt.duration_us(o.max_us),
    "type": lambda o: o.op_type,
    "last": lambda o: fmt.duration_us(o.last_us),
    "min": lambda o: fmt.duration_us(o.min_us),
}
OPERATOR = Column("OPERATOR", 0, sort="op", least=OP_MIN)
#: the fixed columns, most important first (the order they are kept when narrow)
KEPT_FIRST = (
    Column("TOTAL", 8, True, "total"),
    Column("MODEL", 14, False, "model", cut="middle"),
    Column("DEV", 5, True, "device"),
    Column("COUNT", 7, True, "count"),
    Column("MEAN", 8, True, "mean"),
)
KEPT_LAST = (
    Column("MAX", 8, True, "max"),
    Column("TYPE", 14, False, "type"),
    Column("LAST", 8, True, "last"),
    Column("MIN", 8, True, "min"),
)
#: left-to-right order of the columns that fit (metrics after MAX)
ORDER = ("op", "type", "model", "device", "count", "total", "mean", "min", "max", "last")
#: the gap between two columns
GAP = 1


def _metric_column(name: str) -> Column:
    label = metric_label(name)
    return Column(label, len(label) + 2, True, METRIC_SORT + name)  # room for the sort arrow


def columns_for(width: int, metrics: list[str]) -> list[Column]:
    """The columns that fit ``width``, left to right: the operator's name first
    (it takes what is left), then the rest in :data:`ORDER`, metrics last."""
    candidates = [*KEPT_FIRST, *map(_metric_column, metrics), *KEPT_LAST]
    room = width - OP_MIN
    kept: list[Column] = []
    for column in candidates:
        if column.width + GAP <= room:
            kept.append(column)
            room -= column.width + GAP
    fixed = sorted(
        (c for c in kept if not c.sort.startswith(METRIC_SORT)), key=lambda c: ORDER.index(c.sort)
    )
    shown = [c for c in kept if c.sort.startswith(METRIC_SORT)]
    return [OPERATOR, *fixed, *shown]


class OpList(VirtualList):
    """The table's rows: a cursor, never following (the order is not arrival)."""

    def __init__(
        self,
        renderer: Callable[[int, int], Text],
        *,
        row_key: Callable[[int], Hashable] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(renderer, row_key=row_key, id=id)
        self.follow = False

    def set_follow(self, follow: bool) -> None:
        super().set_follow(False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Enter opens nothing here: it goes on to the view (which applies the checklist).
        return action != "select"

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._tell_table()

    def on_focus(self) -> None:
        self._tell_table()

    def on_blur(self) -> None:
        self._tell_table()

    def _tell_table(self) -> None:
        parent = self.parent
        if isinstance(parent, OpTable):
            parent.draw_more()


class OpTable(Vertical):
    """Operators of the store, sorted; the owner calls :meth:`show` with the store."""

    DEFAULT_CSS = """
    OpTable { height: 1fr; }
    OpTable > #ops-title { height: 1; padding: 0 1; }
    OpTable > #ops-more { height: 1; padding: 0 1; }
    OpTable > OpList { overflow-x: hidden; }
    """

    sort: reactive[str] = reactive("total")
    """The column the rows are sorted by (a key of Store.sorted_ops)."""
    reverse: reactive[bool] = reactive(False)
    """Sorted the other way round (smallest / Z first)."""
    readonly: bool = False
    """The viewer cannot start anything: hints name no key."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store: Store | None = None
        self.rows: list[OpStats] = []
        self.columns: list[Column] = []
        #: the columns placed, as the header and the rows draw them
        self.column_layout = Layout([], 0)
        self._spans: list[tuple[int, int, str]] = []
        self._metrics: list[str] = []
        #: the operators' names, fitted so that they stay told apart
        self.names = NameFitter()
        #: what the title, header and "more" lines hold (drawn again only when changed)
        self._drawn: dict[str, tuple[object, object]] = {}
        #: the rows' places in the order, sorted as :attr:`rows` (kept in step)
        self._ranks: list[_Rank] = []
        #: each row's rank and figures when last placed, by its key
        self._placed: dict[OpKey, tuple[_Rank, tuple[object, ...], OpStats]] = {}
        #: what the order was made for: (sort, reverse) of the store's operators
        self._ordered_for: tuple[str, bool] | None = None
        self._ordered_ops: object = None
        #: what the drawn lines depend on besides a row's figures (columns, names)
        self._layout_key: object = None

    def compose(self) -> ComposeResult:
        yield Static(id="ops-title")
        yield Static(id="ops-header", classes="colhead")
        yield OpList(self._render_row, row_key=self._row_key, id="ops-list")
        yield Static(id="ops-more")

    @property
    def oplist(self) -> OpList:
        return self.query_one(OpList)

    # ------------------------------------------------------------ sorting
    def watch_sort(self) -> None:
        self.show(self.store)

    def watch_reverse(self) -> None:
        self.show(self.store)

    def next_sort(self) -> None:
        """The next column to the right (the first after the last); the order restarts."""
        sorts = [c.sort for c in self.columns] or ["total"]
        index = sorts.index(self.sort) if self.sort in sorts else -1
        self.reverse = False
        self.sort = sorts[(index + 1) % len(sorts)]

    def sort_by(self, sort: str) -> None:
        """Sort by ``sort``; asked again for the column already sorted by, reverse it."""
        if sort == self.sort:
            self.reverse = not self.reverse
        else:
            self.reverse = False
            self.sort = sort

    @on(events.Click, "#ops-header")
    def _header_clicked(self, event: events.Click) -> None:
        x = event.x - 1  # the header's padding
        for start, end, sort in self._spans:
            if start <= x < end:
                self.sort_by(sort)
                return

    # ------------------------------------------------------------ drawing
    def show(self, store: Store | None) -> None:
        """Draw the store's operators (keeping the cursor on the same row)."""
        self.store = store
        if store is None or not self.is_mounted:
            return
        oplist = self.oplist
        width = max(OP_MIN, oplist.scrollable_content_region.width or (self.size.width - 1))
        metrics = list(store.state.op_metrics)
        self._metrics = metrics
        self.columns = columns_for(width, metrics)
        if self.sort.startswith(METRIC_SORT) and self.sort.removeprefix(METRIC_SORT) not in metrics:
            self.sort = "total"  # the metric group changed under the sort
            return
        selected = self._key(oplist.cursor)
        before = list(self.rows)
        changed = self._order(store.state)
        self.names = self.names.updated(o.op_name for o in self.rows)
        columns = [c._replace(cut=self.names.fit) if c.sort == "op" else c for c in self.columns]
        layout_key = (tuple(c._replace(cut="") for c in columns), width, self.names)
        if layout_key != self._layout_key:
            self._layout_key = layout_key
            self.column_layout = Layout(columns, width, indent=0, gap=GAP)
            oplist.clear_cache()
        elif changed or len(before) != len(self.rows):
            # a line is drawn again only where its row moved or its figures changed
            # (the list's cache is keyed by the row and its figures)
            moved = [
                i
                for i, o in enumerate(self.rows)
                if i >= len(before) or before[i] is not o or _key(o) in changed
            ]
            moved.extend(range(len(self.rows), len(before)))
            oplist.refresh_rows(moved)
        oplist.set_rows(0, len(self.rows))
        if selected is not None:
            index = next((i for i, o in enumerate(self.rows) if _key(o) == selected), None)
            if index is not None and index != oplist.cursor:
                oplist.move_cursor_to(index)
        self._draw_title()
        self._draw_header()
        self.draw_more()

    def _order(self, s: StoreState) -> set[OpKey]:
        """Bring :attr:`rows` into the table's order: only the operators whose figures
        changed are placed again (a new order is made when the sort or the store's
        operators themselves changed). Returns the keys of the rows placed again."""
        ordered_for = (self.sort, self.reverse)
        if ordered_for != self._ordered_for or s.ops is not self._ordered_ops:
            self._ordered_for = ordered_for
            self._ordered_ops = s.ops
            self._ranks = []
            self._placed = {}
        rank_of = _rank_maker(self.sort, self.reverse)
        placed = self._placed
        ranks = self._ranks
        changed: set[OpKey] = set()
        for key, o in s.ops.items():
            figures = _figures(o)
            known = placed.get(key)
            if known is not None and known[1] == figures and known[2] is o:
                continue
            changed.add(key)
            rank = rank_of(o)
            if known is not None:
                old = known[0]
                if old.key == rank.key:  # the same place: it stays
                    old.op = o
                    placed[key] = (old, figures, o)
                    continue
                del ranks[bisect_left(ranks, old)]
            insort(ranks, rank)
            placed[key] = (rank, figures, o)
        if len(placed) > len(s.ops):  # operators gone (a new store state)
            for key in [k for k in placed if k not in s.ops]:
                del ranks[bisect_left(ranks, placed.pop(key)[0])]
                changed.add(key)
        if changed:
            self.rows = [r.op for r in ranks]
        return changed

    def _row_key(self, index: int) -> Hashable:
        """What a drawn row depends on (with the layout, which clears the cache)."""
        if not 0 <= index < len(self.rows):
            return None
        o = self.rows[index]
        return (_key(o), _figures(o))

    def _key(self, index: int) -> OpKey | None:
        return _key(self.rows[index]) if 0 <= index < len(self.rows) else None

    def selected(self) -> OpStats | None:
        """The operator under the cursor."""
        index = self.oplist.cursor
        return self.rows[index] if 0 <= index < len(self.rows) else None

    def _draw_title(self) -> None:
        assert self.store is not None
        s = self.store.state
        dim = theme_style(self, "aclmon-dim")
        busy = theme_style(self, "aclmon-busy", bold=True)
        title = Text("OPERATORS  ", style=Style(bold=True), no_wrap=True, overflow="ellipsis")
        title.append(f"{s.op_timings_total} timings · {len(s.ops)} rows", style=dim)
        if s.op_timings_untracked:
            title.append(f" · {s.op_timings_untracked} of untracked operators", style=busy)
        if self._metrics:
            shown = sum(1 for c in self.columns if c.sort.startswith(METRIC_SORT))
            group = _group_name(s)
            units = [u for u in ("GB/s", "KB") if any(f"({u})" in m for m in self._metrics)]
            title.append(f" · AI Core {group}: c. cube core, v. vector core", style=dim)
            if units:
                title.append(f", in {' and '.join(units)}", style=dim)
            if shown < len(self._metrics):
                title.append(f" ({len(self._metrics) - shown} columns need more width)", style=dim)
        elif not s.ops:
            title.append(f" · none yet: {self._where_timings_come_from(s)}", style=dim)
        title.truncate(max(1, self.size.width - 2), overflow="ellipsis")
        show_text(self.query_one("#ops-title", Static), title, self._drawn)

    def _where_timings_come_from(self, s: StoreState) -> str:
        """Where the rows will come from, as the profiling state and the viewer allow."""
        prof = s.profiling
        if prof is not None and prof.running and not prof.subscribed:
            return "the profiling files' TASK_TIME / AICORE_METRICS fill it as they are written"
        files = "profiling to files with TASK_TIME / AICORE_METRICS"
        if self.readonly:
            return f"live operator timings or {files}, started by a viewer that may"
        return f"live operator timings (t), or {files}"

    def _draw_header(self) -> None:
        # the table's default order is the largest first: ▼ unless reversed
        text, self._spans = self.column_layout.header(
            self.sort,
            not self.reverse,
            style=theme_style(self, "aclmon-dim", bold=True),
            marked=theme_style(self, "footer-key-foreground", bold=True),
        )
        show_text(self.query_one("#ops-header", Static), text, self._drawn)

    def draw_more(self) -> None:
        """The line under the rows: how many lie below and above the pane, and the keys."""
        if not self.is_mounted:
            return
        oplist = self.oplist
        dim = theme_style(self, "aclmon-dim")
        bold = Style(bold=True)
        height = max(1, oplist.scrollable_content_region.height)
        top = round(oplist.scroll_y)
        below = max(0, len(self.rows) - top - height)
        text = Text(no_wrap=True, overflow="ellipsis")
        if below:
            text.append(f"↓ {below} more", style=bold)
        if top:
            text.append(("   " if below else "") + f"↑ {top} above", style=bold)
        if text:
            text.append("   ")
        where = "Tab: back to the checklist" if oplist.has_focus else "Tab: into the table"
        text.append(f"s sort · r reverse · click a header · {where}", style=dim)
        text.truncate(max(1, self.size.width - 2), overflow="ellipsis")
        show_text(self.query_one("#ops-more", Static), text, self._drawn)

    def _render_row(self, index: int, width: int) -> Text:
        o = self.rows[index] if 0 <= index < len(self.rows) else None
        if o is None:
            return Text("")
        dim = theme_style(self, "aclmon-dim")
        cells: dict[str, Cell] = {}
        for c in self.column_layout.columns:
            metric = c.sort.removeprefix(METRIC_SORT)
            if metric != c.sort:
                cells[c.cell_key] = metric_cell(metric, o.metric(metric))
            else:
                style = dim if c.sort in ("device", "type") else Style()
                cells[c.cell_key] = Text(CELLS[c.sort](o), style=style)
        return self.column_layout.row(cells)

    def on_resize(self) -> None:
        self.show(self.store)


def _key(o: OpStats) -> OpKey:
    return (o.device_id, o.model_id, o.op_name)


def _figures(o: OpStats) -> tuple[object, ...]:
    """Everything of an operator a row shows or sorts by."""
    return (
        o.count, o.total_us, o.max_us, o.min_us, o.last_us, o.metric_count,
        tuple(o.metric_sums.items()), o.model_name, o.op_type,
    )  # fmt: skip


class _Rank:
    """An operator's place in the table's order: by ``key`` (largest first for
    numbers, A to Z for names, turned round when ``reverse``), ties in the name
    order (never turned round), as :func:`aclmon.store.ops.sorted_ops` orders."""

    __slots__ = ("key", "op", "reverse", "tie")

    def __init__(self, key: Any, tie: tuple[str, int, int], reverse: bool, op: OpStats) -> None:
        self.key = key
        self.tie = tie
        self.reverse = reverse
        self.op = op

    def __lt__(self, other: _Rank) -> bool:
        a, b = (other.key, self.key) if self.reverse else (self.key, other.key)
        if a < b:
            return True
        if b < a:
            return False
        return self.tie < other.tie


def _rank_maker(sort: str, reverse: bool) -> Callable[[OpStats], _Rank]:
    sort_key = op_sort_key(sort)

    def rank(o: OpStats) -> _Rank:
        return _Rank(sort_key(o), op_name_order(o), reverse, o)

    return rank


def _group_name(s: StoreState) -> str:
    """The AI Core metric group the profiling session collects."""
    if s.profiling is None:
        return "metrics"
    return AICORE_METRICS.get(s.profiling.aicore_metrics, ("", "metrics"))[1]
