"""The Devices view: device table, host process, models, log lines, and a
context -> stream tree per device."""

from __future__ import annotations

import os
from functools import partial
from typing import ClassVar

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Region
from textual.reactive import reactive
from textual.widgets import Static

from aclmon.acl_constants import error_name
from aclmon.store import Store
from aclmon.store.sections import DEVICES, FAILURES, JOB, LOGS, MODELS, STREAMS
from aclmon.store.state import (
    STREAM_BUSY,
    STREAM_DESTROYED,
    STREAM_IDLE,
    STREAM_SYNCHRONIZING,
    StoreState,
)
from aclmon.tui import fmt
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.base import AtMostEvery, Command, show_text
from aclmon.tui.views.device_table import TABLE_ROLES, device_table
from aclmon.tui.views.listview import FilteredView
from aclmon.tui.views.textlines import TextLines
from aclmon.tui.vlist import cursor_bindings


class Node:
    """One line of a device's tree and the lines under it."""

    def __init__(self, label: Text) -> None:
        self.label = label
        self.children: list[Node] = []

    def add(self, label: Text) -> Node:
        child = Node(label)
        self.children.append(child)
        return child

    def lines(self, guide: Style) -> list[tuple[Text, Text]]:
        """(guide, label) a row, drawn as a tree: ``├── ``, ``│   └── ``…; a label
        of several lines goes on under its first, its guide continued."""
        out = [(Text(""), row) for row in _rows(self.label)]

        def walk(children: list[Node], prefix: str) -> None:
            for n, child in enumerate(children):
                last = n == len(children) - 1
                under = prefix + ("    " if last else "│   ")
                for r, row in enumerate(_rows(child.label)):
                    branch = under if r else prefix + ("└── " if last else "├── ")
                    out.append((Text.assemble((branch, guide)), row))
                walk(child.children, under)

        walk(self.children, "")
        return out


def _rows(label: Text) -> list[Text]:
    """A label's lines (most labels are one: Text.split copies the text)."""
    return list(label.split("\n")) if "\n" in label.plain else [label]


def command_line(argv: tuple[str, ...] | list[str]) -> str:
    """The job's command with the script named first: ``train.py --lr 0.1 (python)``.

    The interpreter and the script's directory say little; the script's name
    is what identifies the job, so it leads (and survives truncation).
    """
    args = list(argv)
    if len(args) >= 2 and os.path.basename(args[0]).startswith("python"):
        runner, args = os.path.basename(args[0]), args[1:]
        if args and args[0] == "-m" and len(args) > 1:
            args = [f"-m {args[1]}", *args[2:]]
        else:
            args = [os.path.basename(args[0]), *args[1:]] if args else args
        return " ".join(args) + f"  ({runner})"
    return " ".join([os.path.basename(args[0]), *args[1:]]) if args else ""


#: seconds between two drawings of the device table and the trees while only the
#: job's figures move (each drawing renders every changed panel whole)
FIGURES_EVERY = 1.0


