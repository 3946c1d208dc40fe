"""The replay timeline (where the replay is, the recording as a bar with its
exceptions and overflows) and the go-to-time prompt."""

from __future__ import annotations

import bisect
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from aclmon.store.replay import EXCEPTION, OVERFLOW, ReplayEngine
from aclmon.tui import fmt
from aclmon.tui.style import theme_style


class Timeline(Static):
    """Two lines under the views: where the replay is, and the whole recording
    as a bar with its exceptions (✖) and overflows (▲) marked."""

    # A fixed height: its text changes on every tick, its size never should
    # (an auto height would make every update re-layout the screen).
    DEFAULT_CSS = """
    Timeline {
        height: 2;
        background: $surface;
        text-wrap: nowrap;  /* the status never wraps over the bar */
        text-overflow: ellipsis;
    }
    """

    playing: reactive[bool] = reactive(False)
    """Playback runs."""
    seeking: reactive[bool] = reactive(False)
    """A seek is folding on a worker thread."""
    speed: reactive[float] = reactive(1.0)
    """Playback speed (recording seconds per wall second)."""
    cursor_ts: reactive[int] = reactive(0)
    """Recording time shown (ns)."""
    warnings: reactive[tuple[str, ...]] = reactive(())
    """What is wrong with the file (a cut, an index error)."""

    def __init__(self, engine: ReplayEngine) -> None:
        super().__init__(id="timeline")
        self.engine = engine
        # the bar's marker cells: recomputed only when the width or the markers change
        self._marks_key: tuple[int, int, int, int] | None = None
        self._marks: list[tuple[int, str]] = []
        self._drawn: Text | None = None

    def on_mount(self) -> None:
        # the position moves on every tick (refresh_timeline); these redraw at once
        for name in ("playing", "seeking", "speed", "warnings"):
            self.watch(self, name, self.refresh_timeline, init=False)

    def refresh_timeline(self) -> None:
        """Redraw: the position moves with the engine, on every tick."""
        if not self.is_mounted:
            return

        engine = self.engine
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        busy = theme_style(self, "aclmon-busy", bold=True)
        n = len(engine)
        pos = engine.position
        first = engine.first_ts or 0
        last = engine.last_ts or 0
        now = self.cursor_ts
        line = Text(no_wrap=True, overflow="ellipsis")
        if self.seeking:
            line.append(" ⧗ seeking… ", style=busy)
        elif self.playing:
            line.append(" ▶ playing ", style=Style(bold=True))
        elif pos >= n and engine.index.indexed:
            line.append(" ■ at the end ", style=dim)
        else:
            line.append(" ⏸ paused ", style=Style(bold=True))
        line.append(f"x{_speed_label(self.speed)}  ", style=Style(bold=True))
        # narrow: the times and what is ahead first, in fewer words (the rest may be cut)
        narrow = self.size.width < 110
        if now:
            line.append(f"{fmt.utc_time(now)}{'' if narrow else ' UTC'}  ")
            if narrow:  # whole seconds: the time beside it has the milliseconds
                line.append(f"{_clock(now - first)[:-4]}/{_clock(last - first)[:-4]}  ", style=dim)
            else:
                line.append(f"{_clock(now - first)} / {_clock(last - first)}  ", style=dim)
        exceptions, overflows = engine.markers(EXCEPTION), engine.markers(OVERFLOW)
        ahead_exc = _count_after(exceptions, pos)
        ahead_ovf = _count_after(overflows, pos)
        if narrow:
            if ahead_exc or ahead_ovf:
                line.append(f"ahead {ahead_exc}✖ {ahead_ovf}▲  ", style=dim)
            line.append(f"#{pos:,}/{n:,}", style=dim)
        else:
            line.append(f"event {pos:,} / {n:,}", style=dim)
            if ahead_exc or ahead_ovf:
                line.append(
                    f"  ·  ahead: {ahead_exc} exception(s), {ahead_ovf} overflow(s)", style=dim
                )
        if not engine.ready:
            done = engine.scanned / n if n else 0.0
            line.append(f"  ·  indexing {done:.0%}", style=busy)
        if pos == 0 and not self.playing and not self.seeking and n:
            # the longest wording of the keys that fits: a hint is never cut
            room = self.size.width - 2 - line.cell_len
            hint = next((h for h in START_HINTS if len(h) <= room), "")
            line.append(hint, style=dim)
        for warning in self.warnings:
            line.append(f"  ·  ⚠ {warning}", style=bad)
        width = max(10, self.size.width - 2)
        marks = self._marker_cells(width, n, exceptions, overflows)
        bar = _bar(width, n, pos, marks, dim, bad)
        text = Text.assemble(line, "\n ", bar)
        if text != self._drawn:
            # Its height is fixed: a new text repaints these two lines, never
            # lays out the screen (which costs as much as painting the whole view).
            self._drawn = text
            self.update(text, layout=False)

    def _marker_cells(
        self, width: int, n: int, exceptions: list[int], overflows: list[int]
    ) -> list[tuple[int, str]]:
        """(cell, mark) of the bar's exceptions and overflows, in cell order (an
        exception wins a cell it shares with an overflow). Markers only grow, so
        their counts tell when they changed: a seek or a tick redraws the bar
        without going over thousands of them again."""
        key = (width, n, len(exceptions), len(overflows))
        if key != self._marks_key:
            cells: dict[int, str] = {}
            for frames, mark in ((overflows, "▲"), (exceptions, "✖")):
                for frame in frames:
                    cells[min(width - 1, frame * width // n) if n else 0] = mark
            self._marks = sorted(cells.items())
            self._marks_key = key
        return self._marks


#: the keys to start with, longest wording first (the one that fits is shown)
START_HINTS = (
    "  ·  space plays · E goes to the end · > finds the next exception or overflow",
    "  ·  space plays · E to the end · > next exception/overflow",
    "  ·  space plays · E end · > next ✖▲",
    "  space plays",
)


def _bar(
    width: int, n: int, pos: int, marks: list[tuple[int, str]], dim: Style, bad: Style
) -> Text:
    """The recording as ``width`` cells: played (━), to come (─, dim), the markers
    and the cursor (●); one style span per marker, not one per cell."""
    cursor = min(width - 1, pos * width // n) if n else 0
    cells = ["━"] * (cursor + 1) + ["─"] * (width - cursor - 1)
    for cell, mark in marks:
        cells[cell] = mark
    cells[cursor] = "●"
    text = Text("".join(cells), no_wrap=True)
    dim_from = cursor + 1  # the cells to come are dim, all but their markers
    for cell, _ in marks:
        if cell == cursor:
            continue
        if cell > cursor:
            if cell > dim_from:
                text.stylize(dim, dim_from, cell)
            dim_from = cell + 1
        text.stylize(bad, cell, cell + 1)
    if dim_from < width:
        text.stylize(dim, dim_from, width)
    text.stylize(Style(bold=True), cursor, cursor + 1)
    return text


def _count_after(frames: list[int], position: int) -> int:
    return len(frames) - bisect.bisect_left(frames, position)


def _speed_label(speed: float) -> str:
    return f"{speed:g}"


def _clock(ns: int) -> str:
    """A duration as H:MM:SS.mmm."""
    ns = max(0, ns)
    seconds, rest = divmod(ns, 1_000_000_000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    return f"{hours}:{minutes:02}:{seconds:02}.{rest // 1_000_000:03}"


class SeekTimeScreen(ModalScreen[str | None]):
    """Asks for a time to jump to."""

    DEFAULT_CSS = """
    SeekTimeScreen {
        align: center middle;
    }
    #seek-box {
        width: 80%;
        height: auto;
        background: $surface;
        border: round $primary;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_none", "Cancel", id="replay.seek_cancel"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="seek-box"):
            yield Static(
                "Jump to: start · end · +10s · -2m · 90 (s from start) ·"
                " 14:03:07.250 (UTC) · 2026-12-02T14:03:07Z",
                classes="title",
            )
            yield Input(placeholder="time", id="seek-input")
            yield Static(id="seek-error")

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.dismiss(message.value)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
