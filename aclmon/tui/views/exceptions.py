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
from aclmon.store.sections import EXCEPTIONS
from aclmon.store.state import StoreState
from aclmon.tui import fmt
from aclmon.tui.columns import Cell, Column, content_width
from aclmon.tui.names import NameFitter
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.listview import ListView, follow_binding
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


def short_error(name: str, width: int) -> str:
    """An error's name in ``width`` characters: whole when it fits, else without
    the ``ACL_ERROR_RT_``/``ACL_ERROR_`` prefix, then with its long words
    shortened (``AICORE_TRAP_EXCEPTION`` -> ``AIC_TRAP_EXC``), and only then cut
    with an ellipsis."""
    if len(name) <= width:
        return name
    name = name.removeprefix("ACL_ERROR_RT_").removeprefix("ACL_ERROR_")
    for word, short in ABBREVIATIONS:
        if len(name) <= width:
            break
        name = name.replace(word, short)
    return name if len(name) <= width else middle(name, width) if width > 8 else name[:width]


def cut_model_run(value: str, width: int) -> str:
    """ "bert_base_seq128 run 60" in ``width``: the model's name is cut, its run kept."""
    name, found, run = value.rpartition(" run ")
    tail = f" run {run}"
    if not found or len(tail) + 2 > width:
        return middle(value, width)
    return name[: width - len(tail) - 1] + "…" + tail


def error_cell(code: int) -> str:
    """The ERROR column's value: the code's name; for an exception known only from
    its dump (which records no code), where it comes from."""
    return error_name(code) if code else FROM_A_DUMP


#: the ERROR column of an exception known only from its exception dump
FROM_A_DUMP = "from a dump"


#: list widths below which time, stream and task take less room (MEDIUM) and
#: the model's column is narrower (NARROW)
NARROW = 96
MEDIUM = 136
#: the operator's name is not made narrower than this while another column can go
OP_LEAST = 26


def last_of(row: ev.AclException | Group) -> ev.AclException:
    return row.last if isinstance(row, Group) else row


def by_fields(*fields: str) -> Callable[[Any], tuple[Any, ...]]:
    """Sort key of a row (an exception, or a group's last one): these fields, then time."""
    return lambda row: tuple(getattr(last_of(row), name) for name in (*fields, "ts_ns"))


class ExceptionsView(ListView):
    """Live tail of exceptions; Enter opens the detail."""

    FILTER_HINT = "what the columns show: time, operator, model, code…"
    SECTIONS = (EXCEPTIONS,)
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
        #: the operator names of the rows, fitted so that they stay told apart
        self.names = NameFitter()
        self._widths = {"model": 5, "op_type": 7, "error": 5, "ids": 9}

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

    def measure_rows(self, rows: list[Any]) -> None:
        exceptions = [last_of(row) for row in rows]
        # fitted among every exception's name, not only those shown: a filter or a
        # grouping does not change how a name reads
        assert self.store is not None
        self.names = self.names.updated(e.op_name for e in self.store.state.exceptions)
        runs = {(e.model_name, e.execution) for e in exceptions}
        self._widths = {
            "model": content_width((fmt.model_run(*run) or "–" for run in runs), 5, 24),
            "op_type": content_width((e.op_type or "–" for e in exceptions), 7, 16),
            "error": content_width((error_cell(e.error_code) for e in exceptions), 5, 30),
            "ids": content_width((f"{e.stream_id}/{e.task_id}" for e in exceptions), 9, 13),
        }

    def columns(self, width: int) -> list[Column]:
        w = self._widths
        narrow, medium = width < NARROW, width < MEDIUM
        if medium:  # "18.862": the time to its seconds; stream and task in one column
            time = Column("TIME", 6, sort="time", key="time", cut="start")
            ids = [Column("STRM/TASK", w["ids"], right=True, key="ids")]
        else:
            time = Column("TIME (UTC)", 12, sort="time", key="time", cut="start")
            ids = [Column("STREAM", 6, right=True, key="stream"),
                   Column("TASK", 6, right=True, key="task")]  # fmt: skip
        return [
            time,
            Column("DEV", 3, right=True, sort="device", key="device"),
            *ids,
            Column("CODE", 6, right=True, sort="code", key="code"),
            *([Column("COUNT", 5, right=True, key="count")] if self.grouped else []),
            # the name keeps room for a layer and a part (…/layer_11/…/query/MatMul):
            # the error's name gives way first, then the type (the code stays)
            Column("OP NAME", 0, sort="op", key="op", cut=self.names.fit, least=OP_LEAST),
            Column(
                "MODEL",
                min(w["model"], 15 if narrow else 18 if medium else 24),
                sort="model",
                key="model",
                cut=cut_model_run,
            ),
            *([Column("OP TYPE", w["op_type"], key="op_type", drop=2)] if not medium else []),
            Column(
                "ERROR", min(w["error"], 12 if medium else 20), key="error", cut=short_error, drop=1
            ),
        ]

    def cells(self, row: Any) -> dict[str, Cell]:
        e, count = (row.last, row.size) if isinstance(row, Group) else (row, 1)
        dim = theme_style(self, "aclmon-dim")
        stream = "–" if e.stream_id < 0 else str(e.stream_id)
        return {
            "time": Text(fmt.utc_time(e.ts_ns), style=dim),
            "device": str(e.device_id) if e.device_id >= 0 else "–",
            "stream": stream,
            "task": str(e.task_id),
            "ids": f"{stream}/{e.task_id}",
            "code": str(e.error_code) if e.error_code else "–",
            "count": Text(f"×{count}", style=Style(bold=count > 1)),
            "op": Text(e.op_name, style=Style(bold=True)),
            # the model and which of its executions ("run", as the models list says) raised it
            "model": Text(fmt.model_run(e.model_name, e.execution) or "–", style=dim),
            "op_type": e.op_type or "–",
            "error": Text(error_cell(e.error_code), style=theme_style(self, "aclmon-bad")),
        }

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
