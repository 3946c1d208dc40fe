"""The Exceptions view: a live tail of AI Core exceptions, filterable, sortable
and groupable; Enter (or a double click) asks for the detail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from aclmon import events as ev
from aclmon.acl_constants import error_name
from aclmon.tui import fmt
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.base import View
from aclmon.tui.views.filterbar import FilterBar
from aclmon.tui.vlist import VirtualList

#: sort orders ``s`` cycles through (the first is arrival order, the only one that follows).
SORTS: tuple[str, ...] = ("time", "op", "code", "device")


class Group(NamedTuple):
    """Identical exceptions (same operator, code and device) folded into one row."""

    first: ev.AclException
    last: ev.AclException
    count: int


def short_error(code: int, width: int) -> str:
    """The error's name, without the ``ACL_ERROR_RT_``/``ACL_ERROR_`` prefix when narrow."""
    name = error_name(code)
    if len(name) > width:
        name = name.removeprefix("ACL_ERROR_RT_").removeprefix("ACL_ERROR_")
    return name[:width]


def exception_text(e: ev.AclException) -> str:
    """What ``/`` matches an exception against."""
    return (
        f"{e.op_name} {e.op_type} {e.model_name} dev{e.device_id} device {e.device_id} {e.error_code} "
        f"{error_name(e.error_code)} stream {e.stream_id} task {e.task_id}"
    ).lower()


class Columns(NamedTuple):
    op: int
    op_type: int
    error: int


