"""The Exceptions view: a live tail of AI Core exceptions, filterable, sortable
and groupable; Enter (or a double click) asks for the detail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive

from aclmon import events as ev
from aclmon.acl_constants import error_name
from aclmon.store.state import StoreState
from aclmon.tui import fmt
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.listview import Column, ListView, follow_binding
from aclmon.tui.vlist import VirtualList


class Group(NamedTuple):
    """Identical exceptions (same operator, code and device) folded into one row."""

    first: ev.AclException
    last: ev.AclException
    size: int  # how many ("count" is a tuple method)


#: words of an error's name shortened, in this order, while it does not fit
ABBREVIATIONS = (
    ("EXCEPTION", "EXC"), ("OVER_FLOW", "OVF"), ("OVERFLOW", "OVF"), ("TIMEOUT", "TMO"),
    ("AICORE", "AIC"), ("VECTOR_CORE", "VEC"), ("INTERNAL", "INT"), ("ERROR", "ERR"),
    ("DEVICE", "DEV"), ("STREAM", "STRM"), ("MEMORY", "MEM"),
)  # fmt: skip


def short_error(code: int, width: int) -> str:
    """The error's name in ``width`` characters: whole when it fits, else without
    the ``ACL_ERROR_RT_``/``ACL_ERROR_`` prefix, then with its long words
    shortened (``AICORE_TRAP_EXCEPTION`` -> ``AIC_TRAP_EXC``), and only then cut
    with an ellipsis. The numeric code beside it identifies the error anyway."""
    name = error_name(code)
    if len(name) <= width:
        return name
    name = name.removeprefix("ACL_ERROR_RT_").removeprefix("ACL_ERROR_")
    for word, short in ABBREVIATIONS:
        if len(name) <= width:
            break
        name = name.replace(word, short)
    return name if len(name) <= width else middle(name, width) if width > 8 else name[:width]


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
    error = min(30, max(12, rest // 3))
    op = max(12, rest - error - 2)
    return Columns(op, op_type, error)


def last_of(row: ev.AclException | Group) -> ev.AclException:
    return row.last if isinstance(row, Group) else row


def by_fields(*fields: str) -> Callable[[Any], tuple[Any, ...]]:
    """Sort key of a row (an exception, or a group's last one): these fields, then time."""
    return lambda row: tuple(getattr(last_of(row), name) for name in (*fields, "ts_ns"))


class ExceptionsView(ListView):
    """Live tail of exceptions; Enter opens the detail."""

    FILTER_HINT = "operator, type, model, device, code or error"
    BINDINGS: ClassVar[list[BindingType]] = [
        follow_binding("exceptions"),
        Binding("c", "toggle_grouped", "Group", id="exceptions.group"),
        Binding("l", "logs", "Logs ±1 s", id="exceptions.logs"),
    ]
    SORTS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "time": lambda row: last_of(row).ts_ns,
        "device": by_fields("device_id"),
        "op": by_fields("op_name"),
        "code": by_fields("error_code"),
        "model": by_fields("model_name", "execution"),
    }

    REDRAWN_BY = ("grouped",)

    class _AboutException(Message):
        def __init__(self, exception: ev.AclException) -> None:
            super().__init__()
            self.exception = exception

    class Opened(_AboutException):
        """Enter or double click on an exception (``group`` of them folded): its detail."""

        def __init__(self, exception: ev.AclException, group: int = 1) -> None:
            super().__init__(exception)
            self.group = group

    class LogsRequested(_AboutException):
        """Show the log lines around this exception."""

    grouped: reactive[bool] = reactive(False)
    """Identical exceptions (operator, code, device) as one row with a count."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._total_when_left = 0

    def tab_count(self, state: StoreState) -> str:
        return f" ({state.exceptions_total})" if state.exceptions_total else ""

    @property
    def narrowed(self) -> bool:
        return self.grouped

    # ------------------------------------------------------------ keys
    def action_toggle_grouped(self) -> None:
        self.grouped = not self.grouped

    def action_logs(self) -> None:
        row = self.row_at(self.vlist.cursor)
        if row is not None:
            self.post_message(self.LogsRequested(last_of(row)))

    @on(VirtualList.Selected, "#exceptions-list")
    def _selected(self, message: VirtualList.Selected) -> None:
        message.stop()
        row = self.row_at(message.index)
        if isinstance(row, Group):
            self.post_message(self.Opened(row.last, row.size))
        elif row is not None:
            self.post_message(self.Opened(row))

    def on_virtual_list_follow_changed(self, message: VirtualList.FollowChanged) -> None:
        if not message.follow and self.store is not None:
            self._total_when_left = self.store.state.exceptions_total
        self.draw_status()

    # ------------------------------------------------------------ rows
    def exception_at(self, index: int) -> ev.AclException | None:
        row = self.row_at(index)
        return None if row is None else last_of(row)

    def source_rows(self) -> tuple[list[Any], int]:
        assert self.store is not None
        # One copy per refresh: deque indexing is O(n) away from the ends.
        return list(self.store.state.exceptions), self.store.state.exceptions_dropped

    def row_text(self, row: Any) -> str:
        return exception_text(last_of(row))

    def order_rows(self, rows: list[Any]) -> list[Any]:
        if self.grouped:
            groups: dict[tuple[str, int, int], Group] = {}
            for e in rows:
                key = (e.op_name, e.error_code, e.device_id)
                found = groups.get(key)
                groups[key] = (
                    Group(e, e, 1) if found is None else Group(found.first, e, found.size + 1)
                )
            rows = list(groups.values())
        return self.sorted(rows)

    def columns(self, width: int) -> list[Column]:
        c = columns_for(width - (7 if self.grouped else 0))  # the COUNT column
        return [
            Column("TIME (UTC)", 12, sort="time"),
            Column("DEV", 3, right=True, sort="device"),
            Column("STREAM", 6, right=True),
            Column("TASK", 6, right=True),
            Column("CODE", 6, right=True, sort="code"),
            *([Column("COUNT", 5, right=True)] if self.grouped else []),
            # the model and its run follow the operator's name in the rows
            *(
                [Column("OP NAME", 7, sort="op"), Column("MODEL", c.op - 9, sort="model")]
                if c.op >= 24
                else [Column("OP NAME", c.op, sort="op")]
            ),
            *([Column("OP TYPE", c.op_type)] if c.op_type else []),
            Column("ERROR", 0),
        ]

    def describe(self, text: Text, s: StoreState, dim: Style) -> None:
        text.append(f"{s.exceptions_total} exception(s)", style=Style(bold=True))
        if s.exceptions_dropped:
            text.append(
                f"  ·  {s.exceptions_dropped} older dropped (keeping {s.exception_limit})",
                style=dim,
            )
        text.append(self.filter_note(self._shown_count(), self.match_count()), style=dim)
        if self.grouped:
            text.append(f"  ·  {len(self._rows)} group(s)", style=dim)
        text.append(self.sort_note(), style=dim)
        if self.vlist.follow and self.plain:
            text.append("  ·  following", style=theme_style(self, "aclmon-idle"))
        elif self.plain:
            new = s.exceptions_total - self._total_when_left
            text.append("  ·  paused", style=theme_style(self, "aclmon-busy"))
            if new > 0:
                text.append(f"  ·  {new} new", style=theme_style(self, "aclmon-bad", bold=True))
            text.append(f"  ({self.key('exceptions.follow', 'f')} or End to follow)", style=dim)

    def _shown_count(self) -> int:
        return sum(r.size if isinstance(r, Group) else 1 for r in self._rows)

    def render_row(self, row: Any, width: int) -> Text:
        e, count = (row.last, row.size) if isinstance(row, Group) else (row, 1)
        c = columns_for(width - (7 if self.grouped else 0))
        dim = theme_style(self, "aclmon-dim")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {fmt.utc_time(e.ts_ns):<12}  ", style=dim)
        text.append(f"{e.device_id:>3}  {e.stream_id:>6}  {e.task_id:>6}  {e.error_code:>6}  ")
        if self.grouped:
            text.append(f"{'×' + str(count):>5}  ", style=Style(bold=count > 1))
        # the model and which of its executions ("run", as the models list says) raised it
        run = fmt.model_run(e.model_name, e.execution) or "–"  # no model known: said
        if run and c.op - len(run) - 2 >= 12:
            name = middle(e.op_name, c.op - len(run) - 2)
            text.append(name, style=Style(bold=True))
            text.append(f"  {run}".ljust(c.op - len(name)) + "  ", style=dim)
        else:
            text.append(f"{middle(e.op_name, c.op):<{c.op}}  ", style=Style(bold=True))
        if c.op_type:
            text.append(f"{middle(e.op_type or '–', c.op_type):<{c.op_type}}  ")
        text.append(short_error(e.error_code, c.error), style=theme_style(self, "aclmon-bad"))
        return text
