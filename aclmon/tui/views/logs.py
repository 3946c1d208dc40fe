"""The Logs view: the job's CANN log lines (plog) and the agent's own, with a
level filter, a module filter, ``/`` search and follow; a time window around
an exception; Enter on an ERROR line asks for the exception or the failed call
it belongs to."""

from __future__ import annotations

import re
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
from aclmon.store.state import CallFailure
from aclmon.tui import fmt
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.base import View
from aclmon.tui.views.filterbar import FilterBar
from aclmon.tui.vlist import VirtualList

#: the lowest level shown, cycled by ``v``.
LEVELS: tuple[str, ...] = ("all", "info", "warning", "error")
#: where lines come from, cycled by ``o``: the job's stdout/stderr (forwarded by
#: ``aclmon run --capture-output``), its CANN log (plog), the agent's own lines.
SOURCES: tuple[str, ...] = ("all", "job output", "CANN log", "agent")
#: the ``module`` of a forwarded stdout/stderr line
OUTPUT_MODULES = ("stdout", "stderr")


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


def lines_near(
    logs: list[ev.LogLine], e: ev.AclException | ev.CallFailed, pid: int | None
) -> list[ev.LogLine]:
    """The log lines of this process (``pid``; lines without one count) within ±1 s
    of an exception or a failed call."""
    return [
        line
        for line in logs
        if abs(line_time(line) - e.ts_ns) <= WINDOW_NS and (not pid or line.pid in (0, pid))
    ]