def columns_for(width: int) -> Columns:
    """Column widths at ``width``: the operator's name comes before the error's
    name (the numeric code already identifies the error), and gets the most room."""
    rest = max(0, width - 46)  # time, dev, stream, task, code and the gaps
    op_type = 16 if width >= 120 else 0
    rest -= op_type + (2 if op_type else 0)
    error = min(30, max(10, rest // 3))
    op = max(12, rest - error - 2)
    return Columns(op, op_type, error)


class ExceptionsView(View):
    """Live tail of exceptions; Enter opens the detail."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "toggle_follow", "Follow", id="exceptions.follow"),
        Binding("slash", "filter", "Filter", id="exceptions.filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="exceptions.clear"),
        Binding("c", "toggle_grouped", "Group", id="exceptions.group"),
        Binding("s", "next_sort", "Sort", id="exceptions.sort"),
        Binding("l", "logs", "Logs ±1 s", id="exceptions.logs"),
    ]

    class Opened(Message):
        """Enter or double click on an exception: show its detail."""

        def __init__(self, exception: ev.AclException, group: int = 1) -> None:
            super().__init__()
            self.exception = exception
            self.group = group

    class LogsRequested(Message):
        """Show the log lines around this exception."""

        def __init__(self, exception: ev.AclException) -> None:
            super().__init__()
            self.exception = exception

    filter_text: reactive[str] = reactive("")
    """Only rows whose operator, type, device, code or error contain this (any case)."""
    grouped: reactive[bool] = reactive(False)
    """Identical exceptions (operator, code, device) as one row with a count."""
    sort: reactive[str] = reactive("time")
    """Row order: one of :data:`SORTS`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: list[ev.AclException | Group] = []
        self._offset = 0
        self._total_when_left = 0
        self._head_spans: list[tuple[int, int, str]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="exceptions-status", classes="status")
        yield Static(id="exceptions-header", classes="colhead")
        yield VirtualList(self._render_row, id="exceptions-list")
        yield FilterBar("filter: operator, type, device, code or error", id="exceptions-filter")

    @property
    def vlist(self) -> VirtualList:
        return self.query_one("#exceptions-list", VirtualList)

    def on_focus(self) -> None:
        self.vlist.focus()

    def on_resize(self) -> None:
        self._draw_header()

    # ------------------------------------------------------------ state
    def watch_filter_text(self) -> None:
        self._rebuild()

    def watch_grouped(self) -> None:
        self._rebuild()

    def watch_sort(self) -> None:
        self._rebuild()

    def _rebuild(self) -> None:
        if self.store is None:
            return
        self.vlist.clear_cache()
        self.redraw()

    @property
    def plain(self) -> bool:
        """Rows are the store's ring as is (absolute numbering, follow works)."""
        return not self.filter_text and not self.grouped and self.sort == "time"

    # ------------------------------------------------------------ keys
    def action_toggle_follow(self) -> None:
        vlist = self.vlist
        if vlist.follow:
            vlist.follow = False
            self._total_when_left = self.store.state.exceptions_total if self.store else 0
        else:
            vlist.follow = True
            vlist.action_last()
        self._update_status()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_clear_filter(self) -> None:
        bar = self.query_one(FilterBar)
        bar.action_clear()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.filter_text)
        return True

    def action_toggle_grouped(self) -> None:
        self.grouped = not self.grouped

    def action_next_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]

    def action_logs(self) -> None:
        row = self.row_at(self.vlist.cursor)
        if row is not None:
            self.post_message(self.LogsRequested(row.last if isinstance(row, Group) else row))

    @on(FilterBar.Changed, "#exceptions-filter")
    def _filter_changed(self, message: FilterBar.Changed) -> None:
        self.filter_text = message.value.strip().lower()

    @on(FilterBar.Done, "#exceptions-filter")
    def _filter_done(self) -> None:
        self.vlist.focus()

    @on(VirtualList.Selected, "#exceptions-list")
    def _selected(self, message: VirtualList.Selected) -> None:
        message.stop()
        row = self.row_at(message.index)
        if isinstance(row, Group):
            self.post_message(self.Opened(row.last, row.count))
        elif row is not None:
            self.post_message(self.Opened(row))

    def on_virtual_list_follow_changed(self, message: VirtualList.FollowChanged) -> None:
        if not message.follow and self.store is not None:
            self._total_when_left = self.store.state.exceptions_total
        self._update_status()

    # ------------------------------------------------------------ rows
    def row_at(self, index: int) -> ev.AclException | Group | None:
        row = index - self._offset
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def exception_at(self, index: int) -> ev.AclException | None:
        row = self.row_at(index)
        return row.last if isinstance(row, Group) else row

    def redraw(self) -> None:
        if self.store is None:
            return
        s = self.store.state
        # One copy per refresh: deque indexing is O(n) away from the ends.
        exceptions = list(s.exceptions)
        if self.plain:
            self._rows = list(exceptions)
            self._offset = s.exceptions_dropped
        else:
            wanted = self.filter_text
            chosen = (
                [e for e in exceptions if wanted in exception_text(e)] if wanted else exceptions
            )
            rows: list[ev.AclException | Group] = []
            if self.grouped:
                groups: dict[tuple[str, int, int], Group] = {}
                for e in chosen:
                    key = (e.op_name, e.error_code, e.device_id)
                    found = groups.get(key)
                    groups[key] = (
                        Group(e, e, 1) if found is None else Group(found.first, e, found.count + 1)
                    )
                rows = list(groups.values())
            else:
                rows = list(chosen)
            rows.sort(key=_sort_key(self.sort))
            self._rows = rows
            self._offset = 0
            self.vlist.clear_cache()  # row numbers mean other rows after a change
        self.vlist.set_rows(self._offset, len(self._rows))
        self._draw_header()
        self._update_status()

    def _draw_header(self) -> None:
        width = self.width
        c = columns_for(width)
        arrow = {s: (" ▼" if self.sort == s and s != "time" else "") for s in SORTS}
        parts = [
            (f" {'TIME (UTC)':<12}  ", "time"),
            (f"{'DEV' + arrow['device']:>3}  ", "device"),
            (f"{'STREAM':>6}  {'TASK':>6}  ", ""),
            (f"{'CODE' + arrow['code']:>6}  ", "code"),
            (f"{'COUNT':>5}  " if self.grouped else "", ""),
            (f"{('OP NAME' + arrow['op'])[: c.op]:<{c.op}}  ", "op"),
            (f"{'OP TYPE':<{c.op_type}}  " if c.op_type else "", ""),
            ("ERROR", ""),
        ]
        text = Text(style="bold", no_wrap=True, overflow="ellipsis")
        spans = []
        for label, sort in parts:
            start = len(text)
            text.append(label)
            if sort:
                spans.append((start, len(text), sort))
        self._head_spans = spans
        self.query_one("#exceptions-header", Static).update(text)

    def on_click(self, event: events.Click) -> None:
        header = self.query_one("#exceptions-header", Static)
        if event.widget is not header:
            return
        for start, end, sort in self._head_spans:
            if start <= event.x < end:
                self.sort = sort
                return

    def _update_status(self) -> None:
        if self.store is None:
            return
        s = self.store.state
        dim = theme_style(self, "aclmon-dim")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{s.exceptions_total} exception(s)", style=Style(bold=True))
        if s.exceptions_dropped:
            text.append(
                f"  ·  {s.exceptions_dropped} older dropped (keeping {s.exception_limit})",
                style=dim,
            )
        if self.filter_text:
            text.append(f"  ·  filter “{self.filter_text}”: {self._shown_count()} shown", style=dim)
        if self.grouped:
            text.append(f"  ·  {len(self._rows)} group(s)", style=dim)
        if self.sort != "time":
            text.append(f"  ·  sorted by {self.sort}", style=dim)
        if self.vlist.follow and self.plain:
            text.append("  ·  following", style=theme_style(self, "aclmon-idle"))
        elif self.plain:
            new = s.exceptions_total - self._total_when_left
            text.append("  ·  paused", style=theme_style(self, "aclmon-busy"))
            if new > 0:
                text.append(f"  ·  {new} new", style=theme_style(self, "aclmon-bad", bold=True))
            text.append(f"  ({self.key('exceptions.follow', 'f')} or End to follow)", style=dim)
        self.query_one("#exceptions-status", Static).update(text)

    def _shown_count(self) -> int:
        return sum(r.count if isinstance(r, Group) else 1 for r in self._rows)

    def _render_row(self, index: int, width: int) -> Text:
        row = self.row_at(index)
        if row is None:
            return Text("")
        e, count = (row.last, row.count) if isinstance(row, Group) else (row, 1)
        c = columns_for(width)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {fmt.utc_time(e.ts_ns):<12}  ", style=theme_style(self, "aclmon-dim"))
        text.append(f"{e.device_id:>3}  {e.stream_id:>6}  {e.task_id:>6}  {e.error_code:>6}  ")
        if self.grouped:
            text.append(f"{'×' + str(count):>5}  ", style=Style(bold=count > 1))
        # the model and which of its executions ("run", as the models list says) raised it
        run = (
            (f"{e.model_name} run {e.execution}" if e.execution else e.model_name)
            if e.model_name
            else "–"  # no model known: said, not left blank
        )
        room = c.op - len(run) - 2
        if run and room >= 12:
            name = middle(e.op_name, room)
            text.append(name, style=Style(bold=True))
            text.append(
                f"  {run}".ljust(c.op - len(name)) + "  ", style=theme_style(self, "aclmon-dim")
            )
        else:
            text.append(f"{middle(e.op_name, c.op):<{c.op}}  ", style=Style(bold=True))
        if c.op_type:
            text.append(f"{middle(e.op_type or '–', c.op_type):<{c.op_type}}  ")
        text.append(short_error(e.error_code, c.error), style=theme_style(self, "aclmon-bad"))
        return text


def _sort_key(sort: str) -> Callable[[Any], Any]:
    def last(row: Any) -> ev.AclException:
        return row.last if isinstance(row, Group) else row

    if sort == "op":
        return lambda r: (last(r).op_name, last(r).ts_ns)
    if sort == "code":
        return lambda r: (last(r).error_code, last(r).ts_ns)
    if sort == "device":
        return lambda r: (last(r).device_id, last(r).ts_ns)
    return lambda r: last(r).ts_ns
