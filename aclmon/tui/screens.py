"""Modal screens: an exception's detail, a failed call's, a log line's, the help
screen, the target picker."""

from __future__ import annotations

import os
from typing import Any, ClassVar, TypeVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static

from aclmon import events as ev
from aclmon.acl_constants import error_name, error_text
from aclmon.store.state import CallFailure
from aclmon.tui import fmt
from aclmon.tui.inert import LINE_LIMIT, InertApp, inert, inert_line
from aclmon.tui.pager import TextPager
from aclmon.tui.style import Fitted, key_values, middle, theme_style
from aclmon.tui.triage import TRIAGE_WAIT_NS, Styles, launched_part, triage_part
from aclmon.tui.views.dumplinks import is_task_dump, overflow_targets
from aclmon.tui.views.tables import tensor_table
from aclmon.tui.vlist import VirtualList

ResultT = TypeVar("ResultT")


def related_dumps(
    exception: ev.AclException, dumps: list[ev.DumpFileSeen]
) -> list[ev.DumpFileSeen]:
    """Dump and overflow files that belong to this exception's task on its stream.

    Operator dumps carry ``.{task}.{stream}.`` in their name; overflow records
    say in their summary which task/stream overflowed.
    """
    task, stream = exception.task_id, exception.stream_id
    return [
        dump
        for dump in dumps
        if is_task_dump(dump, task, stream)
        or any(t == task and s in (None, stream) for t, s in overflow_targets(dump))
    ]


def _relative(ts_ns: int, newest_ns: int) -> str:
    delta = newest_ns - ts_ns
    if delta <= 0:
        return "the newest event"
    if delta < 1_000_000_000:
        return f"{fmt.duration_ns(delta)} before the newest event"
    return f"{fmt.age(ts_ns, newest_ns)} before the newest event"


class ScrollingModal(ModalScreen[ResultT]):
    """A box over the screen: a title and a body that scrolls (arrows, ``j``/``k``,
    the page keys). Its widgets are ``#<PREFIX>-box``, ``-title``, ``-scroll``, ``-body``."""

    PREFIX: ClassVar[str] = "modal"
    # below 100 columns the box takes the whole screen (app.tcss: ``-narrow``)
    HORIZONTAL_BREAKPOINTS = [  # noqa: RUF012 (Textual declares it an instance attribute)
        (0, "-narrow"),
        (100, "-wide"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "scroll(1)", "Down", show=False, id="modal.down"),
        Binding("up,k", "scroll(-1)", "Up", show=False, id="modal.up"),
        # before a list's own page keys inside the box: the pages are the box's
        Binding("pagedown,space", "scroll(10)", "Page down", show=False, priority=True,
                id="modal.page_down"),
        Binding("pageup", "scroll(-10)", "Page up", show=False, priority=True,
                id="modal.page_up"),
    ]  # fmt: skip

    def compose(self) -> ComposeResult:
        with Vertical(id=f"{self.PREFIX}-box"):
            yield Static(id=f"{self.PREFIX}-title", classes="title")
            with VerticalScroll(id=f"{self.PREFIX}-scroll"):
                yield Static(id=f"{self.PREFIX}-body")
                yield from self.compose_below_body()

    def compose_below_body(self) -> ComposeResult:
        """The widgets that scroll with the body, under it (none by default)."""
        yield from ()

    def action_close(self) -> None:
        self.dismiss(None)

    def show(self, title: RenderableType, parts: list[RenderableType], note: str) -> None:
        """The title, the body's parts and a closing line (dim) under them."""
        self.query_one(f"#{self.PREFIX}-title", Static).update(title)
        dim = theme_style(self, "aclmon-dim")
        self.query_one(f"#{self.PREFIX}-body", Static).update(Group(*parts, Text(note, style=dim)))

    def action_scroll(self, delta: int) -> None:
        self.query_one(f"#{self.PREFIX}-scroll", VerticalScroll).scroll_relative(
            y=delta, animate=False
        )


