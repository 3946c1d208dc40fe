"""The Dumps view: dump and overflow files, filterable, an overflow-only toggle,
and (for a dump directory) grouped by device, model and step; highlighting a
file shows what the agent said about it, Enter asks for it to be decoded."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

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
from aclmon.dump.naming import parse_dump_name
from aclmon.dump.summary import summary_operator
from aclmon.store import Store
from aclmon.store.sections import DUMPS
from aclmon.store.state import StoreState
from aclmon.tui import fmt
from aclmon.tui.columns import Cell, Column, content_width
from aclmon.tui.dumpdetail import overflowing_operator, render_summary
from aclmon.tui.names import NameFitter
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.base import Command
from aclmon.tui.views.dumplinks import (
    dump_place,
    operator_name,
    overflow_operator,
    overflow_targets,
    overflows_of_step,
)
from aclmon.tui.views.listview import ListView, sort_key_of
from aclmon.tui.vlist import VirtualList

OVERFLOW_GROUP = "Overflow records"
#: below this width the detail pane moves under the list (beside it, at 100
#: columns, the list's file names and the pane would both be cut short)
NARROW = 120
#: list widths below which the time is its seconds and the size goes first
NARROW_LIST = 80
#: the KIND column's word for a file kind (the rest as the agent names them)
KIND_WORDS = {ev.EXCEPTION_DUMP: "exception"}


class OverflowStep(NamedTuple):
    """The overflow records of one step (device, model, step) as one row: the
    first of them, and how many there were (``c``)."""

    first: ev.DumpFileSeen
    #: overflow records the step had
    records: int


def group_of(d: ev.DumpFileSeen) -> str:
    if d.kind == ev.OVERFLOW_DUMP:
        return OVERFLOW_GROUP
    summary = d.summary if isinstance(d.summary, dict) else {}
    return str(summary.get("group") or "other files")


def dump_op(d: ev.DumpFileSeen) -> str:
    """The operator a dump file is about (for an overflow record: the one that
    overflowed), as far as its summary says; "" when it says nothing."""
    summary = d.summary if isinstance(d.summary, dict) else {}
    if d.kind == ev.OVERFLOW_DUMP:
        operator = summary_operator(summary)  # "MatMul mm1"
        return operator.partition(" ")[2] or operator
    return str(summary.get("op_name") or "")


def shown_op(d: ev.DumpFileSeen) -> str:
    """The OPERATOR column's value: the operator, else what is known of it."""
    name = dump_op(d)
    if name:
        return name
    summary = d.summary if isinstance(d.summary, dict) else {}
    if d.kind == ev.OVERFLOW_DUMP:
        return overflowing_operator(summary)
    parsed = parse_dump_name(os.path.basename(d.path))  # its name, as file names spell it
    return parsed.op_name if parsed is not None else os.path.basename(d.path)


def step_key(d: ev.DumpFileSeen) -> tuple[int, str, int, int]:
    """(device, model, model id, step) of the directory a file sits in; -1 / "" unknown."""
    place = dump_place(d.path)
    return (
        -1 if place.device is None else place.device,
        place.model,
        -1 if place.model_id is None else place.model_id,
        -1 if place.step is None else place.step,
    )


