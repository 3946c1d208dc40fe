"""The Profiling view: a checklist of ACL_PROF_* flags that sends nothing until
Enter, the AI Core metric and devices, start/stop of profiling to files, live
operator timings on their own key, the agent's reply, the operator table
(:mod:`aclmon.tui.views.optable`) and the newest msproftx marks and ranges.

Safety: every key here either moves the cursor or edits the *pending*
configuration; only Enter (apply), ``p`` (start/stop) and ``t`` (live timings)
post a message that leads to a command, and none of them exists in a
read-only viewer.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar, NamedTuple

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from aclmon import events as ev
from aclmon.acl_constants import (
    ACL_AICORE_PIPE_UTILIZATION,
    AICORE_METRICS,
    PROF_FLAGS,
    error_name,
    error_text,
)
from aclmon.store import Store, StoreState
from aclmon.store.sections import OPS, PROFILING
from aclmon.tui import fmt
from aclmon.tui.style import middle, roles
from aclmon.tui.views.base import AtMostEvery, Command, View, text_key
from aclmon.tui.views.optable import OpTable

#: metric cycle order for ``m``.
METRIC_ORDER: tuple[int, ...] = tuple(AICORE_METRICS)
#: width of one checklist cell (``> [x] ● TASK_TIME_L0 *``), at most and at least.
CELL_WIDTH = 28
CELL_MIN = 22
#: a view this tall shows three lines of msproftx records, a shorter one one line.
TX_TALL = 36
#: seconds between two drawings of the operator table and msproftx while only
#: their figures move (every execution moves them)
TIMINGS_EVERY = 1.0
#: who owns profiling when aclmon must not offer start/stop.
FOREIGN_OWNERS = ("acl.json", "job")


class ProfilingConfig(NamedTuple):
    """A profiling configuration: what a start uses (flags 0 = live operator timings)."""

    flags: int
    metric: int
    devices: tuple[int, ...]


#: what an agent that has not said anything yet would use.
INITIAL_CONFIG = ProfilingConfig(0, ACL_AICORE_PIPE_UTILIZATION, ())


def agent_config(prof: ev.ProfilingState | None) -> ProfilingConfig:
    """The configuration the agent's next start uses, as it reported it."""
    if prof is None:
        return INITIAL_CONFIG
    return ProfilingConfig(prof.next_flags, prof.next_metrics, tuple(prof.next_devices))


def reply_text(reply: ev.Reply) -> str:
    """A reply in words, the error said once: the agent's message already names
    the code when it explains a refusal."""
    if reply.code == 0:
        return reply.message or "ok"
    if error_name(reply.code) in reply.message:
        return reply.message
    return (
        f"{error_text(reply.code)} — {reply.message}" if reply.message else error_text(reply.code)
    )