class ExceptionDetail(ScrollingModal[str | None]):
    """Why it failed (the triage, when the agent has sent it: :meth:`show_triage`)
    and where it was launched, every input and output tensor of the failing
    operator, its dump files (Enter on one decodes it here, off the UI thread)
    and the log lines near it; dismissed with ``"logs"`` to go on to the Logs view."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "close", "Close", id="detail.close"),
        Binding("l", "logs", "Logs ±1 s", id="detail.logs"),
        Binding("t", "timeline", "On the timeline", id="detail.timeline"),
    ]
    PREFIX = "detail"

    class DecodeRequested(Message):
        """Enter (or a double click) on one of the exception's files: decode it and
        hand the report back with :meth:`ExceptionDetail.show_decoded`."""

        def __init__(self, detail: ExceptionDetail, dump: ev.DumpFileSeen) -> None:
            super().__init__()
            self.detail = detail
            self.dump = dump

    def __init__(
        self,
        exception: ev.AclException,
        dumps: list[ev.DumpFileSeen],
        newest_ns: int,
        logs: list[ev.LogLine] | None = None,
        runtime_message: str = "",
        triage: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.exception = exception
        #: the exception's triage (docs/triage.md); None while the agent gathers it
        self.triage = triage
        self.dumps = dumps
        self.newest_ns = newest_ns
        self.logs = list(logs or [])
        #: what the runtime said about the failed call (acl.get_recent_err_msg)
        self.runtime_message = runtime_message

    def action_logs(self) -> None:
        self.dismiss("logs")

    def action_timeline(self) -> None:
        self.dismiss("timeline")

    def compose_below_body(self) -> ComposeResult:
        yield Static(id="detail-files-title")
        if self.dumps:
            yield VirtualList(self._render_file, id="detail-files")
        yield Static(id="detail-decoded")
        yield Static(id="detail-logs")

    def on_mount(self) -> None:
        e = self.exception
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        # what identifies the failure first: the operator's type and name
        title = Text(f"{e.op_type or '(type not reported)'}  {e.op_name}", style=Style(bold=True))
        model = fmt.model_execution(e.model_name, e.execution)
        narrow_title = title.copy()
        narrow_title.append(f"\n{model}", style=dim)
        title.append(f"  · {model}")
        self.query_one("#detail-title", Static).update(Fitted(title, narrow_title))
        self._show_body()
        files = Text(f"\nDUMP AND OVERFLOW FILES ({len(self.dumps)})", style=Style(bold=True))
        files.append(
            "  Enter decodes the highlighted one here" if self.dumps
            else "\nnone seen for this task and stream",
            style=dim,
        )  # fmt: skip
        self.query_one("#detail-files-title", Static).update(files)
        if self.dumps:
            vlist = self.query_one("#detail-files", VirtualList)
            vlist.styles.height = min(len(self.dumps), 8)
            vlist.set_follow(False)
            vlist.set_rows(0, len(self.dumps))
            vlist.move_cursor_to(0)
            vlist.focus(scroll_visible=False)  # the detail opens at its top, not at the list
        log = _log_lines_text(self.logs, dim, bad)
        log.append(
            "\nEsc closes · l shows the Logs view around it · t its moment on the timeline",
            style=dim,
        )
        self.query_one("#detail-logs", Static).update(log)

    @property
    def waiting(self) -> bool:
        """The triage is not in, and may still come."""
        return self.triage is None

    def show_triage(self, triage: dict[str, Any] | None, newest_ns: int) -> None:
        """The triage once it came (or, still None, that the wait is over)."""
        gave_up_before = self.newest_ns - self.exception.ts_ns >= TRIAGE_WAIT_NS
        self.newest_ns = max(self.newest_ns, newest_ns)
        gave_up = self.newest_ns - self.exception.ts_ns >= TRIAGE_WAIT_NS
        if triage is None and gave_up == gave_up_before:
            return
        self.triage = triage
        if self.is_attached:
            self._show_body()

    def _show_body(self) -> None:
        """The head, the triage and the launch site first (what a reader wants
        first), then the tensors and what the runtime said."""
        e = self.exception
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        styles = Styles(dim, bad, Style(bold=True))
        parts: list[RenderableType] = [
            Fitted(*_head(e, self.newest_ns, dim, bad)),
            Text(""),
            triage_part(e, self.triage, self.newest_ns, styles),
            Text(""),
            launched_part(e, self.triage, styles),
            Text(""),
            tensor_table(f"INPUTS ({len(e.inputs)})", e.inputs, dim),
            Text(""),
            tensor_table(f"OUTPUTS ({len(e.outputs)})", e.outputs, dim),
        ]
        if self.runtime_message:  # after the tensors: it can be long
            runtime = Text("\nruntime: ", style=dim)
            runtime.append(self.runtime_message)
            parts.append(runtime)
        self.query_one("#detail-body", Static).update(Group(*parts))

    def _render_file(self, index: int, width: int) -> Text:
        if not 0 <= index < len(self.dumps):
            return Text("")
        dump = self.dumps[index]
        bad = theme_style(self, "aclmon-bad", bold=True)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {dump.kind:<13}", style=bad if dump.kind == ev.OVERFLOW_DUMP else Style())
        text.append(f"{fmt.size(dump.size):>9}  ")
        text.append(middle(dump.path, max(8, width - len(text))))
        return text

    @on(VirtualList.Selected, "#detail-files")
    def _file_selected(self, message: VirtualList.Selected) -> None:
        message.stop()
        if 0 <= message.index < len(self.dumps):
            dump = self.dumps[message.index]
            self.show_decoded(
                Text(
                    f"\ndecoding {os.path.basename(dump.path)}…",
                    style=theme_style(self, "aclmon-dim"),
                )
            )
            self.post_message(self.DecodeRequested(self, dump))

    def show_decoded(self, renderable: RenderableType) -> None:
        """Show a decoded file (or its progress) under the file list."""
        if self.is_attached:
            self.query_one("#detail-decoded", Static).update(Group(Text(""), renderable))


def _head(
    e: ev.AclException, newest_ns: int, dim: Style, bad: Style
) -> tuple[RenderableType, RenderableType]:
    """The error and where it happened: two lines when wide, key/value lines
    (nothing cut, nothing broken mid-field) when narrow."""
    when = f"{fmt.utc_time(e.ts_ns)} UTC ({_relative(e.ts_ns, newest_ns)})"
    # an exception known from its exception dump: its stream and thread not recorded
    stream = str(e.stream_id) if e.stream_id >= 0 else "–"
    device = str(e.device_id) if e.device_id >= 0 else "–"
    thread = str(e.thread_id) if e.thread_id > 0 else "–"
    where = f"device {device} · stream {stream} · task {e.task_id} · thread {thread}"
    if e.error_code:
        headline = error_text(e.error_code)
        error = Text(f"{error_name(e.error_code)} ({e.error_code})", style=bad)
        meaning = error_text(e.error_code).partition(": ")[2]
    else:
        headline = "error code not recorded: known from the exception dump the runtime wrote"
        error, meaning = Text("not recorded", style=bad), "known from its exception dump"
    wide = Text(headline, style=bad)
    wide.append(f"\n{when} · {where}", style=dim)
    if meaning:
        error.append(f"\n{meaning}")
    narrow = key_values([("error", error), ("time", Text(when)), ("where", Text(where))], dim)
    return wide, narrow


def _log_lines_text(logs: list[ev.LogLine], dim: Style, bad: Style) -> Text:
    """The "LOG LINES WITHIN ±1 s" part of a detail: the newest 20, first lines only."""
    log = Text(f"\nLOG LINES WITHIN ±1 s ({len(logs)})\n", style=Style(bold=True))
    if not logs:
        log.append("none from this process", style=dim)
    for line in logs[-20:]:
        when = line.logged_ns or line.ts_ns
        log.append(f"{fmt.utc_time(when)} {line.level.upper():<7} {line.module:<10} ", style=dim)
        first = line.text[: LINE_LIMIT + 1].partition("\n")[0]
        log.append(inert_line(first) + "\n", style=bad if line.level == "error" else Style())
    return log


class CallFailureDetail(ScrollingModal[None]):
    """A failed pyACL call: its code, what the runtime said about it
    (``acl.get_recent_err_msg``), where, and the log lines near it."""

    # The exception detail's ids: one remap moves the same keys in both details.
    PREFIX = "detail"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "app.pop_screen", "Close", id="detail.close"),
    ]

    def __init__(
        self, failure: CallFailure, newest_ns: int, logs: list[ev.LogLine] | None = None
    ) -> None:
        super().__init__()
        self.failure = failure
        self.newest_ns = newest_ns
        self.logs = list(logs or [])

    def compose(self) -> ComposeResult:
        with Vertical(id="detail-box"):
            yield Static(id="failure-title", classes="title")
            with VerticalScroll(id="detail-scroll"):
                yield Static(id="failure-body")

    def on_mount(self) -> None:
        failure = self.failure
        e = failure.event
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        self.query_one("#failure-title", Static).update(
            Text(f"acl.{e.api} failed", style=Style(bold=True))
        )
        body = Text()
        body.append(error_text(e.ret), style=bad)
        where = f"{fmt.utc_time(e.ts_ns)} UTC ({_relative(e.ts_ns, self.newest_ns)})"
        if failure.stream_id != -1:
            where += f" · device {failure.device_id} · stream {failure.stream_id}"
        body.append(f"\n{where} · thread {e.thread_id}", style=dim)
        body.append("\nruntime: ", style=dim)
        if e.message:
            body.append(e.message)
        else:
            body.append("(the runtime said nothing more)", style=dim)
        body.append("\n")
        body.append_text(_log_lines_text(self.logs, dim, bad))
        body.append("\nEsc closes", style=dim)
        self.query_one("#failure-body", Static).update(body)


class LogLineDetail(ScrollingModal[str | None]):
    """One log line whole: where it comes from, and all of its text (a 1 MB
    line too: drawn a screenful at a time); ``e`` (when the line belongs to one)
    goes on to its exception or failed call: the screen is dismissed with
    ``"related"``."""

    DEFAULT_CSS = "LogLineDetail { align: center middle; }"
    PREFIX = "detail"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "close", "Close", id="detail.close"),
        Binding("e", "related", "Its exception", id="detail.related"),
    ]

    def __init__(self, line: ev.LogLine, source: str, related: str = "") -> None:
        super().__init__()
        self.line = line
        #: where the line comes from, in words ("CANN log", "job output", "agent")
        self.source = source
        #: the exception or failed call the line belongs to, in words ("" for none)
        self.related = related

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return bool(self.related) if action == "related" else True

    def action_related(self) -> None:
        self.dismiss("related")

    def compose_below_body(self) -> ComposeResult:
        yield TextPager(self.line.text, id="detail-text")
        yield Static(id="detail-end")

    def on_mount(self) -> None:
        line = self.line
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        title = Text(f"{line.level.upper()}  ", style=bad if line.level == "error" else "bold")
        title.append(f"{inert_line(line.module or 'aclmon')} · {self.source}", style="bold")
        self.query_one("#detail-title", Static).update(title)
        when = f"{fmt.utc_time(line.logged_ns or line.ts_ns)} UTC"
        if line.logged_ns and abs(line.ts_ns - line.logged_ns) >= 1_000_000:
            when += f" (read {fmt.utc_time(line.ts_ns)})"
        fields = [
            ("time", when),
            ("process", f"{line.pid or ''} {line.process}".strip()),
            ("location", line.location),
            ("file", line.log_file),
            ("length", f"{len(line.text):,} characters, {line.text.count(chr(10)) + 1} line(s)"),
        ]
        rows = [(key, Text(inert(value))) for key, value in fields if value]
        parts: list[RenderableType] = [key_values(rows, dim), Text("")]
        note = "Esc closes"
        if self.related:  # before the text, which may be long
            parts[1:1] = [Text(""), Text(f"belongs to {inert(self.related)}", style=bad)]
            note += " · e opens it"
        self.query_one("#detail-body", Static).update(Group(*parts))
        self.query_one("#detail-end", Static).update(Text(f"\n{note}", style=dim))


class HelpScreen(ScrollingModal[None]):
    """Every key, grouped by where it works, with the binding id used to remap it."""

    PREFIX = "help"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "app.pop_screen", "Close", id="help.close"),
    ]

    def __init__(
        self, sections: list[tuple[str, list[tuple[str, str, str]]]], keymap_path: str
    ) -> None:
        super().__init__()
        self.sections = sections
        self.keymap_path = keymap_path

    def on_mount(self) -> None:
        dim = theme_style(self, "aclmon-dim")
        key_style = theme_style(self, "footer-key-foreground", bold=True)
        parts: list[RenderableType] = []
        for title, rows in self.sections:
            table = Table(title=title, title_justify="left", box=None, expand=True,
                          title_style=Style(bold=True), show_header=False)  # fmt: skip
            # The binding id is what a keymap needs: it is never cut (the description wraps).
            longest = max((len(row[2]) for row in rows), default=0)
            table.add_column(no_wrap=True, min_width=10)
            table.add_column(ratio=1)
            table.add_column(style=dim, no_wrap=True, min_width=longest)
            for keys, description, binding_id in rows:
                table.add_row(Text(keys, style=key_style), description, binding_id)
            parts.append(table)
            parts.append(Text(""))
        self.show(
            Text("aclmon keys", style="bold"),
            parts,
            f"Remap any key by its id in {self.keymap_path}, e.g. "
            '{"view.exceptions": "2,x"}. Ctrl+P opens the command palette.',
        )


class TargetPicker(ModalScreen[Any]):
    """Choose one of several running agents."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "cancel", "Cancel", id="picker.cancel")
    ]

    def __init__(self, agents: list[Any], describe: Any) -> None:
        super().__init__()
        self.agents = agents
        self.describe = describe

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-box"):
            yield Static(
                Text("Several agents are running: pick one", style="bold"), classes="title"
            )
            yield OptionList(
                *(Text(inert_line(self.describe(a))) for a in self.agents), id="picker-list"
            )

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        self.dismiss(self.agents[message.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)


def describe_agent(agent: Any) -> str:
    """One line per agent: pid, host, the command (script names, not full paths), address."""
    command = " ".join(os.path.basename(a) if "/" in a else a for a in agent.argv)
    return f"pid {agent.pid:<7} {agent.host}  {command[:40]:<40}  {agent.address}"


class PickerApp(InertApp[Any]):
    """``aclmon attach`` with several agents running: returns the one picked (or None)."""

    CSS_PATH = "screens.tcss"

    def __init__(self, agents: list[Any]) -> None:
        super().__init__()
        self.agents = agents

    def on_mount(self) -> None:
        self.push_screen(TargetPicker(self.agents, describe_agent), self.exit)
