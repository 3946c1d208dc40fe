"""The Logs view: the job's CANN log lines (plog), its stdout/stderr and the
agent's own, in the order of the time each states (stdout by arrival), with a
level filter, a module filter, ``/`` search and follow; a time window around
an exception; Enter opens a line whole (and from there the exception or the
failed call it belongs to)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from aclmon import events as ev
from aclmon.acl_constants import error_name
from aclmon.store import Store
from aclmon.store.sections import LOGS
from aclmon.store.state import CallFailure, StoreState
from aclmon.tui import fmt
from aclmon.tui.columns import Cell, Column, content_width
from aclmon.tui.inert import LINE_LIMIT, inert_line
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.base import Command
from aclmon.tui.views.listview import ListView, follow_binding, sort_key_of
from aclmon.tui.vlist import VirtualList

#: the lowest level shown, cycled by ``v``.
LEVELS: tuple[str, ...] = ("all", "info", "warning", "error")
#: where lines come from, cycled by ``o``: the job's stdout/stderr (forwarded by
#: ``aclmon run --capture-output``), its CANN log (plog), the agent's own lines.
SOURCES: tuple[str, ...] = ("all", "job output", "CANN log", "agent")
#: each of :data:`SOURCES` in words (the palette's entries)
SOURCE_TITLES = (
    "every source",
    "the job's stdout/stderr",
    "the job's CANN log",
    "the agent's own lines",
)
#: the ``module`` of a forwarded stdout/stderr line
OUTPUT_MODULES = ("stdout", "stderr")
#: the LEVEL column's word for a level (five letters at most: it fits 80 columns)
LEVEL_WORDS = {"warning": "WARN", "error": "ERROR", "info": "INFO", "debug": "DEBUG",
               "event": "EVENT"}  # fmt: skip
#: list widths below which the time is its seconds and level and module are short
NARROW = 96


def source_of(line: ev.LogLine) -> str:
    """Which of :data:`SOURCES` a line comes from."""
    if line.module in OUTPUT_MODULES and not line.log_file:
        return "job output"
    if line.log_file or line.module:
        return "CANN log"
    return "agent"


_RANK = {"debug": 0, "info": 1, "event": 1, "warning": 2, "error": 3}
#: an exception and a log line belong together within this much time.
WINDOW_NS = 1_000_000_000
_NUMBER = {
    "task": re.compile(r"task[_ ]?id[=: ]+(\d+)", re.IGNORECASE),
    "stream": re.compile(r"stream[_ ]?id[=: ]+(\d+)", re.IGNORECASE),
    # the ACL code a runtime line ends with: "..., result = 107001 (ACL_ERROR_...)"
    "result": re.compile(r"\bresult ?= ?(\d+)"),
}


def line_time(line: ev.LogLine) -> int:
    """When it was logged: the time the log states, else when the agent read it."""
    return line.logged_ns or line.ts_ns


def mentioned(line: ev.LogLine, what: str) -> int | None:
    """The task or stream id a log line names (``task_id=1005``), if any."""
    found = _NUMBER[what].search(line.text)
    return int(found.group(1)) if found else None


def belongs_to(line: ev.LogLine, e: ev.AclException) -> bool:
    """A log line and an exception match by time (±1 s) and, where the line
    names them, by task id, stream id and error code."""
    if abs(line_time(line) - e.ts_ns) > WINDOW_NS:
        return False
    task, stream = mentioned(line, "task"), mentioned(line, "stream")
    code = mentioned(line, "result")
    return (
        (task is None or task == e.task_id)
        and (stream is None or stream == e.stream_id)
        and (code is None or code == e.error_code)
    )


def failure_of_line(line: ev.LogLine, failures: list[CallFailure]) -> CallFailure | None:
    """The failed call a runtime ERROR line is about: one that returned the code the
    line ends with (``result = N``), within ±1 s, on the stream it names (if it
    names one and the call's stream is known); the nearest in time. None when the
    line names no code or no call matches."""
    code = mentioned(line, "result")
    if code is None:
        return None
    stream, when = mentioned(line, "stream"), line_time(line)
    matches = [
        f
        for f in failures
        if f.event.ret == code
        and abs(f.event.ts_ns - when) <= WINDOW_NS
        and (stream is None or f.stream_id in (-1, stream))
    ]
    return min(matches, key=lambda f: abs(f.event.ts_ns - when), default=None)


def related_to_line(
    line: ev.LogLine, s: StoreState
) -> tuple[ev.AclException | None, CallFailure | None, str]:
    """What a log line is about and a sentence naming it: the exception it belongs
    to (a failed synchronize that reported it too), else the failed call it names
    (a line ending ``result = N``), else neither and ""."""
    exception = next((e for e in reversed(s.exceptions) if belongs_to(line, e)), None)
    if exception is not None:
        said = (
            f"the exception at {fmt.utc_time(exception.ts_ns)}: {error_name(exception.error_code)}"
            f" in {exception.op_name or 'an unnamed operator'} (task {exception.task_id})"
        )
        return exception, None, said
    failure = failure_of_line(line, list(s.call_failures))
    if failure is None:
        return None, None, ""
    call = failure.event
    said = f"the failed call acl.{call.api} at {fmt.utc_time(call.ts_ns)}: {error_name(call.ret)}"
    return None, failure, said


def lines_near(
    logs: list[ev.LogLine], e: ev.AclException | ev.CallFailed, pid: int | None
) -> list[ev.LogLine]:
    """The log lines of this process (``pid``; lines without one count) within ±1 s
    of an exception or a failed call, in the order they were logged (the job's
    stdout arrives at once, its plog lines at the tail's next poll)."""
    near = [
        line
        for line in logs
        if abs(line_time(line) - e.ts_ns) <= WINDOW_NS and (not pid or line.pid in (0, pid))
    ]
    return sorted(near, key=line_time)


class LogsView(ListView):
    """Log lines, newest last; follow, filters, search, a window around an exception."""

    FILTER_HINT = "text, module, file:line"
    SECTIONS = (LOGS,)
    BINDINGS: ClassVar[list[BindingType]] = [
        follow_binding("logs"),
        Binding("v", "next_level", "Level", id="logs.level"),
        Binding("M", "next_module", "Module", id="logs.module"),
        Binding("o", "next_source", "Source", show=False, id="logs.source"),
    ]
    SORTS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "time": line_time,
        "level": sort_key_of(lambda line: -_RANK.get(line.level, 1), line_time),
        "module": sort_key_of(lambda line: line.module, line_time),
        "pid": sort_key_of(lambda line: line.pid, line_time),
    }

    REDRAWN_BY = ("level", "source", "module", "window")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._in_order = True
        self._pids = 0
        self._module_width = 6

    class LineOpened(Message):
        """Enter on a log line: show it whole (and what it belongs to)."""

        def __init__(self, line: ev.LogLine) -> None:
            super().__init__()
            self.line = line

    level: reactive[str] = reactive("all")
    """The lowest level shown (one of :data:`LEVELS`)."""
    source: reactive[str] = reactive("all")
    """Only lines from this source (one of :data:`SOURCES`)."""
    module: reactive[str] = reactive("")
    """Only lines of this module ("" for all)."""
    window: reactive[tuple[int, int, int] | None] = reactive(None)
    """(centre ns, pid, task id): only the lines within ±1 s of an exception."""

    def compose(self) -> ComposeResult:
        yield Static(id="logs-status", classes="status")
        yield Static(id="logs-note")
        yield from self.compose_list()

    def tab_count(self, state: StoreState) -> str:
        return f" ({len(state.logs) + state.logs_dropped})" if state.logs else ""

    def palette_commands(self, store: Store) -> list[Command]:
        return [
            Command(f"Logs: {title}", partial(setattr, self, "source", source),
                    f"the Logs view showing {title}")
            for source, title in zip(SOURCES, SOURCE_TITLES, strict=True)
        ]  # fmt: skip

    def show_near(self, e: ev.AclException, pid: int) -> None:
        """Only the lines of process ``pid`` within ±1 s of this exception."""
        self.window = (e.ts_ns, pid, e.task_id)
        self.vlist.set_follow(False)

    # ------------------------------------------------------------ keys
    def action_next_level(self) -> None:
        self.level = LEVELS[(LEVELS.index(self.level) + 1) % len(LEVELS)]

    def action_next_source(self) -> None:
        self.source = SOURCES[(SOURCES.index(self.source) + 1) % len(SOURCES)]

    def action_next_module(self) -> None:
        modules = ["", *self._modules()]
        index = modules.index(self.module) if self.module in modules else 0
        self.module = modules[(index + 1) % len(modules)]

    def action_clear_filter(self) -> None:
        """Esc clears the ``/`` text, the source and the window around an exception."""
        if self.filter_text:
            super().action_clear_filter()
        self.window = None
        self.source = "all"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.filter_text or self.window or self.source != "all")
        return super().check_action(action, parameters)

    @on(VirtualList.Selected, "#logs-list")
    def _selected(self, message: VirtualList.Selected) -> None:
        message.stop()
        line = self.line_at(message.index)
        if line is not None:
            self.post_message(self.LineOpened(line))

    def on_virtual_list_follow_changed(self) -> None:
        self.draw_status()

    # ------------------------------------------------------------ rows
    def _modules(self) -> list[str]:
        if self.store is None:
            return []
        return sorted({line.module for line in self.store.state.logs if line.module})

    def line_at(self, index: int) -> ev.LogLine | None:
        return self.row_at(index)

    def source_rows(self) -> tuple[list[Any], int]:
        assert self.store is not None
        rows = list(self.store.state.logs)
        times = [line_time(line) for line in rows]
        self._in_order = all(a <= b for a, b in itertools.pairwise(times))
        return rows, self.store.state.logs_dropped

    @property
    def narrowed(self) -> bool:
        return (
            self.level != "all"
            or self.source != "all"
            or bool(self.module)
            or self.window is not None
        )

    def narrow(self, rows: list[Any]) -> list[Any]:
        lowest = LEVELS.index(self.level) if self.level != "all" else 0
        module, window = self.module, self.window
        out = []
        for line in rows:
            if _RANK.get(line.level, 1) < lowest or (module and line.module != module):
                continue
            if self.source != "all" and source_of(line) != self.source:
                continue
            if window is not None:
                centre, pid, _task = window
                if abs(line_time(line) - centre) > WINDOW_NS or (pid and line.pid not in (0, pid)):
                    continue
            out.append(line)
        return out

    @property
    def plain(self) -> bool:
        # the store keeps lines as they arrived: a plog line read after the stdout
        # line of the same moment is put back in its place
        return super().plain and self._in_order

    def order_rows(self, rows: list[Any]) -> list[Any]:
        if self.sort == self.default_sort and not self.sort_reverse:
            return sorted(rows, key=line_time)  # stable: lines of one time keep their order
        return super().order_rows(rows)

    def measure_rows(self, rows: list[Any]) -> None:
        self._pids = len({line.pid for line in rows if line.pid})
        self._module_width = content_width((line.module or "aclmon" for line in rows), 6, 10)

    def columns(self, width: int) -> list[Column]:
        narrow = width < NARROW
        return [
            Column("TIME", 6, sort="time", key="time", cut="start")
            if narrow
            else Column("TIME (UTC)", 12, sort="time", key="time", cut="start"),
            Column("LEVEL", 5, sort="level", key="level"),
            Column(
                "MODULE",
                min(self._module_width, 7 if narrow else 10),
                sort="module",
                key="module",
                cut="middle",
            ),
            # the process only when the lines come from more than one
            *([Column("PID", 7, right=True, sort="pid", key="pid")] if self._pids > 1 else []),
            Column("MESSAGE", 0, key="message"),
        ]

    def cells(self, row: Any) -> dict[str, Cell]:
        line: ev.LogLine = row
        dim = theme_style(self, "aclmon-dim")
        level = theme_style(self, "aclmon-bad", bold=True) if line.level == "error" else (
            theme_style(self, "aclmon-busy") if line.level == "warning" else Style()
        )  # fmt: skip
        # a row shows at most LINE_LIMIT characters of a line however long it is
        # (the detail, Enter, shows all of it)
        first = line.text[: LINE_LIMIT + 1].partition("\n")[0]
        message = Text(
            inert_line(first, LINE_LIMIT), style=level if line.level == "error" else Style()
        )
        more = line.text.count("\n")
        if more:
            message.append(f"  (+{more} lines)", style=dim)
        if line.location:
            message.append(f"  {middle(line.location, 40)}", style=dim)
        return {
            "time": Text(fmt.utc_time(line_time(line)), style=dim),
            "level": Text(LEVEL_WORDS.get(line.level, line.level.upper()), style=level),
            "module": Text(line.module or "aclmon", style=dim),
            "pid": Text(str(line.pid or ""), style=dim),
            "message": message,
        }

    def redraw(self) -> None:
        super().redraw()
        if self.store is not None and self.is_mounted:
            self._update_note(list(self.store.state.logs))

    def _update_note(self, logs: list[ev.LogLine]) -> None:
        """Showing the job's output when none came: say why there is none."""
        note = self.query_one("#logs-note", Static)
        missing = self.source == "job output" and not any(
            source_of(line) == "job output" for line in logs
        )
        note.display = missing
        if missing:
            note.update(
                Text(
                    "No stdout/stderr from this job. The agent forwards them only when the job"
                    " runs under `aclmon run --capture-output` (as `aclmon demo` does); a job"
                    " that does not keeps them to itself, and this view has only what the"
                    " agent says and the job's CANN log.",
                    style=theme_style(self, "aclmon-busy"),
                )
            )

    def describe(self, text: Text, s: StoreState, dim: Style) -> None:
        text.append(f"{len(s.logs) + s.logs_dropped} log line(s)", style=Style(bold=True))
        if s.logs_dropped:
            text.append(f"  ·  {s.logs_dropped} older dropped", style=dim)
        if self.level != "all":
            text.append(f"  ·  {self.level} and above ({self.key('logs.level', 'v')})", style=dim)
        if self.source != "all":
            text.append(f"  ·  {self.source} ({self.key('logs.source', 'o')})", style=dim)
        if self.module:
            text.append(f"  ·  module {self.module} ({self.key('logs.module', 'M')})", style=dim)
        if self.window is not None:
            centre, pid, task = self.window
            text.append(
                f"  ·  ±1 s of the exception at {fmt.utc_time(centre)} (task {task})"
                + (f", pid {pid}" if pid else ""),
                style=theme_style(self, "aclmon-busy"),
            )
        # how many are shown: said once, by the filter's note when there is one
        note = self.filter_note(len(self._rows), self.match_count())
        if not note and self.narrowed:
            note = f"  ·  {len(self._rows)} shown"
        text.append(note, style=dim)
        if self.filter_text or self.window is not None or self.source != "all":
            text.append("  (Esc clears)", style=dim)
        text.append(self.sort_note(), style=dim)
        if self.vlist.follow:
            text.append("  ·  following", style=theme_style(self, "aclmon-idle"))
        else:
            text.append(
                f"  ·  paused ({self.key('logs.follow', 'f')} follows)",
                style=theme_style(self, "aclmon-busy"),
            )