class ProfilingView(View):
    """ACL_PROF_* checklist, metric, devices, start/stop, live timings, reply, op timings."""

    SECTIONS = (PROFILING, OPS)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "move(1)", "Down", show=False, id="profiling.down"),
        Binding("up,k", "move(-1)", "Up", show=False, id="profiling.up"),
        Binding("right,l", "move_column(1)", "Right", show=False, id="profiling.right"),
        Binding("left,h", "move_column(-1)", "Left", show=False, id="profiling.left"),
        Binding("space", "check", "Check", id="profiling.check"),
        Binding("enter", "apply", "Apply", id="profiling.apply"),
        Binding("escape", "discard", "Discard", id="profiling.discard"),
        # m and v are shown beside what they change (the footer must fit 80 columns).
        Binding("m", "next_metric", "Metric", show=False, id="profiling.metric"),
        Binding("v", "next_devices", "Devices", show=False, id="profiling.devices"),
        Binding("p", "start_stop", "Start/stop", id="profiling.start_stop"),
        Binding("t", "live_timings", "Live timings", id="profiling.live"),
        # the operator table's keys are named under it (the footer must fit 80 columns)
        Binding("s", "next_sort", "Sort", show=False, id="profiling.sort"),
        Binding("r", "reverse_sort", "Reverse", show=False, id="profiling.reverse"),
    ]
    can_focus = True
    #: the size the view was last drawn for by a resize
    _resized_to = Size(0, 0)
    DEFAULT_CSS = """
    ProfilingView > #prof-tx { height: auto; padding: 0 1; }
    """

    class ConfigRequested(Message):
        """Enter: send this configuration to the agent."""

        def __init__(self, config: ProfilingConfig) -> None:
            super().__init__()
            self.config = config

    class StartRequested(Message):
        """Start profiling; with ``config``, set it first (live timings: flags 0)."""

        def __init__(self, config: ProfilingConfig | None = None) -> None:
            super().__init__()
            self.config = config

    class StopRequested(Message):
        """Stop aclmon's profiling session."""

    readonly: reactive[bool] = reactive(False)
    """Nothing can be changed from this viewer: no key sends, the view says so."""
    pending: reactive[ProfilingConfig | None] = reactive(None)
    """The edited configuration Enter would send (None: no change)."""
    cursor: reactive[int] = reactive(0)
    """The checklist row under the cursor (index into ``PROF_FLAGS``)."""
    note: reactive[str] = reactive("")
    """What happened to the last command (sent, failed); empty when settled."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._timings_every = AtMostEvery(self, TIMINGS_EVERY, self._draw_timings)

    def compose(self) -> ComposeResult:
        # the state stays in sight; the checklist scrolls under it when the screen is short
        yield Static(id="prof-state", classes="panel")
        with _Controls(id="prof-controls"):
            yield Static(id="prof-flags", classes="panel")
            yield Static(id="prof-reply", classes="panel")
        yield OpTable(id="prof-table")
        yield Static(id="prof-tx")

    # ------------------------------------------------------------ state
    @property
    def prof(self) -> ev.ProfilingState | None:
        return self.store.state.profiling if self.store is not None else None

    @property
    def configured(self) -> ProfilingConfig:
        return agent_config(self.prof)

    @property
    def wanted(self) -> ProfilingConfig:
        """What the checklist shows: the pending edit, else the agent's configuration."""
        return self.pending if self.pending is not None else self.configured

    def _edit(self, config: ProfilingConfig) -> None:
        self.pending = None if config == self.configured else config

    def watch_pending(self) -> None:
        self.redraw()
        self.refresh_bindings()

    def watch_cursor(self) -> None:
        self.redraw()
        if self.is_mounted:
            # keep the cursor's row in sight when the controls scroll (a short terminal)
            flags = self.query_one("#prof-flags", Static)
            row = flags.virtual_region.y + self.cursor % self._rows_per_column()
            self.query_one(_Controls).scroll_to_region(
                Region(0, row, 1, 1), animate=False, immediate=True
            )

    def watch_note(self) -> None:
        self.redraw()

    def watch_readonly(self) -> None:
        if self.is_mounted:
            self.query_one(OpTable).readonly = self.readonly
        self.redraw()
        self.refresh_bindings()

    @property
    def _foreign(self) -> bool:
        prof = self.prof
        return prof is not None and prof.owner in FOREIGN_OWNERS

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("move", "move_column", "next_sort", "reverse_sort"):
            return True
        if self.readonly:
            return False
        if action == "check":
            # Only in the checklist: a space typed in the operator table (a page key
            # elsewhere) must not check a flag out of sight that a later Enter applies.
            # The screen's focus, not has_focus: that follows a Blur event, which
            # comes after a space typed right behind the Tab.
            return self.screen.focused is self
        if action in ("start_stop", "live_timings"):
            return not self._foreign
        if action in ("apply", "discard"):
            return self.pending is not None
        return True

    def focus_target(self) -> Widget:
        """The checklist (the view itself) first; Tab moves on to the operator table."""
        return self

    # ------------------------------------------------------------ keys
    def action_move(self, delta: int) -> None:
        self.cursor = (self.cursor + delta) % len(PROF_FLAGS)

    def action_move_column(self, delta: int) -> None:
        rows = self._rows_per_column()
        target = self.cursor + delta * rows
        if 0 <= target < len(PROF_FLAGS):
            self.cursor = target

    def action_next_sort(self) -> None:
        self.query_one(OpTable).next_sort()

    def action_reverse_sort(self) -> None:
        table = self.query_one(OpTable)
        table.reverse = not table.reverse

    def action_check(self, index: int | None = None) -> None:
        """Check or uncheck the flag at ``index`` (else under the cursor)."""
        if index is not None:
            self.cursor = index
        wanted = self.wanted
        self._edit(wanted._replace(flags=wanted.flags ^ PROF_FLAGS[self.cursor][1]))

    def toggle_flag(self, value: int) -> None:
        """Check or uncheck one flag in the pending configuration (the palette's way)."""
        wanted = self.wanted
        self._edit(wanted._replace(flags=wanted.flags ^ value))

    def set_metric(self, metric: int) -> None:
        if metric in AICORE_METRICS:
            self._edit(self.wanted._replace(metric=metric))

    def action_apply(self) -> None:
        if self.pending is not None:
            self.post_message(self.ConfigRequested(self.pending))

    def action_discard(self) -> None:
        self.pending = None

    def action_next_metric(self) -> None:
        metric = self.wanted.metric
        index = METRIC_ORDER.index(metric) if metric in METRIC_ORDER else -1
        self.set_metric(METRIC_ORDER[(index + 1) % len(METRIC_ORDER)])

    def action_next_devices(self) -> None:
        """Cycle: every device in use -> device 0 -> device 1 -> … -> every device."""
        ids = self.store.device_ids() if self.store is not None else []
        choices: list[tuple[int, ...]] = [(), *((i,) for i in ids)]
        devices = self.wanted.devices
        index = choices.index(devices) if devices in choices else -1
        self._edit(self.wanted._replace(devices=choices[(index + 1) % len(choices)]))

    def tab_count(self, state: StoreState) -> str:
        return " ●" if state.profiling is not None and state.profiling.running else ""

    def palette_commands(self, store: Store) -> list[Command]:
        out = []
        if self.check_action("start_stop", ()):
            out.append(
                Command("Profiling: start / stop", self.action_start_stop,
                        "start or stop profiling in the job")
            )  # fmt: skip
        if not self.readonly:
            wanted = self.wanted
            for name, value in PROF_FLAGS:
                out.append(
                    Command(
                        f"Profiling: toggle {name}",
                        partial(self.toggle_flag, value),
                        "check or uncheck the flag in the Profiling view (Enter there applies)",
                        "now checked" if wanted.flags & value else "now unchecked",
                    )
                )
            for metric, (name, _json_name) in AICORE_METRICS.items():
                out.append(
                    Command(
                        f"Profiling: AI Core metric {name}",
                        partial(self.set_metric, metric),
                        "choose the metric in the Profiling view (Enter there applies)",
                    )
                )
        return out

    def action_start_stop(self) -> None:
        if not self.check_action("start_stop", ()):
            return  # read-only, or the job's acl.json owns profiling (the palette's way in)
        prof = self.prof
        if prof is not None and prof.running and prof.owner == "aclmon":
            self.post_message(self.StopRequested())
        elif self.pending is not None:
            self.note = "apply (Enter) or discard (Esc) the checked changes before starting"
        else:
            self.post_message(self.StartRequested())

    def action_live_timings(self) -> None:
        if not self.check_action("live_timings", ()):
            return
        prof = self.prof
        if prof is not None and prof.running and prof.owner == "aclmon":
            if prof.subscribed:
                self.post_message(self.StopRequested())
            else:
                self.note = "stop profiling to files (p) first: CANN runs one kind at a time"
            return
        self.post_message(self.StartRequested(self.wanted._replace(flags=0)))

    def on_click(self, event: events.Click) -> None:
        flags = self.query_one("#prof-flags", Static)
        if event.widget is not flags:
            return
        x, y = event.x - 1, event.y  # the panel's left padding
        rows = self._rows_per_column()
        if 0 <= y < rows and x >= 0:
            index = (x // self._cell_width()) * rows + y
            if index < len(PROF_FLAGS) and not self.readonly:
                self.action_check(index)

    # ------------------------------------------------------------ drawing
    def _columns(self) -> int:
        width = self.width - 2
        return max(1, min(3, width // CELL_MIN))

    def _cell_width(self) -> int:
        return min(CELL_WIDTH, (self.width - 2) // self._columns())

    def _rows_per_column(self) -> int:
        columns = self._columns()
        return (len(PROF_FLAGS) + columns - 1) // columns

    def redraw(self) -> None:
        self.redraw_sections(frozenset(self.SECTIONS))

    def redraw_sections(self, moved: frozenset[str]) -> None:
        """Operator timings move the table and msproftx (at most every
        TIMINGS_EVERY seconds while only they moved); the agent's state and
        replies the controls above (whose keys also redraw them)."""
        if self.store is None or not self.is_mounted:
            return
        if PROFILING in moved:
            self._draw_state()
            self._draw_flags()
            self._draw_reply()
            self._draw_timings()
        else:
            self._timings_every.ask()

    def _draw_timings(self) -> None:
        if self.store is None:
            return
        self._timings_every.drawn()
        self.query_one(OpTable).show(self.store)
        self._draw_tx()

    def _draw_state(self) -> None:
        prof = self.prof
        dim, good, bad, busy, key = roles(self)
        bold = Style(bold=True)
        text = Text()
        text.append("PROFILING  ", style=bold)
        if prof is None:
            text.append("no state from the agent yet", style=dim)
        elif prof.running and not prof.subscribed:
            text.append("● profiling to files", style=good)
        elif prof.running:
            text.append("○ not profiling to files", style=dim)
        elif prof.initialized:
            text.append("○ initialized, not collecting", style=busy)
        else:
            text.append("○ stopped", style=dim)
        if prof is not None and prof.owner:
            foreign = prof.owner in FOREIGN_OWNERS
            text.append(f"   owned by {prof.owner}", style=bad if foreign else dim)
        if prof is not None and prof.output_path:
            text.append(f"   output {middle(prof.output_path, 48)}", style=dim)
        text.append("\nLIVE OPERATOR TIMINGS  ", style=bold)
        live = prof is not None and prof.subscribed
        text.append("● on" if live else "○ off", style=good if live else dim)
        to_files = prof is not None and prof.running and not prof.subscribed
        if to_files:  # CANN runs one kind at a time: t would only be refused
            text.append("   not while profiling to files", style=dim)
        elif not self.readonly and not self._foreign:
            text.append(f"   {self.key('profiling.live', 't')} ", style=key)
            text.append("stop" if live else "start", style=dim)
        wanted = self.wanted
        text.append("\nNEXT START  ", style=bold)
        if wanted.flags:
            count = bin(wanted.flags).count("1")
            text.append(f"profiling to files with {count} flag(s)")
        else:
            text.append("live operator timings (no flag checked)")
        metric_name = AICORE_METRICS.get(wanted.metric, (f"metric {wanted.metric}", ""))[1]
        narrow = self.width < 120
        text.append("\n  " if narrow else "   ", style=dim)
        text.append("AI Core metric ", style=dim)
        text.append(metric_name, style=bold)
        if not self.readonly:
            text.append(f" {self.key('profiling.metric', 'm')}", style=key)
        text.append("   devices ", style=dim)
        devices = ", ".join(map(str, wanted.devices)) if wanted.devices else "all in use"
        text.append(devices, style=bold)
        if not self.readonly:
            text.append(f" {self.key('profiling.devices', 'v')}", style=key)
        if self.pending is not None:
            text.append("\n  " if narrow else "   ")
            text.append("changed: Enter applies, Esc discards", style=busy)
        if self.readonly:
            text.append("\nread-only viewer: nothing here can be changed", style=bad)
        elif self._foreign:
            assert prof is not None
            text.append(
                f"\nthe job's {prof.owner} runs profiling: aclmon does not offer start/stop",
                style=bad,
            )
        elif not (prof is not None and prof.running and prof.owner == "aclmon"):
            text.append(f"\n{self.key('profiling.start_stop', 'p')} ", style=key)
            what = "profiling to files" if wanted.flags else "live operator timings"
            # with a change pending, p refuses until it is applied or discarded
            when = "once the change is applied" if self.pending is not None else "as configured"
            text.append(f"starts {what} {when}", style=dim)
        else:
            text.append(f"\n{self.key('profiling.start_stop', 'p')} ", style=key)
            text.append("stops", style=dim)
        self.query_one("#prof-state", Static).update(text)

    def _draw_flags(self) -> None:
        prof = self.prof
        dim, good, _bad, busy, cursor_style = roles(self)
        # Only a running session has active flags: a stopped one shows none.
        active = prof.flags if prof is not None and prof.running else 0
        configured = self.configured.flags
        wanted = self.wanted.flags
        focused = self.has_focus
        rows = self._rows_per_column()
        lines = [Text(no_wrap=True) for _ in range(rows)]
        for index, (name, value) in enumerate(PROF_FLAGS):
            line = lines[index % rows]
            short = name.removeprefix("ACL_PROF_")
            on = bool(wanted & value)
            changed = bool((wanted ^ configured) & value)
            cell = Text(no_wrap=True)
            here = index == self.cursor and not self.readonly
            cell.append("›" if here else " ", style=cursor_style)
            cell.append("[x]" if on else "[ ]", style=busy if changed else good if on else dim)
            cell.append("●" if active & value else " ", style=good)
            cell.append(
                short,
                style=(Style(bold=True) if on else dim)
                + (Style(reverse=True) if here and focused else Style()),
            )
            cell.append("*" if changed else " ", style=busy)
            cell.truncate(self._cell_width(), pad=True)
            line.append(cell)
        legend = Text("[x] used by the next start · * changed · ● collecting now", style=dim)
        if not self.readonly:
            legend.append("\n↑↓←→ move · space/click checks · Enter applies · Esc discards",
                          style=dim)  # fmt: skip
        self.query_one("#prof-flags", Static).update(Group(*lines, legend))

    def _draw_reply(self) -> None:
        assert self.store is not None
        dim, good, bad, busy, _key = roles(self)
        reply = Text()
        reply.append("AGENT  ", style=dim + Style(bold=True))
        if self.note:
            reply.append(self.note + "   ", style=busy)
        last = self.store.state.last_reply
        if last is None:
            reply.append("no reply yet", style=dim)
        else:
            reply.append("last reply: ")
            reply.append(reply_text(last), style=good if last.code == 0 else bad)
        self.query_one("#prof-reply", Static).update(reply)

    def _draw_tx(self) -> None:
        """msproftx: counts, then the newest marks and ranges (ranges with their
        duration), newest first, packed on one line (three when tall); never wrapped."""
        assert self.store is not None
        s = self.store.state
        dim, good, *_ = roles(self)
        width = max(10, self.width - 2)
        head = Text("MSPROFTX  ", style=Style(bold=True), no_wrap=True, overflow="ellipsis")
        head.append(f"{s.tx_marks} marks · {s.tx_ranges} ranges", style=dim)
        if not s.tx_recent:
            head.append(
                "   none yet: the job's acl.prof mark / push-pop / range_start-stop", style=dim
            )
            head.truncate(width, overflow="ellipsis")
            self.show_static(self.query_one("#prof-tx", Static), head, text_key(head), 1)
            return
        lines = [head]
        head.append("   ")
        room = 3 if self.size.height >= TX_TALL else 1
        line = head
        for record in reversed(s.tx_recent):
            item = Text(no_wrap=True)
            if type(record) is ev.TxRange:
                item.append("▭ ", style=good)
                item.append(middle(record.message or "(no message)", 36))
                item.append(" " + fmt.duration_ns(record.end_ns - record.start_ns), style=dim)
            else:
                item.append("◆ ", style=good)
                item.append(middle(record.message or "(no message)", 36))
                item.append(" " + fmt.utc_time(record.ts_ns), style=dim)
            if line.cell_len + item.cell_len > width:
                if len(lines) >= room:
                    break
                line = Text(no_wrap=True, overflow="ellipsis")
                lines.append(line)
            line.append_text(item)
            line.append("   ")
        for line in lines:
            line.rstrip()
            line.truncate(width, overflow="ellipsis")
        key = tuple(text_key(line) for line in lines)
        self.show_static(self.query_one("#prof-tx", Static), Group(*lines), key, len(lines))

    def focus_changed(self) -> None:
        # Only the checklist shows the focus (its cursor's name reversed): the rest
        # is drawn by the app's refresh when the view is shown. Hidden by a view
        # switch: nothing to draw now, its focus draws it when shown.
        if self.store is not None and self.is_mounted and (self.display or self.has_focus):
            self._draw_flags()

    def on_resize(self, event: events.Resize) -> None:
        # Shown again after a switch, a view is told its size again: the same size
        # draws nothing new.
        if event.size != self._resized_to:
            self._resized_to = event.size
            self.redraw()


class _Controls(VerticalScroll, can_focus=False):
    """The checklist and the reply: as tall as they are, at most half the view
    (then they scroll, following the checklist's cursor)."""

    DEFAULT_CSS = """
    _Controls { height: auto; max-height: 50%; }
    """