class DumpsView(ListView):
    """Dump and overflow files; Enter asks for the selected one to be decoded."""

    FILTER_HINT = "what the columns show: kind, model, step, operator…"
    SECTIONS = (DUMPS,)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "toggle_per_step", "Per step", id="dumps.per_step"),
        # into the pane (to scroll a long decode) and back to the list
        Binding("tab", "toggle_pane", "List/pane", show=False, id="dumps.pane"),
        Binding("t", "to_operator", "To operator", show=False, id="dumps.to_operator"),
        Binding("F", "first_overflow", "First overflow", show=False, id="dumps.first_overflow"),
        Binding("o", "toggle_overflow_only", "Overflow only", id="dumps.overflow_only"),
        Binding("b,backspace", "back", "Back", show=False, id="dumps.back"),
        Binding("e", "export", "Export .npy", show=False, id="dumps.export"),
        Binding("y", "copy_path", "Copy path", show=False, id="dumps.copy_path"),
        Binding("Y", "copy_op", "Copy op name", show=False, id="dumps.copy_op"),
    ]
    SORTS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "time": lambda d: d.ts_ns,
        "kind": sort_key_of(lambda d: d.kind, lambda d: d.ts_ns),
        "step": sort_key_of(step_key, lambda d: d.ts_ns),
        "op": sort_key_of(shown_op, lambda d: os.path.basename(d.path)),
        "size": sort_key_of(lambda d: d.size, lambda d: d.ts_ns),
    }

    REDRAWN_BY = ("grouped", "overflow_only", "per_step")

    class _AboutDump(Message):
        def __init__(self, dump: ev.DumpFileSeen) -> None:
            super().__init__()
            self.dump = dump

    class DecodeRequested(_AboutDump):
        """Enter or double click on a file: decode it (off the UI thread) and
        hand the report back with :meth:`DumpsView.show_detail`."""

    class ExportRequested(_AboutDump):
        """Export a file's tensors as ``.npy`` (as ``aclmon convert`` names them)."""

    grouped: reactive[bool] = reactive(False)
    """Files under a heading per group (overflow records first): a dump directory."""
    overflow_only: reactive[bool] = reactive(False)
    """Only overflow files."""
    per_step: reactive[bool] = reactive(False)
    """Only the first overflow record of each step (device, model, step), with
    how many the step had."""
    detail_shown: reactive[bool] = reactive(False, init=False)
    """The pane holds a decoded file (new files must not replace it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: the operator names of the rows, fitted so that they stay told apart
        self.names = NameFitter()
        self._widths = {"model": 5, "step": 4, "kind": 7}
        self._placed = False
        #: where a jump came from: (file, overflow only, filter), newest last
        self._back: list[tuple[ev.DumpFileSeen | None, bool, str]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="dumps-status", classes="status")
        with Horizontal():
            with Vertical(id="dumps-left"):
                yield from self.compose_list()
            with VerticalScroll(id="dump-detail-scroll"):
                yield Static(id="dump-detail")

    def on_show(self) -> None:
        # Open scrolled to the cursor, wherever the list was left.
        vlist = self.vlist
        self.call_after_refresh(vlist.scroll_to_cursor)

    @property
    def narrowed(self) -> bool:
        return self.grouped or self.overflow_only or self.per_step

    # ------------------------------------------------------------ state
    def action_toggle_overflow_only(self) -> None:
        self.overflow_only = not self.overflow_only

    def action_toggle_per_step(self) -> None:
        self.per_step = not self.per_step

    def action_toggle_pane(self) -> None:
        pane = self.query_one("#dump-detail-scroll", VerticalScroll)
        if pane.has_focus:
            self.vlist.focus()
        else:
            pane.focus()

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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "to_operator" and self.key("dumps.to_operator", "t") in self.app_keys:
            # a replay's t (go to time) where an overflow record has no operator to go to
            selected = self.selected_dump()
            return selected is not None and selected.kind == ev.OVERFLOW_DUMP
        return super().check_action(action, parameters)

    def tab_count(self, state: StoreState) -> str:
        return f" ({state.dumps_total})" if state.dumps_total else ""

    def palette_commands(self, store: Store) -> list[Command]:
        out = []
        selected = self.selected_dump()
        if selected is not None:
            actions = [
                ("export its tensors as .npy", self.action_export,
                 "the selected file's tensors as .npy files, named as aclmon convert names them"),
                ("copy its path", self.action_copy_path,
                 "the selected file's path, to the clipboard"),
                ("copy its operator name", self.action_copy_op,
                 "the selected file's operator name, to the clipboard"),
            ]  # fmt: skip
            if selected.kind == ev.OVERFLOW_DUMP:
                actions += [
                    ("jump to the overflowing operator", self.action_to_operator,
                     "select the operator dump the selected overflow record points at"),
                    ("first overflow of this step", self.action_first_overflow,
                     "select the first overflow record of the selected record's step"),
                ]  # fmt: skip
            out += [Command(f"Dump: {name}", action, what) for name, action, what in actions]
        out.append(
            Command(
                "Dump: back",
                self.action_back,
                "select the file that was selected before the last jump",
            )
        )
        return out

    # ------------------------------------------------------------ row actions
    def selected_dump(self) -> ev.DumpFileSeen | None:
        return self.dump_at(self.vlist.cursor)

    def _selected_overflow(self) -> ev.DumpFileSeen | None:
        dump = self.selected_dump()
        if dump is None or dump.kind != ev.OVERFLOW_DUMP:
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
        self.jump_to(target)

    def action_first_overflow(self) -> None:
        """To the earliest overflow record of the selected record's step (directory)."""
        overflow = self._selected_overflow()
        if overflow is None or self.store is None:
            return
        same = overflows_of_step(overflow, list(self.store.state.dumps))
        if same and same[0] is overflow:
            self.notify(f"this is the first overflow of its step ({len(same)} in it)", timeout=3)
            return
        self.jump_to(same[0] if same else overflow)

    def jump_to(self, target: ev.DumpFileSeen) -> None:
        """Select ``target`` (lifting a filter or toggle that hides it); Back returns."""
        self._back.append((self.selected_dump(), self.overflow_only, self.filter_text))
        del self._back[:-64]
        if not self._show_dump(target):
            # hidden by the filter or the overflow-only toggle: show every file
            self.overflow_only = False
            self.set_filter("")
            self._show_dump(target)

    def action_back(self) -> None:
        """Back to where the last jump started."""
        if not self._back:
            self.notify("nothing to go back to", timeout=2)
            return
        dump, overflow_only, filter_text = self._back.pop()
        self.overflow_only = overflow_only
        self.set_filter(filter_text)
        if dump is not None:
            self._show_dump(dump)

    def _show_dump(self, dump: ev.DumpFileSeen) -> bool:
        def shows(entry: Any) -> bool:
            entry = entry.first if isinstance(entry, OverflowStep) else entry
            return entry is dump or entry == dump

        self.detail_shown = False
        if not self.select(shows):
            return False
        self.vlist.focus()
        # the list may have just grown (a toggle lifted): scroll once it is laid out
        self.call_after_refresh(self.vlist.scroll_to_cursor)
        return True

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
        if dump.kind == ev.OVERFLOW_DUMP:
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
        entry = self.row_at(index)
        if isinstance(entry, OverflowStep):
            return entry.first
        return entry if isinstance(entry, ev.DumpFileSeen) else None

    def on_resize(self) -> None:
        super().on_resize()
        self.set_class(self.width < NARROW, "-narrow")

    def source_rows(self) -> tuple[list[Any], int]:
        assert self.store is not None
        return list(self.store.state.dumps), self.store.state.dumps_dropped

    def row_text(self, row: Any) -> str:
        return "" if isinstance(row, str) else super().row_text(row)

    def narrow(self, rows: list[Any]) -> list[Any]:
        only_overflows = self.overflow_only or self.per_step
        return [d for d in rows if d.kind == ev.OVERFLOW_DUMP] if only_overflows else rows

    def order_rows(self, rows: list[Any]) -> list[Any]:
        if self.per_step:
            steps: dict[tuple[int, str, int, int], list[ev.DumpFileSeen]] = {}
            for d in rows:
                steps.setdefault(step_key(d), []).append(d)
            firsts = [
                OverflowStep(min(same, key=lambda d: (d.ts_ns, d.seq)), len(same))
                for same in steps.values()
            ]
            key = self.SORTS.get(self.sort, self.SORTS["time"])
            return sorted(firsts, key=lambda g: key(g.first), reverse=self.sort_reverse)
        rows = self.sorted(rows)
        if not self.grouped:
            return rows
        by_group: dict[str, list[ev.DumpFileSeen]] = {}
        for d in rows:
            by_group.setdefault(group_of(d), []).append(d)
        out: list[str | ev.DumpFileSeen] = []
        for name in sorted(by_group, key=lambda g: g != OVERFLOW_GROUP):
            out.append(f"{name}  ({len(by_group[name])})")
            out.extend(by_group[name])
        return out

    def measure_rows(self, rows: list[Any]) -> None:
        dumps = [
            r.first if isinstance(r, OverflowStep) else r for r in rows if not isinstance(r, str)
        ]
        # fitted among every file's operator, not only those shown (as Exceptions)
        assert self.store is not None
        self.names = self.names.updated(dump_op(d) for d in self.store.state.dumps)
        places = {os.path.dirname(d.path): dump_place(d.path) for d in dumps}.values()
        self._widths = {
            "model": content_width((p.model or "–" for p in places), 5, 20),
            "step": content_width((str(p.step) for p in places if p.step is not None), 4, 8),
            "kind": content_width((KIND_WORDS.get(d.kind, d.kind) for d in dumps), 4, 9),
        }

    def columns(self, width: int) -> list[Column]:
        w = self._widths
        narrow = width < NARROW_LIST
        return [
            Column("TIME", 6, sort="time", key="time", cut="start")
            if narrow
            else Column("TIME (UTC)", 12, sort="time", key="time", cut="start"),
            Column("KIND", w["kind"], sort="kind", key="kind"),
            Column("DEV", 3, right=True, sort="step", key="device"),
            Column("MODEL", w["model"], sort="step", key="model", cut="middle"),
            Column("STEP", w["step"], right=True, sort="step", key="step"),
            *([Column("COUNT", 5, right=True, key="count")] if self.per_step else []),
            Column("SIZE", 9, right=True, sort="size", key="size", drop=1),
            Column("OPERATOR", 0, sort="op", key="op", cut=self.names.fit, least=16),
        ]

    def cells(self, row: Any) -> dict[str, Cell]:
        dump, count = (row.first, row.records) if isinstance(row, OverflowStep) else (row, 1)
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        place = dump_place(dump.path)
        named = bool(dump_op(dump))
        return {
            "time": Text(fmt.utc_time(dump.ts_ns), style=dim),
            "kind": Text(
                KIND_WORDS.get(dump.kind, dump.kind),
                style=bad if dump.kind in (ev.OVERFLOW_DUMP, ev.EXCEPTION_DUMP) else Style(),
            ),
            "device": "–" if place.device is None else str(place.device),
            "model": Text(place.model or "–", style=dim),
            "step": "–" if place.step is None else str(place.step),
            "count": Text(f"×{count}", style=Style(bold=count > 1)),
            "size": fmt.size(dump.size),
            # an overflow record's file is the debug task's: the operator that overflowed
            "op": Text(shown_op(dump), style=Style(bold=True) if named else dim),
        }

    def redraw(self) -> None:
        if self.store is None or not self.is_mounted:
            return
        # Narrow: the list above the detail (key/value lines read better full width).
        self.set_class(self.width < NARROW, "-narrow")
        super().redraw()
        if self.grouped and self._rows and not self._placed:
            # A directory is read top down: start on the first file, not following the end.
            self._placed = True
            self.vlist.move_cursor_to(1)
        if not self.detail_shown:
            self._show_summary(self.vlist.cursor)

    def describe(self, text: Text, s: StoreState, dim: Style) -> None:
        text.append(f"{s.dumps_total} dump file(s)", style=Style(bold=True))
        overflow = sum(1 for d in s.dumps if d.kind == ev.OVERFLOW_DUMP)
        if overflow:
            text.append(f"  ·  {overflow} overflow", style=theme_style(self, "aclmon-bad"))
        if s.dumps_dropped:
            text.append(f"  ·  {s.dumps_dropped} older dropped", style=dim)
        if self.grouped and not self.per_step:
            groups = sum(1 for r in self._rows if isinstance(r, str))
            text.append(f"  ·  {groups} group(s)", style=dim)
        if self.per_step:
            steps = len(self._rows)
            text.append(
                f"  ·  first overflow of each of {steps} step(s)"
                f" ({self.key('dumps.per_step', 'c')})",
                style=dim,
            )
        elif self.overflow_only:
            text.append(f"  ·  overflow only ({self.key('dumps.overflow_only', 'o')})", style=dim)
        shown = sum(1 for r in self._rows if not isinstance(r, str))
        text.append(self.filter_note(shown, self.match_count()), style=dim)
        text.append(self.sort_note(), style=dim)
        text.append("  ·  Enter decodes the selected file", style=dim)

    def _show_summary(self, index: int) -> None:
        styles = {
            "dim": theme_style(self, "aclmon-dim"),
            "bad": theme_style(self, "aclmon-bad", bold=True),
        }
        entry = self.row_at(index)
        # drawn again only for another row (a refresh that changed nothing keeps it)
        key = (entry, bool(self._back), self.width)
        if self._static_keys.get("dump-detail", (None,))[0] == key:
            return
        renderable: RenderableType
        if isinstance(entry, OverflowStep):
            first = Text(
                f"the first of {entry.records} overflow record(s) of this step\n",
                style=styles["bad"],
            )
            renderable = Group(
                first, render_summary(entry.first, styles), self._action_hints(entry.first)
            )
        elif isinstance(entry, str):
            renderable = Text(entry, style=Style(bold=True))
            renderable.append("\n\nmove to a file; Enter decodes it", style=styles["dim"])
        elif entry is None:
            renderable = Text("No dump files yet.", style=styles["dim"])
        else:
            renderable = Group(render_summary(entry, styles), self._action_hints(entry))
        pane = self.query_one("#dump-detail", Static)
        self.show_static(pane, renderable, key, self._height(renderable, pane))

    def _height(self, renderable: RenderableType, pane: Static) -> int:
        """The pane's height with ``renderable`` in it: its lines, or the pane's own
        height when they fit (its least, app.tcss). Another summary of the same
        height is drawn in place, without laying the screen out again."""
        console = self.app.console
        width = pane.content_region.width or max(20, self.width // 2)
        lines = len(console.render_lines(renderable, console.options.update_width(width)))
        return max(lines, self.query_one("#dump-detail-scroll").content_region.height)

    def _action_hints(self, dump: ev.DumpFileSeen) -> Text:
        keys = [
            ("dumps.export", "e", "exports its tensors as .npy"),
            ("dumps.copy_path", "y", "copies its path"),
            ("dumps.copy_op", "Y", "the operator's name"),
        ]
        if dump.kind == ev.OVERFLOW_DUMP:
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
        self._static_keys.pop("dump-detail", None)  # no row's summary is shown now
        self.query_one("#dump-detail", Static).update(renderable)
        self.query_one("#dump-detail-scroll", VerticalScroll).scroll_home(animate=False)

    def render_row(self, row: Any, width: int) -> Text:
        if isinstance(row, str):  # a group's heading (a dump directory)
            return Text(f" {row}", style=Style(bold=True, underline=True), no_wrap=True)
        return super().render_row(row, width)
