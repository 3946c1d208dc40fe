"""The Dumps view: dump and overflow files, filterable, an overflow-only toggle,
and (for a dump directory) grouped by device, model and step; highlighting a
file shows what the agent said about it, Enter asks for it to be decoded."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from aclmon import events as ev
from aclmon.tui import fmt
from aclmon.tui.dumpdetail import overflowing_operator, render_summary
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.base import View
from aclmon.tui.views.dumplinks import (
    operator_name,
    overflow_operator,
    overflow_targets,
    overflows_of_step,
)
from aclmon.tui.views.filterbar import FilterBar
from aclmon.tui.vlist import VirtualList

OVERFLOW_GROUP = "Overflow records"


def dump_text(d: ev.DumpFileSeen) -> str:
    """What ``/`` matches a dump file against: kind, operator, file name."""
    summary = d.summary if isinstance(d.summary, dict) else {}
    op = " ".join(str(summary.get(k, "")) for k in ("op_type", "op_name", "operator"))
    return f"{d.kind} {op} {os.path.basename(d.path)}".lower()


def group_of(d: ev.DumpFileSeen) -> str:
    if d.kind == "overflow":
        return OVERFLOW_GROUP
    summary = d.summary if isinstance(d.summary, dict) else {}
    return str(summary.get("group") or "other files")


def overflow_meaning(summary: dict[str, Any]) -> str:
    """The first status word that says something overflowed (or the error)."""
    if summary.get("error"):
        return str(summary["error"])
    for item in summary.get("records") or ():
        if isinstance(item, dict):
            for line in item.get("explained") or ():
                if not str(line).endswith("no overflow"):
                    return str(line)
    return "no overflow bit set"


class DumpsView(View):
    """Dump and overflow files; Enter asks for the selected one to be decoded."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", id="dumps.filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="dumps.clear"),
        Binding("t", "to_operator", "To operator", show=False, id="dumps.to_operator"),
        Binding("F", "first_overflow", "First overflow", show=False, id="dumps.first_overflow"),
        Binding("o", "toggle_overflow_only", "Overflow only", id="dumps.overflow_only"),
        Binding("b,backspace", "back", "Back", show=False, id="dumps.back"),
        Binding("e", "export", "Export .npy", show=False, id="dumps.export"),
        Binding("y", "copy_path", "Copy path", show=False, id="dumps.copy_path"),
        Binding("Y", "copy_op", "Copy op name", show=False, id="dumps.copy_op"),
    ]

    class DecodeRequested(Message):
        """Enter or double click on a file: decode it (off the UI thread) and
        hand the report back with :meth:`DumpsView.show_detail`."""

        def __init__(self, dump: ev.DumpFileSeen) -> None:
            super().__init__()
            self.dump = dump

    class ExportRequested(Message):
        """Export a file's tensors as ``.npy`` (as ``aclmon convert`` names them)."""

        def __init__(self, dump: ev.DumpFileSeen) -> None:
            super().__init__()
            self.dump = dump

    grouped: reactive[bool] = reactive(False)
    """Files under a heading per group (overflow records first): a dump directory."""
    overflow_only: reactive[bool] = reactive(False)
    """Only overflow files."""
    filter_text: reactive[str] = reactive("")
    """Only files whose kind, operator or name contain this (any case)."""
    detail_shown: reactive[bool] = reactive(False, init=False)
    """The pane holds a decoded file (new files must not replace it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: list[str | ev.DumpFileSeen] = []
        self._offset = 0
        self._placed = False
        #: where a jump came from: (file, overflow only, filter), newest last
        self._back: list[tuple[ev.DumpFileSeen | None, bool, str]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="dumps-status", classes="status")
        with Horizontal():
            with Vertical(id="dumps-left"):
                yield Static(id="dumps-header", classes="colhead")
                yield VirtualList(self._render_row, id="dumps-list")
                yield FilterBar("filter: kind, operator or file name", id="dumps-filter")
            with VerticalScroll(id="dump-detail-scroll"):
                yield Static(id="dump-detail")

    @property
    def vlist(self) -> VirtualList:
        return self.query_one("#dumps-list", VirtualList)

    def on_focus(self) -> None:
        self.vlist.focus()

    def on_show(self) -> None:
        # Open scrolled to the cursor, wherever the list was left.
        vlist = self.vlist
        self.call_after_refresh(vlist.scroll_to_cursor)

    @property
    def plain(self) -> bool:
        return not (self.grouped or self.overflow_only or self.filter_text)

    # ------------------------------------------------------------ state
    def watch_grouped(self) -> None:
        self._rebuild()

    def watch_overflow_only(self) -> None:
        self._rebuild()

    def watch_filter_text(self) -> None:
        self._rebuild()

    def _rebuild(self) -> None:
        if self.store is not None:
            self.vlist.clear_cache()
            self.redraw()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_clear_filter(self) -> None:
        self.query_one(FilterBar).action_clear()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.filter_text)
        return True

    def action_toggle_overflow_only(self) -> None:
        self.overflow_only = not self.overflow_only

    @on(FilterBar.Changed, "#dumps-filter")
    def _filter_changed(self, message: FilterBar.Changed) -> None:
        self.filter_text = message.value.strip().lower()

    @on(FilterBar.Done, "#dumps-filter")
    def _filter_done(self) -> None:
        self.vlist.focus()

    @on(VirtualList.Selected, "#dumps-list")
    def _selected(self, message: VirtualList.Selected) -> None:
        message.stop()
        dump = self.dump_at(message.index)
        if dump is None:
            return
        self.detail_shown = True
        self.vlist.set_follow(False)  # new files must not replace what is being read
        self.show_detail(
            Text(f"decoding {os.path.basename(dump.path)}…", style=theme_style(self, "aclmon-dim"))
        )
        self.post_message(self.DecodeRequested(dump))

    # ------------------------------------------------------------ row actions
    def selected_dump(self) -> ev.DumpFileSeen | None:
        return self.dump_at(self.vlist.cursor)

    def _selected_overflow(self) -> ev.DumpFileSeen | None:
        dump = self.selected_dump()
        if dump is None or dump.kind != "overflow":
            self.notify("select an overflow record first", severity="warning", timeout=3)
            return None
        return dump

    def action_to_operator(self) -> None:
        """From an overflow record to the dump of the operator that overflowed."""
        overflow = self._selected_overflow()
        if overflow is None or self.store is None:
            return
        target = overflow_operator(overflow, list(self.store.state.dumps))
        if target is None:
            named = ", ".join(f"task {t} stream {s}" for t, s in overflow_targets(overflow))
            self.notify(f"no operator dump seen for {named or 'this record'}", timeout=4)
            return
        self._jump(target)

    def action_first_overflow(self) -> None:
        """To the earliest overflow record of the selected record's step (directory)."""
        overflow = self._selected_overflow()
        if overflow is None or self.store is None:
            return
        same = overflows_of_step(overflow, list(self.store.state.dumps))
        if same and same[0] is overflow:
            self.notify(f"this is the first overflow of its step ({len(same)} in it)", timeout=3)
            return
        self._jump(same[0] if same else overflow)

    def _jump(self, target: ev.DumpFileSeen) -> None:
        self._back.append((self.selected_dump(), self.overflow_only, self.filter_text))
        del self._back[:-64]
        if not self._show_dump(target):
            # hidden by the filter or the overflow-only toggle: show every file
            self.overflow_only = False
            self._set_filter("")
            self._show_dump(target)

    def action_back(self) -> None:
        """Back to where the last jump started."""
        if not self._back:
            self.notify("nothing to go back to", timeout=2)
            return
        dump, overflow_only, filter_text = self._back.pop()
        self.overflow_only = overflow_only
        self._set_filter(filter_text)
        if dump is not None:
            self._show_dump(dump)

    def _set_filter(self, text: str) -> None:
        bar = self.query_one("#dumps-filter", FilterBar)
        bar.value = text
        bar.set_class(bool(text), "-shown")
        self.filter_text = text

    def _show_dump(self, dump: ev.DumpFileSeen) -> bool:
        for row, entry in enumerate(self._rows):
            if entry is dump or entry == dump:
                self.detail_shown = False
                self.vlist.move_cursor_to(self._offset + row)
                self.vlist.focus()
                # the list may have just grown (a toggle lifted): scroll once it is laid out
                self.call_after_refresh(self.vlist.scroll_to_cursor)
                return True
        return False

    def action_export(self) -> None:
        dump = self.selected_dump()
        if dump is not None:
            self.notify(f"exporting {os.path.basename(dump.path)}…", timeout=2)
            self.post_message(self.ExportRequested(dump))

    def action_copy_path(self) -> None:
        dump = self.selected_dump()
        if dump is not None:
            self._copy(dump.path, "path")

    def action_copy_op(self) -> None:
        dump = self.selected_dump()
        if dump is None or self.store is None:
            return
        name = operator_name(dump)
        if dump.kind == "overflow":
            target = overflow_operator(dump, list(self.store.state.dumps))
            name = (operator_name(target) if target is not None else "") or name.split(" ")[-1]
        if not name:
            self.notify("no operator name known for this file", severity="warning", timeout=3)
            return
        self._copy(name, "operator name")

    def _copy(self, text: str, what: str) -> None:
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {what}: {middle(text, 60)}", timeout=3)

    def on_virtual_list_highlighted(self, message: VirtualList.Highlighted) -> None:
        self.detail_shown = False
        self._show_summary(message.index)

    # ------------------------------------------------------------ rows
    def dump_at(self, index: int) -> ev.DumpFileSeen | None:
        row = index - self._offset
        if 0 <= row < len(self._rows):
            entry = self._rows[row]
            return entry if isinstance(entry, ev.DumpFileSeen) else None
        return None

    def on_resize(self) -> None:
        self.set_class(self.width < 100, "-narrow")

    def redraw(self) -> None:
        if self.store is None:
            return
        # Narrow: the list above the detail (key/value lines read better full width).
        self.set_class(self.width < 100, "-narrow")
        s = self.store.state
        dumps = list(s.dumps)
        dim = theme_style(self, "aclmon-dim")
        if self.plain:
            self._rows = list(dumps)
            self._offset = s.dumps_dropped
        else:
            chosen = [d for d in dumps if d.kind == "overflow"] if self.overflow_only else dumps
            if self.filter_text:
                chosen = [d for d in chosen if self.filter_text in dump_text(d)]
            rows: list[str | ev.DumpFileSeen] = []
            if self.grouped:
                counts: dict[str, int] = {}
                for d in chosen:
                    counts[group_of(d)] = counts.get(group_of(d), 0) + 1
                order = sorted(counts, key=lambda g: (g != OVERFLOW_GROUP,))
                by_group: dict[str, list[ev.DumpFileSeen]] = {g: [] for g in order}
                for d in chosen:
                    by_group[group_of(d)].append(d)
                for name in order:
                    rows.append(f"{name}  ({counts[name]})")
                    rows.extend(by_group[name])
            else:
                rows = list(chosen)
            self._rows = rows
            self._offset = 0
            self.vlist.clear_cache()
        self.vlist.set_rows(self._offset, len(self._rows))
        if self.grouped and self._rows and not self._placed:
            # A directory is read top down: start on the first file, not following the end.
            self._placed = True
            self.vlist.move_cursor_to(1)
        head = Text(
            f" {'TIME (UTC)':<12}  {'KIND':<9}  {'SIZE':>9}  FILE", style="bold", no_wrap=True
        )
        self.query_one("#dumps-header", Static).update(head)
        text = Text(f"{s.dumps_total} dump file(s)", style=Style(bold=True), no_wrap=True,
                    overflow="ellipsis")  # fmt: skip
        overflow = sum(1 for d in dumps if d.kind == "overflow")
        if overflow:
            text.append(f"  ·  {overflow} overflow", style=theme_style(self, "aclmon-bad"))
        if s.dumps_dropped:
            text.append(f"  ·  {s.dumps_dropped} older dropped", style=dim)
        if self.grouped:
            groups = sum(1 for r in self._rows if isinstance(r, str))
            text.append(f"  ·  {groups} group(s)", style=dim)
        if self.overflow_only:
            text.append(f"  ·  overflow only ({self.key('dumps.overflow_only', 'o')})", style=dim)
        if self.filter_text:
            shown = sum(1 for r in self._rows if not isinstance(r, str))
            text.append(f"  ·  filter “{self.filter_text}”: {shown} shown", style=dim)
        text.append("  ·  Enter decodes the selected file", style=dim)
        self.query_one("#dumps-status", Static).update(text)
        if not self.detail_shown:
            self._show_summary(self.vlist.cursor)

    def _show_summary(self, index: int) -> None:
        styles = {
            "dim": theme_style(self, "aclmon-dim"),
            "bad": theme_style(self, "aclmon-bad", bold=True),
        }
        row = index - self._offset
        entry = self._rows[row] if 0 <= row < len(self._rows) else None
        renderable: RenderableType
        if isinstance(entry, str):
            renderable = Text(entry, style=Style(bold=True))
            renderable.append("\n\nmove to a file; Enter decodes it", style=styles["dim"])
        elif entry is None:
            renderable = Text("No dump files yet.", style=styles["dim"])
        else:
            renderable = Group(render_summary(entry, styles), self._action_hints(entry))
        self.query_one("#dump-detail", Static).update(renderable)

    def _action_hints(self, dump: ev.DumpFileSeen) -> Text:
        keys = [
            ("dumps.export", "e", "exports its tensors as .npy"),
            ("dumps.copy_path", "y", "copies its path"),
            ("dumps.copy_op", "Y", "the operator's name"),
        ]
        if dump.kind == "overflow":
            keys[:0] = [
                ("dumps.to_operator", "t", "goes to the operator that overflowed"),
                ("dumps.first_overflow", "F", "to the first overflow of this step"),
            ]
        if self._back:
            keys.append(("dumps.back", "b", "back"))
        return Text(
            " · ".join(f"{self.key(i, k)} {what}" for i, k, what in keys),
            style=theme_style(self, "aclmon-dim"),
        )

    def show_detail(self, renderable: RenderableType) -> None:
        """Show a decoded file (or its progress) in the pane."""
        self.query_one("#dump-detail", Static).update(renderable)
        self.query_one("#dump-detail-scroll", VerticalScroll).scroll_home(animate=False)

    def _render_row(self, index: int, width: int) -> Text:
        row = index - self._offset
        if not 0 <= row < len(self._rows):
            return Text("")
        entry = self._rows[row]
        dim = theme_style(self, "aclmon-dim")
        if isinstance(entry, str):
            return Text(f" {entry}", style=Style(bold=True, underline=True), no_wrap=True)
        indent = "  " if self.grouped else " "
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{indent}{fmt.utc_time(entry.ts_ns):<12}  ", style=dim)
        if entry.kind == "overflow" and self.grouped:
            summary = entry.summary if isinstance(entry.summary, dict) else {}
            text.append("overflow  ", style=theme_style(self, "aclmon-bad", bold=True))
            text.append(f"{overflow_meaning(summary)}  ")
            text.append(f"→ {overflowing_operator(summary)}", style=Style(bold=True))
            return text
        bad = theme_style(self, "aclmon-bad", bold=True)
        # an exception dump: what the runtime saved of an operator that raised
        kind = "exception" if entry.kind == "exception-dump" else entry.kind
        text.append(f"{kind:<9}", style=bad if entry.kind == "overflow" else Style())
        text.append(f"  {fmt.size(entry.size):>9}  ")
        if entry.kind == "overflow":  # its file name is the debug task's: name the operator
            summary = entry.summary if isinstance(entry.summary, dict) else {}
            text.append(f"→ {overflowing_operator(summary)}  ", style=Style(bold=True))
        name_width = max(8, width - len(text))
        text.append(middle(os.path.basename(entry.path), name_width))
        return text