class LogsView(View):
    """Log lines, newest last; follow, filters, search, a window around an exception."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "toggle_follow", "Follow", id="logs.follow"),
        Binding("slash", "filter", "Search", id="logs.filter"),
        Binding("v", "next_level", "Level", id="logs.level"),
        Binding("M", "next_module", "Module", id="logs.module"),
        Binding("o", "next_source", "Source", show=False, id="logs.source"),
        Binding("escape", "clear", "Clear", show=False, id="logs.clear"),
    ]

    class ExceptionWanted(Message):
        """Enter on a log line: show the exception it belongs to, if any."""

        def __init__(self, line: ev.LogLine) -> None:
            super().__init__()
            self.line = line

    level: reactive[str] = reactive("all")
    """The lowest level shown (one of :data:`LEVELS`)."""
    source: reactive[str] = reactive("all")
    """Only lines from this source (one of :data:`SOURCES`)."""
    module: reactive[str] = reactive("")
    """Only lines of this module ("" for all)."""
    filter_text: reactive[str] = reactive("")
    """Only lines containing this (any case)."""
    window: reactive[tuple[int, int, int] | None] = reactive(None)
    """(centre ns, pid, task id): only the lines within ±1 s of an exception."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: list[ev.LogLine] = []
        self._offset = 0

    def compose(self) -> ComposeResult:
        yield Static(id="logs-status", classes="status")
        yield Static(id="logs-note")
        yield Static(id="logs-header", classes="colhead")
        yield VirtualList(self._render_row, id="logs-list")
        yield FilterBar("search: text, module, file:line", id="logs-filter")

    @property
    def vlist(self) -> VirtualList:
        return self.query_one("#logs-list", VirtualList)

    def on_focus(self) -> None:
        self.vlist.focus()

    def watch_level(self) -> None:
        self._rebuild()

    def watch_source(self) -> None:
        self._rebuild()

    def watch_module(self) -> None:
        self._rebuild()

    def watch_filter_text(self) -> None:
        self._rebuild()

    def watch_window(self) -> None:
        self._rebuild()

    def _rebuild(self) -> None:
        if self.store is not None:
            self.vlist.clear_cache()
            self.redraw()

    def show_near(self, e: ev.AclException, pid: int) -> None:
        """Only the lines of process ``pid`` within ±1 s of this exception."""
        self.window = (e.ts_ns, pid, e.task_id)
        self.vlist.set_follow(False)

    # ------------------------------------------------------------ keys
    def action_toggle_follow(self) -> None:
        vlist = self.vlist
        vlist.set_follow(not vlist.follow)
        if vlist.follow:
            vlist.action_last()
        self._update_status()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_next_level(self) -> None:
        self.level = LEVELS[(LEVELS.index(self.level) + 1) % len(LEVELS)]

    def action_next_source(self) -> None:
        self.source = SOURCES[(SOURCES.index(self.source) + 1) % len(SOURCES)]

    def action_next_module(self) -> None:
        modules = ["", *self._modules()]
        index = modules.index(self.module) if self.module in modules else 0
        self.module = modules[(index + 1) % len(modules)]

    def action_clear(self) -> None:
        if self.filter_text:
            self.query_one(FilterBar).action_clear()
        self.window = None
        self.source = "all"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear":
            return bool(self.filter_text or self.window or self.source != "all")
        return True

    @on(FilterBar.Changed, "#logs-filter")
    def _filter_changed(self, message: FilterBar.Changed) -> None:
        self.filter_text = message.value.strip().lower()

    @on(FilterBar.Done, "#logs-filter")
    def _filter_done(self) -> None:
        self.vlist.focus()

    @on(VirtualList.Selected, "#logs-list")
    def _selected(self, message: VirtualList.Selected) -> None:
        message.stop()
        line = self.line_at(message.index)
        if line is not None:
            self.post_message(self.ExceptionWanted(line))

    def on_virtual_list_follow_changed(self) -> None:
        self._update_status()

    # ------------------------------------------------------------ rows
    def _modules(self) -> list[str]:
        if self.store is None:
            return []
        return sorted({line.module for line in self.store.state.logs if line.module})

    def line_at(self, index: int) -> ev.LogLine | None:
        row = index - self._offset
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def _wanted(self, line: ev.LogLine) -> bool:
        if _RANK.get(line.level, 1) < (LEVELS.index(self.level) if self.level != "all" else 0):
            return False
        if self.module and line.module != self.module:
            return False
        if self.source != "all" and source_of(line) != self.source:
            return False
        if self.window is not None:
            centre, pid, _task = self.window
            if abs(line_time(line) - centre) > WINDOW_NS or (pid and line.pid not in (0, pid)):
                return False
        if self.filter_text:
            haystack = f"{line.text} {line.module} {line.location} {line.level}".lower()
            if self.filter_text not in haystack:
                return False
        return True

    @property
    def plain(self) -> bool:
        return (
            self.level == "all"
            and self.source == "all"
            and not self.module
            and not self.filter_text
            and not self.window
        )

    def redraw(self) -> None:
        if self.store is None:
            return
        s = self.store.state
        logs = list(s.logs)
        if self.plain:
            self._rows = logs
            self._offset = s.logs_dropped
        else:
            self._rows = [line for line in logs if self._wanted(line)]
            self._offset = 0
            self.vlist.clear_cache()
        self.vlist.set_rows(self._offset, len(self._rows))
        head = Text(
            f" {'TIME (UTC)':<12}  {'LEVEL':<7}  {'MODULE':<10}  {'PID':>7}  MESSAGE",
            style="bold", no_wrap=True,
        )  # fmt: skip
        self.query_one("#logs-header", Static).update(head)
        self._update_note(logs)
        self._update_status()

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

    def _update_status(self) -> None:
        if self.store is None:
            return
        s = self.store.state
        dim = theme_style(self, "aclmon-dim")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{len(s.logs) + s.logs_dropped} log line(s)", style=Style(bold=True))
        if s.logs_dropped:
            text.append(f"  ·  {s.logs_dropped} older dropped", style=dim)
        if self.level != "all":
            text.append(f"  ·  {self.level} and above ({self.key('logs.level', 'v')})", style=dim)
        if self.source != "all":
            text.append(f"  ·  {self.source} ({self.key('logs.source', 'o')})", style=dim)
        if self.module:
            text.append(f"  ·  module {self.module} ({self.key('logs.module', 'M')})", style=dim)
        if self.filter_text:
            text.append(f"  ·  “{self.filter_text}”", style=dim)
        if self.window is not None:
            centre, pid, task = self.window
            text.append(
                f"  ·  ±1 s of the exception at {fmt.utc_time(centre)} (task {task})"
                + (f", pid {pid}" if pid else ""),
                style=theme_style(self, "aclmon-busy"),
            )
        if not self.plain:
            text.append(f"  ·  {len(self._rows)} shown  (Esc clears)", style=dim)
        elif self.vlist.follow:
            text.append("  ·  following", style=theme_style(self, "aclmon-idle"))
        else:
            text.append(
                f"  ·  paused ({self.key('logs.follow', 'f')} follows)",
                style=theme_style(self, "aclmon-busy"),
            )
        self.query_one("#logs-status", Static).update(text)

    def _render_row(self, index: int, width: int) -> Text:
        line = self.line_at(index)
        if line is None:
            return Text("")
        styles = {
            "error": theme_style(self, "aclmon-bad", bold=True),
            "warning": theme_style(self, "aclmon-busy"),
        }
        dim = theme_style(self, "aclmon-dim")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {fmt.utc_time(line_time(line)):<12}  ", style=dim)
        text.append(f"{line.level.upper()[:7]:<7}  ", style=styles.get(line.level, Style()))
        text.append(f"{middle(line.module or 'aclmon', 10):<10}  ", style=dim)
        text.append(f"{line.pid or '':>7}  ", style=dim)
        first, _, rest = line.text.partition("\n")
        text.append(
            first, style=styles.get(line.level, Style()) if line.level == "error" else Style()
        )
        if rest:
            text.append(f"  (+{rest.count(chr(10)) + 1} lines)", style=dim)
        if line.location:
            text.append(f"  {line.location}", style=dim)
        return text
