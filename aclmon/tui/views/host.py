"""The Host view: every NPU of the machine and every process on them, as nvitop
shows GPUs: one row per chip (health, power, temperature, AI Core, HBM, ECC,
sparklines of the last minutes), then the processes (pid, user, HBM, container
pid, command), those running aclmon's agent marked.

It draws the store's ``host_npus`` (HostNpuSample events: the viewer's own host
source live, or a recording's). Enter on a process with an agent asks the app
to open that job's screens; ``T``/``K`` send SIGTERM/SIGKILL after a
confirmation, only to the user's own processes, only when the readings are
live and the viewer is not read-only. How the host source is doing right now
(starting, stalled, failing) comes from ``status_of``, asked once a second, so
a stalled back end is said even while no sample arrives.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable, Hashable, Iterable
from itertools import zip_longest
from typing import Any, ClassVar, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widgets import Static

from aclmon.events.host import DeviceReading, HostSnapshot, ProcessReading
from aclmon.host.processes import SignalRefused, SignalTarget, send_signal, signal_target
from aclmon.host.source import HostStatus
from aclmon.store.sections import HOST, JOB
from aclmon.store.state import ChipHistory, HostNpus, StoreState
from aclmon.tui import fmt
from aclmon.tui.columns import Cell, Column
from aclmon.tui.style import Roles, key_values, roles, theme_style
from aclmon.tui.views.base import AtMostEvery
from aclmon.tui.views.devices import command_line
from aclmon.tui.views.listview import ListView, sort_key_of
from aclmon.tui.vlist import VirtualList

#: what the screen shows for a value the back end could not read
UNKNOWN = "–"
MIB = 1 << 20
#: the signals of T and K
SIGNALS = {"SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}
WIDE = 120
#: seconds between two drawings of the host's readings, at least (on the beat)
READING_EVERY = 1.0


#: where watching a process without an agent will come from
class ProcessRow(NamedTuple):
    reading: ProcessReading
    #: the process runs aclmon's agent
    agent: bool
    #: its chip as the device table names it
    chip: str


def chip_label(npu_id: int, chip_id: int, dual: bool) -> str:
    """``3`` for a card with one chip, ``3:1`` for the second die of a dual-chip card."""
    return f"{npu_id}:{chip_id}" if dual else str(npu_id)


def shown(value: Any, template: str = "{}") -> str:
    """``value`` in ``template``, or ``–`` when it is not known (never 0)."""
    return UNKNOWN if value is None else template.format(value)


def memory_text(device: DeviceReading) -> str:
    """HBM used/total; a chip without HBM (310P, 310B) shows its DDR, so marked."""
    if device.hbm_total_mb is not None:
        used = device.hbm_used_mb
        if used is None:
            return f"{UNKNOWN}/{fmt.size(device.hbm_total_mb * MIB)}"
        return fmt.size_pair(used * MIB, device.hbm_total_mb * MIB)
    if device.memory_total_mb is not None and device.memory_used_mb is not None:
        return fmt.size_pair(device.memory_used_mb * MIB, device.memory_total_mb * MIB) + " DDR"
    return UNKNOWN


def history_line(values: Iterable[float | None], width: int, top: float | None = None) -> str:
    """A sparkline of readings, an unknown one as ``·``; ``top`` None: the largest seen."""
    points = [-1.0 if v is None else float(v) for v in values]
    if top is None:
        top = max((v for v in points if v >= 0), default=0.0) or 1.0
    return fmt.sparkline(points, width, top)


class DeviceColumns(NamedTuple):
    """Widths of the device table at one screen width (0: the column is left out)."""

    npu: int
    name: int
    health: int
    temp: int
    power: int
    power_spark: int
    aicore: int
    aicore_spark: int
    memory: int
    memory_spark: int
    ecc: int
    gap: int


def device_columns(width: int) -> DeviceColumns:
    """Sparklines get what the figures leave (most to AI Core); at 80 columns one."""
    if width >= WIDE:
        fixed = 5 + 9 + 8 + 5 + 6 + 4 + 17 + 7 + 2 * 8
        room = max(0, width - fixed - 3 * 1)
        aicore = room * 2 // 5
        power = room * 3 // 10
        memory = room - aicore - power
        return DeviceColumns(5, 9, 8, 5, 6, power, 4, aicore, 17, memory, 7, 2)
    fixed = 4 + 7 + 7 + 4 + 6 + 4 + 15 + 7
    return DeviceColumns(4, 7, 7, 4, 6, 0, 4, max(0, width - fixed - 1), 15, 0, 0, 1)


class SignalConfirm(ModalScreen[bool]):
    """nvitop's question before a signal: which process, whose, which signal; y or n."""

    DEFAULT_CSS = """
    SignalConfirm { align: center middle; }
    #signal-box {
        width: 76; max-width: 100%; height: auto;
        background: $surface; border: round $error; padding: 0 1;
    }
    #signal-box Static { margin: 0 0 1 0; }
    #signal-box Static:last-child { margin: 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Send", id="host.confirm"),
        Binding("n,escape", "answer(False)", "Cancel", id="host.cancel"),
    ]

    def __init__(self, target: SignalTarget, name: str) -> None:
        super().__init__()
        self.target = target
        self.signal_name = name

    def compose(self) -> ComposeResult:
        t = self.target
        dim = theme_style(self, "aclmon-dim")
        with Vertical(id="signal-box"):
            yield Static(Text(f"Send {self.signal_name} to pid {t.pid}?", style="bold"))
            # the whole command, wrapped: the user must see what they are about to end
            yield Static(key_values([("user", t.user), ("command", t.command)], dim))
            yield Static(
                Text.assemble(("y", "bold"), " sends it, ", ("n", "bold"), " or Esc cancels")
            )

    def action_answer(self, send: bool) -> None:
        self.dismiss(send)


class HostView(ListView):
    """The machine's NPUs and the processes on them; see the module docstring."""

    FILTER_HINT = "pid, user, command, NPU"
    SECTIONS = (HOST, JOB)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("T", "signal('SIGTERM')", "Terminate", id="host.terminate"),
        Binding("K", "signal('SIGKILL')", "Kill", id="host.kill"),
    ]
    SORTS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "npu": sort_key_of(
            lambda r: (r.reading.npu_id, r.reading.chip_id), lambda r: r.reading.pid
        ),
        "memory": sort_key_of(lambda r: -(r.reading.memory_mb or -1), lambda r: r.reading.pid),
        "pid": sort_key_of(lambda r: r.reading.pid, lambda r: r.reading.npu_id),
        "user": sort_key_of(lambda r: r.reading.user or "", lambda r: r.reading.pid),
    }
    REDRAWN_BY = ("note",)
    DEFAULT_CSS = """
    HostView #host-devices-scroll { height: auto; max-height: 50%; }
    HostView #host-devices { padding: 0 0 0 1; }
    HostView #host-note { height: auto; padding: 0 1; display: none; }
    HostView #host-note.-shown { display: block; }
    """

    class AttachRequested(Message):
        """Enter on a process: show that job (through its agent, or watched without one)."""

        def __init__(self, pid: int, agent: bool = True) -> None:
            super().__init__()
            self.pid = pid
            self.agent = agent

    readonly: reactive[bool] = reactive(False)
    """Never signal a process (``--readonly``, a replay)."""
    note: reactive[str] = reactive("")
    """The answer to the last key (a refusal, a signal sent), shown under the devices."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sort = "npu"
        #: how the live host source is doing, or None when the readings are not live
        self.status_of: Callable[[], HostStatus | None] = lambda: None
        self._note_shown = ""
        #: (lines, width) of the chips' rows as last laid out
        self._devices_shape = (0, 0)
        # A new reading of the host (once a second, on the host source's own clock)
        # is drawn on the app's beat, in the frame of the header's figures.
        self._reading_every = AtMostEvery(self, READING_EVERY, self.redraw, on_beat=True)

    # ------------------------------------------------------------ composition
    def compose(self) -> ComposeResult:
        yield Static(id=f"{self.id}-status", classes="status")
        yield Static(id="host-devhead", classes="colhead")
        with VerticalScroll(id="host-devices-scroll"):
            yield Static(id="host-devices")
        yield Static(id="host-note")
        yield from self.compose_list()

    def on_mount(self) -> None:  # Textual calls FilteredView's own on_mount too
        self.vlist.set_follow(False)  # a table that is re-read, not a tail

    def on_resize(self) -> None:
        super().on_resize()
        self.draw_devices()  # the chips' rows for the new width, laid out again

    def beat(self) -> None:
        # on the app's beat: a second, only while the view is shown
        super().beat()
        self.follow_status()

    def follow_status(self) -> None:
        """The state line follows the host source even while no sample comes
        (stalled): drawn again when the source is live."""
        if self.store is not None and self.status_of() is not None:
            self.draw_status()

    def tab_count(self, state: StoreState) -> str:
        npus = state.host_npus
        return f" ({len(npus.snapshot.devices)})" if npus.snapshot is not None else ""

    # ------------------------------------------------------------ rows
    @property
    def npus(self) -> HostNpus | None:
        return self.store.state.host_npus if self.store is not None else None

    def source_rows(self) -> tuple[list[Any], int]:
        npus = self.npus
        snapshot = npus.snapshot if npus is not None else None
        if npus is None or snapshot is None or not snapshot.processes:
            return [], 0
        dual = _dual(snapshot)
        rows = [
            ProcessRow(p, p.pid in npus.agent_pids, chip_label(p.npu_id, p.chip_id, dual))
            for p in snapshot.processes
        ]
        return sorted(rows, key=self.SORTS["npu"]), 0

    def columns(self, width: int) -> list[Column]:
        if width >= WIDE:
            return [
                Column("NPU", 5, True, "npu"), Column("PID", 8, True, "pid"),
                Column("USER", 10, sort="user"), Column("HBM", 10, True, "memory"),
                Column("CPID", 8, True), Column("AGENT", 7), Column("COMMAND", 0),
            ]  # fmt: skip
        return [
            Column("NPU", 4, True, "npu"), Column("PID", 7, True, "pid"),
            Column("USER", 8, sort="user"), Column("HBM", 9, True, "memory"),
            Column("AGENT", 5), Column("COMMAND", 0),
        ]  # fmt: skip

    def cells(self, row: ProcessRow) -> dict[str, Cell]:
        p = row.reading
        r = roles(self)
        # the script first, as the Devices view names the job: it survives the cut
        command = command_line(p.command.split()) if p.command else p.name or UNKNOWN
        return {
            "NPU": row.chip,
            "PID": str(p.pid),
            "USER": p.user or UNKNOWN,
            "HBM": UNKNOWN if p.memory_mb is None else fmt.size(p.memory_mb * MIB),
            "CPID": shown(p.container_pid),
            "AGENT": Text("◆ yes", style=r.good) if row.agent else "",
            "COMMAND": Text(command, style=r.dim) if command == UNKNOWN else command,
        }

    def draw_header(self) -> None:
        super().draw_header()
        npus = self.npus
        snapshot = npus.snapshot if npus is not None else None
        if snapshot is not None and not snapshot.processes and self.is_mounted:
            why = (
                "this back end does not list processes"
                if snapshot.processes is None
                else "no process holds an NPU"
            )
            self.show_line(f"#{self.id}-header", Text(f" {why}", style=roles(self).dim))

    def selected_row(self) -> ProcessRow | None:
        row = self.row_at(self.vlist.cursor)
        return row if isinstance(row, ProcessRow) else None

    # ------------------------------------------------------------ drawing
    def redraw_sections(self, moved: frozenset[str]) -> None:
        """The job's section moves with each of its samples (twice a second); of it
        this view shows only where the job runs, in the status line. The chips and
        the processes are drawn again only for a new reading of the host: a live one
        on the app's beat (at once in an app that does not beat, as ``aclmon top``),
        a recorded one at once (it moves with the user's seeks)."""
        if HOST in moved and self.status_of() is not None:
            self._reading_every.ask()
        elif HOST in moved:
            self.redraw()
        elif self.is_mounted:
            self.draw_status()

    def list_row_key(self) -> Callable[[int], Hashable] | None:
        return self._row_key

    def _row_key(self, index: int) -> Hashable:
        """A process's row is drawn from its reading, its agent mark and its chip's
        label (and the search's highlight): a row that shows the same is not drawn
        again when the host is read again."""
        return (self.row_at(index), self.filter_text)

    def redraw(self) -> None:
        if self.store is None or not self.is_mounted:
            return
        self._reading_every.drawn()
        chosen = self.selected_row()
        before = self._rows
        super().redraw()
        # another reading of the processes: paint again only the lines whose row
        # changed (a list of another length is painted whole by set_rows)
        self.vlist.refresh_rows(
            self._offset + n
            for n, (was, now) in enumerate(zip_longest(before, self._rows))
            if was != now
        )
        if chosen is not None:
            self._keep_cursor_on(chosen.reading)
        elif self._rows and self.vlist.cursor < 0:
            self.vlist.move_cursor_to(self._offset)
        note = self.query_one("#host-note", Static)
        if self.note != self._note_shown:
            # its height (shown or not, wrapped) may change: a layout, once per note
            self._note_shown = self.note
            note.update(Text(self.note, style=roles(self).busy))
            note.set_class(bool(self.note), "-shown")
        self.draw_devices()

    def _keep_cursor_on(self, reading: ProcessReading) -> None:
        key = (reading.pid, reading.npu_id, reading.chip_id)
        for index, row in enumerate(self._rows):
            p = row.reading
            if (p.pid, p.npu_id, p.chip_id) == key:
                self.vlist.move_cursor_to(self._offset + index)
                return

    def draw_devices(self) -> None:
        npus = self.npus
        if npus is None or not self.is_mounted:
            return
        width = self.query_one("#host-devices", Static).size.width or self.width - 1
        c = device_columns(width)
        r = roles(self)
        self.show_line("#host-devhead", _device_head(c))
        snapshot = npus.snapshot
        if snapshot is None or not snapshot.devices:
            self._show_devices(Text("no chips", style=r.dim), width)
            return
        dual = _dual(snapshot)
        spark = theme_style(self, "aclmon-spark")
        # one scale for every chip's power, so their sparklines compare; from a
        # little under the lowest reading, as power never falls to 0
        powers = [w for h in npus.chips.values() for w in h.power_w if w is not None]
        power_scale = (min(powers, default=0.0) * 0.8, max(powers, default=1.0))
        lines = Text(no_wrap=True, overflow="ellipsis")
        for n, device in enumerate(snapshot.devices):
            if n:
                lines.append("\n")
            history = npus.chips.get(device.key) or ChipHistory()
            lines.append_text(_device_line(device, history, c, r, spark, power_scale, dual))
        self._show_devices(lines, width)

    def _show_devices(self, lines: Text, width: int) -> None:
        """The chips' rows: a repaint each reading, a layout only when their count or
        the width they are drawn for changes (after a resize, rows drawn for the
        old width would keep the old size: a scroll bar under them)."""
        shape = (len(lines.plain.split("\n")), width)
        self.query_one("#host-devices", Static).update(lines, layout=shape != self._devices_shape)
        self._devices_shape = shape

    def describe(self, text: Text, state: Any, dim: Style) -> None:
        r = roles(self)
        npus: HostNpus = state.host_npus
        live = self.status_of()
        snapshot = npus.snapshot
        if snapshot is None and live is None:
            text.append(" no readings of this machine's NPUs here", style=dim)
            text.append(
                "  (aclmon top, attach and demo read them; aclmon record --host records them)",
                style=dim,
            )
            return
        text.append(f" {npus.host or socket.gethostname()}", style=Style(bold=True))
        self._append_state(text, npus, live, r)
        if snapshot is not None:
            source = snapshot.source or "no back end"
            processes = snapshot.processes
            text.append(f"  ·  {source}  ·  {len(snapshot.devices)} chips  ·  ")
            if processes is None:
                text.append("processes not reported", style=dim)
            else:
                pids = {p.pid for p in processes}
                text.append(f"{len(pids)} process{'es' if len(pids) != 1 else ''}")
                if npus.agent_pids:
                    text.append(f" ({len(npus.agent_pids & pids)} with the agent ◆)")
        hello = state.hello
        if hello is not None and npus.host and hello.host != npus.host:
            text.append(f"  ·  the job runs on {hello.host}, not here", style=r.busy)
        if npus.refused:
            text.append(
                f"  ·  {npus.refused} unreadable samples ({npus.refused_reason})", style=r.bad
            )
        text.append(self.filter_note(len(self._rows), self.match_count()) + self.sort_note(), dim)

    def _append_state(self, text: Text, npus: HostNpus, live: HostStatus | None, r: Roles) -> None:
        latest = npus.latest
        if live is not None:
            state, message, age = live.state, live.message, live.age_s
        elif latest is not None:
            state, message, age = latest.state, latest.message, None
            text.append(f"  ·  read {fmt.utc_time(latest.taken_ns, with_ms=False)} UTC", r.dim)
        else:
            return
        style = r.good if state == "ok" else r.busy if state in ("partial", "starting") else r.bad
        text.append("  ·  ")
        text.append(state if state != "starting" else "reading the host…", style)
        if message:
            text.append(f": {message}", style)
        if age is not None and state not in ("ok", "partial", "starting"):
            text.append(f" (showing data from {age:.0f} s ago)", style)
        elif latest is not None and state in ("ok", "partial"):
            text.append(f" ({latest.refresh_ms:.0f} ms a reading)", r.dim)

    # ------------------------------------------------------------ keys
    def watch_readonly(self) -> None:
        self.rebuild()

    @on(VirtualList.Selected)
    def _open(self, message: VirtualList.Selected) -> None:
        message.stop()
        row = self.row_at(message.index)
        if not isinstance(row, ProcessRow):
            return
        self.note = ""
        self.post_message(self.AttachRequested(row.reading.pid, row.agent))

    def action_signal(self, name: str) -> None:
        row = self.selected_row()
        if row is None:
            self.note = "no process selected"
            return
        pid = row.reading.pid
        if self.readonly:
            self.note = f"read-only: no signal is sent (pid {pid})"
            return
        if self.status_of() is None:
            self.note = f"these readings are not live: no signal is sent (pid {pid})"
            return
        try:
            target = signal_target(pid)
        except SignalRefused as exc:
            self.note = str(exc)
            return

        def answered(send: bool | None) -> None:
            if not send:
                self.note = f"{name} not sent"
                return
            try:
                self.note = send_signal(target, SIGNALS[name])
            except SignalRefused as exc:
                self.note = str(exc)

        self.app.push_screen(SignalConfirm(target, name), answered)


def _dual(snapshot: HostSnapshot) -> bool:
    return any(d.chip_id for d in snapshot.devices)


def _cell(text: str, width: int, right: bool = False) -> str:
    text = text[:width]
    return f"{text:>{width}}" if right else f"{text:<{width}}"


def _device_head(c: DeviceColumns) -> Text:
    gap = " " * c.gap
    parts = [
        _cell("NPU", c.npu, True), _cell("Name", c.name), _cell("Health", c.health),
        _cell("Temp", c.temp, True), _cell("Power", c.power + c.power_spark + (1 if c.power_spark else 0)),
        _cell("AI Core", c.aicore + c.aicore_spark + 1), _cell("HBM", c.memory + c.memory_spark + (1 if c.memory_spark else 0)),
    ]  # fmt: skip
    if c.ecc:
        parts.append(_cell("ECC", c.ecc, True))
    return Text(gap.join(parts), style="bold", no_wrap=True, overflow="ellipsis")


def _device_line(
    d: DeviceReading,
    h: ChipHistory,
    c: DeviceColumns,
    r: Roles,
    spark: Style,
    power_scale: tuple[float, float],
    dual: bool,
) -> Text:
    gap = " " * c.gap
    health = d.health or UNKNOWN
    health_style = (
        r.good if health == "OK" else r.busy if health == "Warning" else
        r.dim if health == UNKNOWN else r.bad
    )  # fmt: skip
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(_cell(chip_label(d.npu_id, d.chip_id, dual), c.npu, True) + gap)
    line.append(_cell(d.name or UNKNOWN, c.name) + gap)
    line.append(_cell(health, c.health), health_style)
    line.append(gap + _cell(shown(d.temp_c, "{}°C"), c.temp, True) + gap)
    line.append(_cell(shown(d.power_w, "{:.1f}W"), c.power, True))
    if c.power_spark:
        low, high = power_scale
        above = (None if w is None else w - low for w in h.power_w)
        line.append(" " + history_line(above, c.power_spark, max(high - low, 1.0)), r.dim)
    line.append(gap + _cell(shown(d.aicore_pct, "{}%"), c.aicore, True))
    line.append(" " + history_line(h.aicore_pct, c.aicore_spark, 100.0), spark)
    line.append(gap + _cell(memory_text(d), c.memory, True))
    if c.memory_spark:
        total = d.memory_total_mb if d.hbm_total_mb is None else d.hbm_total_mb
        line.append(" " + history_line(h.memory_used_mb, c.memory_spark, total), spark)
    if c.ecc:
        ecc = f"{shown(d.ecc_single_bit)}/{shown(d.ecc_double_bit)}"
        ecc = UNKNOWN if ecc == f"{UNKNOWN}/{UNKNOWN}" else ecc
        line.append(gap + _cell(ecc, c.ecc, True), r.bad if d.ecc_double_bit else Style())
    return line