class DevicesView(FilteredView):
    """Devices table with sparklines and HBM bars, the host process, models, and
    a context -> stream tree per device."""

    FILTER_HINT = "tree lines: stream, state, model, error"
    SEARCHABLE = True
    BINDINGS: ClassVar[list[BindingType]] = [
        *cursor_bindings("devices", first="Top", last="Last line"),
        Binding("d", "toggle_destroyed", "Destroyed", id="devices.destroyed"),
    ]
    can_focus = True
    REDRAWN_BY = ("show_destroyed", "cursor")
    SECTIONS = (JOB, DEVICES, STREAMS, MODELS, FAILURES, LOGS)

    show_destroyed: reactive[bool] = reactive(False)
    """Destroyed contexts and streams are listed (hidden by default)."""
    cursor: reactive[int] = reactive(-1)
    """The selected line of the trees (all devices' lines in order); -1: none (the
    view is scrolled to its top)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        #: each tree line shown: (device, its line in that tree, what ``/`` matches)
        self._lines: list[tuple[int, int, str]] = []
        #: each device's tree lines as shown (without their guides)
        self._labels: dict[int, list[str]] = {}
        self._figures_every = AtMostEvery(self, FIGURES_EVERY, self._draw_figures)

    def compose(self) -> ComposeResult:
        yield Static(id="devices-status", classes="status")
        with VerticalScroll(id="devices-scroll"):
            yield Static(id="device-table", classes="panel")
            yield Static(id="host-line", classes="panel")
            yield Static(id="models", classes="panel")
            yield Static(id="failed-calls", classes="panel")
            yield Static(id="device-logs", classes="panel")
            yield Vertical(id="trees")
        yield self.filter_bar()

    def action_toggle_destroyed(self) -> None:
        self.show_destroyed = not self.show_destroyed

    def _shown(self, line: Text) -> bool:
        return not self.filtered or self.filter_text in line.plain.lower()

    # ------------------------------------------------------------ the cursor
    def cursor_row(self) -> int:
        return self.cursor

    def selected_line(self) -> str:
        """The cursor's line as shown (without its guide), "" when none."""
        if not 0 <= self.cursor < len(self._lines):
            return ""
        device_id, line, _text = self._lines[self.cursor]
        return self._labels[device_id][line]

    def matches(self, row: int) -> bool:
        return bool(self.filter_text) and self.filter_text in self._lines[row][2]

    def seek_match(self, direction: int, start: int) -> bool:
        count = len(self._lines)
        for step in range(1, count + 1):
            row = (start + direction * step) % count
            if self.matches(row):
                self.cursor = row
                return True
        return False

    def watch_filter_text(self) -> None:
        super().watch_filter_text()
        if self.filter_text and not self.filter_hides:
            # searching: the cursor goes to the first match from where it is
            self.seek_match(1, max(self.cursor, 0) - 1)
        self._draw_status()

    def action_cursor(self, delta: int) -> None:
        """Down/up a tree line; up from the first goes back to the top of the view."""
        self.cursor = max(-1, min(self.cursor + delta, len(self._lines) - 1))

    def action_page(self, direction: int) -> None:
        """A screenful of tree lines down or up (as every list's PgDn/PgUp)."""
        height = self.query_one("#devices-scroll", VerticalScroll).scrollable_content_region.height
        self.action_cursor(direction * max(1, height - 1))

    def action_first(self) -> None:
        """Back to the top of the view (the device table)."""
        self.cursor = -1

    def action_last(self) -> None:
        self.cursor = len(self._lines) - 1

    def watch_cursor(self) -> None:
        self.call_after_refresh(self._scroll_to_cursor)

    def _scroll_to_cursor(self) -> None:
        scroll = self.query_one("#devices-scroll", VerticalScroll)
        if not 0 <= self.cursor < len(self._lines):
            scroll.scroll_home(animate=False, immediate=True)
            return
        device_id, line, _text = self._lines[self.cursor]
        found = self.query(f"#device-tree-{device_id}")
        if found:
            tree = found.first()
            y = tree.region.y - scroll.region.y + round(scroll.scroll_y) + line
            scroll.scroll_to_region(Region(0, y, 1, 1), animate=False, immediate=True, force=True)

    def on_focus(self) -> None:
        self.rebuild()  # the cursor's line is bold while the view has the focus

    def on_blur(self) -> None:
        # Hidden by a view switch: nothing to redraw now, its focus redraws it when shown.
        if self.display:
            self.rebuild()

    def jump_to_device(self, device_id: int) -> bool:
        for row, (device, line, _text) in enumerate(self._lines):
            if device == device_id and line == 0:
                self.cursor = row
                return True
        return False

    def tab_count(self, state: StoreState) -> str:
        return f" ({len(state.devices)})" if state.devices else ""

    def palette_commands(self, store: Store) -> list[Command]:
        return [
            Command(
                f"Device {device_id}: jump to it",
                partial(self.call_after_refresh, self.jump_to_device, device_id),
                "the Devices view, scrolled to the device's tree",
            )
            for device_id in store.device_ids()
        ]

    def _draw_status(self) -> None:
        """A status line while ``/`` has a text: what is shown or matched, and n/N."""
        status = self.query_one("#devices-status", Static)
        status.display = bool(self.filter_text)
        if self.filter_text:
            shown = sum(1 for row in range(len(self._lines)) if self.matches(row))
            note = self.filter_note(shown, shown).removeprefix("  ·  ")
            status.update(Text(f"tree lines: {note}", style=theme_style(self, "aclmon-dim")))

    def redraw(self) -> None:
        self._draw(frozenset(self.SECTIONS), trees_now=True)

    def redraw_sections(self, moved: frozenset[str]) -> None:
        self._draw(moved, trees_now=False)

    def _draw(self, moved: frozenset[str], *, trees_now: bool) -> None:
        """The panels that show what moved; each Static only when its text changed,
        laid out only when its lines did. The device table, the models and the
        trees and the host line, whose figures move with every sample, execution
        and synchronize, at most every FIGURES_EVERY seconds unless ``trees_now``
        (a key)."""
        if self.store is None or not self.is_mounted:
            return
        s = self.store.state
        if FAILURES in moved:
            failed = self.query_one("#failed-calls", Static)
            failed.display = bool(s.call_failures_total)
            if s.call_failures_total:
                self._show_text("#failed-calls", self._failed_calls(s))
        if LOGS in moved:
            logs = self.query_one("#device-logs", Static)
            logs.display = bool(s.logs)
            if s.logs:
                self._show_text("#device-logs", self._logs(s))
        if moved & {DEVICES, STREAMS, MODELS, JOB}:
            if trees_now or s.devices.keys() != self._labels.keys():  # a device came or went
                self._draw_figures()
            else:
                # the host line too (its usage moves with each of the job's samples):
                # one frame a second for all of them, not one each
                self._figures_every.ask()
        self._draw_status()

    def _draw_figures(self) -> None:
        """The host line, the device table (when what it is drawn from changed),
        the models (whose run counts move with every execution) and the trees."""
        if self.store is None:
            return
        s = self.store.state
        self._figures_every.drawn()
        self._show_text("#host-line", self._host_line(s))
        table = self.query_one("#device-table", Static)
        # what the table is drawn from: a sample is a new record, never changed
        key = (self.width, s.hello, [(d.device_id, d.sample, d.set_ret, d.reset, d.errors,
                                      d.exceptions) for d in s.devices.values()])  # fmt: skip
        if self._static_keys.get("device-table", (None,))[0] != key:
            self.show_static(table, self._device_table(s), key, len(s.devices))
        self._show_text("#models", self._models(s))
        self._draw_trees()

    def _show_text(self, selector: str, text: Text) -> None:
        show_text(self.query_one(selector, Static), text, self._static_keys)

    def _draw_trees(self) -> None:
        """Each device's context -> stream tree, a :class:`TextLines` each: only
        the lines whose text changed are drawn again (a tick moves a few streams'
        figures), and the screen is laid out only when a tree's length changes."""
        if self.store is None:
            return
        s = self.store.state
        trees = self.query_one("#trees", Vertical)
        wanted = {f"device-tree-{device_id}" for device_id in s.devices}
        shown: dict[str | None, TextLines] = {}
        for child in trees.children:
            # A device the state no longer has (it started afresh, or a replay went
            # back before it) is hidden, not removed: a seek forward again then
            # mounts nothing (mounting costs several layouts of the screen).
            child.display = child.id in wanted
            if isinstance(child, TextLines):
                shown[child.id] = child
        drawn = {device_id: self._tree(s, device_id).lines(theme_style(self, "aclmon-dim"))
                 for device_id in sorted(s.devices)}  # fmt: skip
        self._labels = {d: [label.plain for _g, label in lines] for d, lines in drawn.items()}
        self._lines = [
            (device_id, n, label.plain.lower())
            for device_id, lines in drawn.items()
            for n, (_guide, label) in enumerate(lines)
        ]
        if self.cursor >= len(self._lines):
            self.cursor = len(self._lines) - 1
        selected = self._lines[self.cursor][:2] if self.cursor >= 0 else None
        scroll = self.query_one("#devices-scroll", VerticalScroll)
        width = max(1, (scroll.scrollable_content_region.width or self.width) - 2)  # .tree padding
        new: list[TextLines] = []
        for device_id, lines in drawn.items():
            rows = self._tree_rows(lines, device_id, selected, width)
            tree = shown.get(f"device-tree-{device_id}")
            if tree is not None:
                tree.set_lines(rows)
            else:
                new.append(TextLines(rows, id=f"device-tree-{device_id}", classes="tree"))
        if new:
            trees.mount_all(new)  # at once: one layout for all of them

    def _tree_rows(
        self,
        lines: list[tuple[Text, Text]],
        device_id: int,
        selected: tuple[int, int] | None,
        width: int,
    ) -> list[Text]:
        """A device's tree, a line a row (cut, never wrapped): the cursor's line
        marked, the ``/`` text marked in every line."""
        mark = theme_style(self, "aclmon-busy", bold=True, underline=True)
        cursor = Style(bgcolor=theme_style(self, "aclmon-cursor").color, bold=self.has_focus)
        rows = []
        for n, (guide, label) in enumerate(lines):
            line = guide + label
            if self.filter_text:
                line.highlight_words([self.filter_text], mark, case_sensitive=False)
            if selected == (device_id, n):
                line.truncate(width, pad=True)
                line.stylize(cursor)
            rows.append(line)
        return rows

    def _device_table(self, s: StoreState) -> RenderableType:
        styles = {role: theme_style(self, f"aclmon-{role}") for role in TABLE_ROLES}
        styles["bad"] = theme_style(self, "aclmon-bad", bold=True)
        return device_table(s, self.width, styles)

    def _failed_calls(self, s: StoreState) -> Text:
        """The job's failed calls since start, by call, and what the runtime said
        about the newest (a failed set_device shows here, not as a device)."""
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad")
        text = Text("FAILED CALLS  ", style=dim + Style(bold=True))
        text.append(f"{s.call_failures_total}", style=bad)
        recent = [f.event for f in s.call_failures]
        by_call: dict[str, int] = {}
        for e in reversed(recent):
            by_call[e.api] = by_call.get(e.api, 0) + 1
        if by_call:
            shown = ", ".join(f"{api} ×{n}" for api, n in by_call.items())
            text.append(f"  ({shown}" + (" lately" if len(recent) < s.call_failures_total
                                         else "") + ")", style=dim)  # fmt: skip
            newest = recent[-1]
            text.append(f"  last: acl.{newest.api} {error_name(newest.ret)}", style=bad)
            said = fmt.runtime_headline(newest.message) if newest.message else ""
            if said:
                text.append(f": {said}", style=dim)
        return text

    def _host_line(self, s: StoreState) -> Text:
        """pid, host and the job's command (its script first, cut in the middle to
        fit), then the process's usage; on two lines when one would wrap."""
        dim = theme_style(self, "aclmon-dim")
        width = max(40, (self.size.width or 160) - 4)  # the panel's padding, the scrollbar
        text = Text("HOST  ", style=dim + Style(bold=True), no_wrap=True, overflow="ellipsis")
        usage = Text()
        if s.host is None:
            usage.append("no host sample yet", style=dim)
        else:
            usage.append("cpu ")
            usage.append(
                fmt.sparkline(s.host_cpu_history, 12, top=100.0),
                style=theme_style(self, "aclmon-spark"),
            )
            usage.append(
                f" {s.host.cpu_percent:5.1f}%   rss {fmt.size(s.host.rss)}"
                f"   threads {s.host.threads}"
            )
        if s.hello:
            text.append(f"pid {s.hello.pid} on {s.hello.host}  ")
            command = command_line(s.hello.argv)
            room = width - len(text) - 2 - len(usage)
            if room < min(len(command), 24):  # the command keeps the first line's rest
                text.append(middle(command, width - len(text)), style=dim)
                text.append("\n      ")
            else:
                text.append(middle(command, room), style=dim)
                text.append("  ")
        text.append_text(usage)
        return text

    def _logs(self, s: StoreState) -> Text:
        """The agent's newest log lines (warnings and errors stand out), one line
        each (cut at the end: a message reads from its start)."""
        dim = theme_style(self, "aclmon-dim")
        styles = {"error": theme_style(self, "aclmon-bad", bold=True),
                  "warning": theme_style(self, "aclmon-busy")}  # fmt: skip
        text = Text("LOG  ", style=dim + Style(bold=True), no_wrap=True, overflow="ellipsis")
        for n, line in enumerate(list(s.logs)[-3:]):
            if n:
                text.append("\n     ")
            text.append(f"{fmt.utc_time(line.ts_ns, with_ms=False)} {line.level:<7} ", style=dim)
            first = line.text.split("\n", 1)[0][:300]
            text.append(first, style=styles.get(line.level, Style()))
        return text

    def _models(self, s: StoreState) -> Text:
        dim = theme_style(self, "aclmon-dim")
        text = Text("MODELS  ", style=dim + Style(bold=True))
        loaded = [m for m in s.models.values() if m.loaded]
        if not loaded:
            text.append("none loaded", style=dim)
            return text
        running = sum(1 for m in loaded if m.running)
        runs = sum(m.executions for m in loaded)
        failed = sum(m.failures for m in loaded)
        text.append(f"{len(loaded)} loaded · ")
        text.append(
            f"{running} running", style=theme_style(self, "aclmon-busy") if running else dim
        )
        text.append(f" · {runs} runs · ")
        text.append(f"{failed} failed", style=theme_style(self, "aclmon-bad") if failed else dim)
        text.append("   (per device below)", style=dim)
        return text

    def _tree(self, s: StoreState, device_id: int) -> Node:
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad")
        state_styles = {
            STREAM_IDLE: theme_style(self, "aclmon-idle"),
            STREAM_BUSY: theme_style(self, "aclmon-busy", bold=True),
            STREAM_SYNCHRONIZING: theme_style(self, "aclmon-sync", bold=True),
            STREAM_DESTROYED: dim,
        }
        device = s.devices[device_id]
        label = Text(f"device {device_id}", style=Style(bold=True))
        if device.set_ret not in (None, 0):
            label.append(f"  set_device failed: {error_name(device.set_ret)}", style=bad)
        if device.reset:
            label.append("  (reset)", style=dim)
        tree = Node(label)
        contexts = [c for c in s.contexts.values() if c.device_id == device_id]
        if not contexts:
            tree.add(Text("no contexts yet", style=dim))
        hidden = 0
        for ctx in contexts:
            if ctx.destroyed and not self.show_destroyed:
                hidden += 1
                continue
            ctx_label = Text(f"context 0x{ctx.context:x}")
            if ctx.is_default:
                ctx_label.append(" default", style=dim)
            if ctx.destroyed:
                ctx_label.append(" destroyed", style=dim)
            if ctx.threads:
                ctx_label.append(f"  {len(ctx.threads)} thread(s)", style=dim)
            branch = tree.add(ctx_label)
            for handle in ctx.streams:
                stream = s.streams.get((ctx.context, handle))
                if stream is None:
                    continue
                if stream.state == STREAM_DESTROYED and not self.show_destroyed:
                    hidden += 1
                    continue
                line = Text(f"stream {stream.stream_id:<3d} ")
                line.append(f"{stream.state:<13}", style=state_styles.get(stream.state, dim))
                if stream.busy_model is not None:
                    line.append(f" model #{stream.busy_model}", style=dim)
                line.append(f" last sync {fmt.duration_ns(stream.last_sync_ns):>9}", style=dim)
                line.append(f"  {stream.syncs} syncs", style=dim)
                if stream.errors or stream.exceptions:
                    counts = [f"{stream.errors} error(s)"] if stream.errors else []
                    if stream.exceptions:  # counted apart from the failed calls they cause
                        counts.append(f"{stream.exceptions} exception(s)")
                    # narrow: on a line of their own, not broken where the width ends
                    gap = "\n" if (self.size.width or 160) < 130 else "  "
                    line.append(
                        f"{gap}{', '.join(counts)}, last {error_name(stream.last_error)}", style=bad
                    )
                    if stream.last_error_message:
                        # its telling line: the exception detail shows the whole message
                        first = fmt.runtime_headline(stream.last_error_message)
                        line.append(f": {first[:80]}", style=bad)
                if self._shown(line) or self._shown(ctx_label):
                    branch.add(line)
        models = [m for m in s.models.values() if m.loaded and m.device_id == device_id]
        if models:
            branch = tree.add(Text(f"models ({len(models)})", style=dim))
            for m in models:
                line = Text(m.name, style=Style(bold=True))
                line.append(f" #{m.model_id}", style=dim)
                line.append(
                    f"  {m.executions} runs  last {fmt.duration_ns(m.last_duration_ns)}", style=dim
                )
                if m.op_count:
                    line.append(f"  {m.op_count} ops", style=dim)
                if m.running:
                    line.append("  running", style=state_styles[STREAM_BUSY])
                if m.failures:
                    line.append(f"  {m.failures} failed", style=bad)
                if self._shown(line):
                    branch.add(line)
        # Streams that failed and are gone (recovery code destroys them): said here
        # whether they are hidden, or unknown (joined later, or past the history).
        failing_now = sum(
            1
            for st in s.streams.values()
            if st.device_id == device_id and st.errors and st.state != STREAM_DESTROYED
        )
        failed_gone = max(0, device.failed_streams - failing_now)
        if hidden or failed_gone:
            note = Text(style=dim)
            if hidden:
                note.append(f"{hidden} destroyed context(s)/stream(s) hidden")
            if failed_gone:
                note.append(", " if hidden else "")
                note.append(
                    f"{failed_gone} destroyed stream{'s' if failed_gone != 1 else ''} had errors",
                    style=bad,
                )
            if hidden:
                note.append(f" ({self.key('devices.destroyed', 'd')} shows)")
            tree.add(note)
        return tree
