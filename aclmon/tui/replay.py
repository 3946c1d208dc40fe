"""``aclmon replay``: a recording or a dump directory in the same screens as a live session.

A recording plays through the live app's own store and views
(:class:`ReplayApp` is the live :class:`~aclmon.tui.app.AclmonApp` plus a
timeline). The store is the :class:`~aclmon.store.replay.ReplayEngine`'s, so
what is on screen at any point is the fold of the events before it: exactly
what the live view showed then. Seeks that would fold many frames run on a
worker thread and swap the finished state in.

A dump directory alone opens in the dumps view, its files announced as the
agent would have announced them (:func:`~aclmon.tui.replay_inputs.dump_events`,
computed off the UI thread) and shown grouped: overflow records first, then
operator dumps by device, model and step. Enter decodes a file off the UI
thread, as in a live session.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static

from aclmon import events as ev
from aclmon.errors import AclmonError
from aclmon.store import Store
from aclmon.store.replay import (
    EXCEPTION,
    OVERFLOW,
    ReplayEngine,
    SeekTimeError,
    parse_seek_time,
)
from aclmon.tui import fmt
from aclmon.tui.app import AclmonApp
from aclmon.tui.dumpdetail import decode_for_view
from aclmon.tui.replay_inputs import Cancelled, ReplayInputs, dump_events, resolve_dump_path
from aclmon.tui.sources import CONNECTED, ENDED, Source
from aclmon.tui.views import DumpsView, theme_style

#: playback speeds, slowest first (x0.25 .. x64)
SPEEDS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: seeks folding more frames than this run on a worker thread
SYNC_SEEK_FRAMES = 30_000
#: the [ and ] keys move this far in recording time
JUMP_NS = 10_000_000_000
MARKER_KINDS = (EXCEPTION, OVERFLOW)

OVERFLOW_GROUP = "Overflow records"
#: Textual key names shown as the characters a user types (help screen)
_KEY_SYMBOLS = {
    "full_stop": ".",
    "comma": ",",
    "plus": "+",
    "minus": "-",
    "equals_sign": "=",
    "greater_than_sign": ">",
    "less_than_sign": "<",
    "colon": ":",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
}
PLAYING = "playing"
PAUSED = "paused"


# ---------------------------------------------------------------- sources
class LateIndex:
    """A recording's index that starts indexing only when asked.

    :class:`~aclmon.bus.RecordingReader` indexes on its own thread from the
    moment it is made, and that pass holds the GIL for much of a second per
    million frames: made after the first screen, it no longer delays it. The
    header is checked at once all the same, so a bad file is still one error
    before any screen. Until :meth:`open`, it is an empty index still being
    built (the engine and the timeline read it as such).
    """

    def __init__(self, path: Path) -> None:
        from aclmon.bus.recording import read_header
        from aclmon.errors import DecodeError

        self.path = path
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise DecodeError(str(path), 0, f"cannot open: {exc.strerror}") from None
        try:
            self.header = read_header(fd, str(path), os.fstat(fd).st_size)
        finally:
            os.close(fd)
        self.reader: Any = None

    def open(self) -> None:
        """Start indexing (idempotent)."""
        from aclmon.bus.recording import RecordingReader

        if self.reader is None:
            self.reader = RecordingReader(self.path)

    def __len__(self) -> int:
        return len(self.reader) if self.reader is not None else 0

    @property
    def offsets(self) -> np.ndarray:
        return self.reader.offsets if self.reader is not None else _NO_FRAMES

    @property
    def timestamps(self) -> np.ndarray:
        return self.reader.timestamps if self.reader is not None else _NO_FRAMES

    @property
    def indexed(self) -> bool:
        return bool(self.reader is not None and self.reader.indexed)

    def seek_time(self, ts_ns: int) -> int:
        return int(self.reader.seek_time(ts_ns)) if self.reader is not None else 0

    @property
    def cut(self) -> Any:
        return getattr(self.reader, "cut", None)

    @property
    def error(self) -> str | None:
        return getattr(self.reader, "error", None)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


_NO_FRAMES = np.empty(0, dtype=np.int64)


class RecordingSource(Source):
    """The app's source while a recording replays: the engine feeds the store
    directly (seeking backwards replaces the state), so ``poll`` has nothing."""

    readonly = True

    def __init__(self, engine: ReplayEngine, description: str, reader: Any = None) -> None:
        self.engine = engine
        self.description = description
        self.playing = False
        self._reader = reader  # the RecordingReader behind the engine's index: closed with us

    @property
    def state(self) -> str:
        if self.engine.position >= len(self.engine) and self.engine.index.indexed:
            return ENDED
        return PLAYING if self.playing else PAUSED

    def poll(self, max_events: int) -> list[ev.Event]:
        return []

    def decoder_counts(self) -> tuple[int, int]:
        # The engine counts skipped frames inside the fold itself (they are
        # part of the state at a position), so report exactly that.
        c = self.engine.store.state.counters
        return (c.malformed, c.unknown)

    def close(self) -> None:
        self.engine.close()
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class DumpDirectorySource(Source):
    """Dump files found under PATH, summarised on a background thread and
    delivered like the agent's ``DumpFileSeen`` events."""

    readonly = True

    def __init__(self, inputs: ReplayInputs) -> None:
        self.inputs = inputs
        self.description = f"dump directory {inputs.root}"
        self._events: list[ev.Event] = []
        self._next = 0
        self._done = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self.error = ""

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._load, name="aclmon-replay-dumps", daemon=True
            )
            self._thread.start()

    def _load(self) -> None:
        try:
            self._events = list(dump_events(self.inputs.dump_files, self._closing.is_set))
        except Cancelled:
            pass
        except Exception as exc:  # shown in the header, never raised on a thread
            self.error = str(exc)
        finally:
            self._done.set()

    @property
    def state(self) -> str:
        if not self._done.is_set():
            return "reading dump files"
        if self.error:
            return f"failed: {self.error}"
        return ENDED if self._next >= len(self._events) else CONNECTED

    def poll(self, max_events: int) -> list[ev.Event]:
        if not self._done.is_set():
            return []
        start = self._next
        self._next = min(len(self._events), start + max_events)
        return self._events[start : self._next]

    def wait_loaded(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def close(self) -> None:
        # Quitting must not wait for a big directory: the reader stops at the next file.
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


# ---------------------------------------------------------------- timeline
class Timeline(Static):
    """Two lines under the views: where the replay is, and the whole recording
    as a bar with its exceptions (✖) and overflows (▲) marked."""

    # A fixed height: its text changes on every tick, its size never should
    # (an auto height would make every update re-layout the screen).
    DEFAULT_CSS = """
    Timeline {
        height: 2;
        background: $surface;
    }
    """

    def __init__(self, app: ReplayApp) -> None:
        super().__init__(id="timeline")
        self._owner = app

    def refresh_timeline(self) -> None:
        app = self._owner
        engine = app.engine
        if engine is None:
            return
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        busy = theme_style(self, "aclmon-busy", bold=True)
        n = len(engine)
        pos = engine.position
        first = engine.first_ts or 0
        last = engine.last_ts or 0
        now = app.cursor_ts
        line = Text(no_wrap=True, overflow="ellipsis")
        if app.seeking:
            line.append(" ⧗ seeking… ", style=busy)
        elif app.playing:
            line.append(" ▶ playing ", style=Style(bold=True))
        elif pos >= n and engine.index.indexed:
            line.append(" ■ at the end ", style=dim)
        else:
            line.append(" ⏸ paused ", style=Style(bold=True))
        line.append(f"x{_speed_label(app.speed)}  ", style=Style(bold=True))
        if now:
            line.append(f"{fmt.utc_time(now)} UTC  ")
            line.append(f"{_clock(now - first)} / {_clock(last - first)}  ", style=dim)
        line.append(f"event {pos:,} / {n:,}", style=dim)
        ahead_exc = _count_after(engine.markers(EXCEPTION), pos)
        ahead_ovf = _count_after(engine.markers(OVERFLOW), pos)
        if ahead_exc or ahead_ovf:
            line.append(f"  ·  ahead: {ahead_exc} exception(s), {ahead_ovf} overflow(s)", style=dim)
        if not engine.ready:
            done = engine.scanned / n if n else 0.0
            line.append(f"  ·  indexing {done:.0%}", style=busy)
        if pos == 0 and not app.playing and not app.seeking and n:
            line.append(
                "  ·  space plays · E goes to the end · > finds the next exception or overflow",
                style=dim,
            )
        for warning in app.warnings:
            line.append(f"  ·  ⚠ {warning}", style=bad)
        bar = self._bar(max(10, self.size.width - 2), n, pos, engine, dim, bad)
        self.update(Text.assemble(line, "\n ", bar))

    @staticmethod
    def _bar(width: int, n: int, pos: int, engine: ReplayEngine, dim: Style, bad: Style) -> Text:
        cells = ["━"] * width
        styles: list[Style | None] = [None] * width
        cursor = min(width - 1, pos * width // n) if n else 0
        for i in range(cursor + 1, width):
            cells[i] = "─"
            styles[i] = dim
        for kind, mark in ((OVERFLOW, "▲"), (EXCEPTION, "✖")):
            for frame in engine.markers(kind):
                cell = min(width - 1, frame * width // n) if n else 0
                cells[cell] = mark
                styles[cell] = bad
        cells[cursor] = "●"
        styles[cursor] = Style(bold=True)
        text = Text(no_wrap=True)
        for char, style in zip(cells, styles, strict=True):
            text.append(char, style=style or Style())
        return text


def _count_after(frames: list[int], position: int) -> int:
    import bisect

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


# ---------------------------------------------------------------- grouped dumps
class GroupedDumpsView(DumpsView):
    """The dumps view for a dump directory: overflow records first (status
    meaning and operator on each row), then operator dumps under a heading per
    device, model and step."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._entries: list[str | ev.DumpFileSeen] = []
        self._placed = False

    def dump_at(self, index: int) -> ev.DumpFileSeen | None:
        if 0 <= index < len(self._entries):
            entry = self._entries[index]
            return entry if isinstance(entry, ev.DumpFileSeen) else None
        return None

    def update_from(self, store: Store) -> None:
        entries: list[str | ev.DumpFileSeen] = []
        heading = None
        counts: dict[str, int] = {}
        dumps = list(store.state.dumps)
        for d in dumps:
            name = _group_of(d)
            counts[name] = counts.get(name, 0) + 1
        for d in dumps:
            name = _group_of(d)
            if name != heading:
                heading = name
                entries.append(f"{name}  ({counts[name]})")
            entries.append(d)
        self._entries = entries
        self._store = store
        self.vlist.set_rows(0, len(entries))
        if entries and not self._placed:
            # A directory is read top down: start on the first file, not following the end.
            self._placed = True
            self.vlist.move_cursor_to(1)
        overflows = counts.get(OVERFLOW_GROUP, 0)
        text = Text(f"{len(dumps)} dump file(s)", style=Style(bold=True))
        if overflows:
            text.append(f"  ·  {overflows} overflow", style=theme_style(self, "aclmon-bad"))
        text.append(
            f"  ·  {len(counts) - bool(overflows)} group(s)", style=theme_style(self, "aclmon-dim")
        )
        text.append("  ·  Enter decodes the selected file", style=theme_style(self, "aclmon-dim"))
        self.query_one("#dumps-status", Static).update(text)
        if not self.aclmon.dump_detail_shown:
            self._show_summary(self.vlist.cursor)

    def _show_summary(self, index: int) -> None:
        if 0 <= index < len(self._entries) and isinstance(self._entries[index], str):
            dim = theme_style(self, "aclmon-dim")
            text = Text(str(self._entries[index]), style=Style(bold=True))
            text.append("\n\nmove to a file; Enter decodes it", style=dim)
            self.query_one("#dump-detail", Static).update(text)
            return
        super()._show_summary(index)

    def _render_row(self, index: int, width: int) -> Text:
        if not 0 <= index < len(self._entries):
            return Text("")
        entry = self._entries[index]
        if isinstance(entry, str):
            return Text(f" {entry}", style=Style(bold=True, underline=True), no_wrap=True)
        if entry.kind != "overflow":
            row = super()._render_row(index, width)
            return Text.assemble("  ", row)
        summary = entry.summary if isinstance(entry.summary, dict) else {}
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"  {fmt.utc_time(entry.ts_ns):<12}  ", style=theme_style(self, "aclmon-dim"))
        text.append("overflow  ", style=theme_style(self, "aclmon-bad", bold=True))
        text.append(f"{_overflow_meaning(summary)}  ")
        operator = summary.get("operator") or "operator dump not found"
        text.append(f"→ {operator}", style=Style(bold=True))
        return text


def _group_of(d: ev.DumpFileSeen) -> str:
    if d.kind == "overflow":
        return OVERFLOW_GROUP
    summary = d.summary if isinstance(d.summary, dict) else {}
    return str(summary.get("group") or "other files")


def _overflow_meaning(summary: dict[str, Any]) -> str:
    """The first status word that says something overflowed (or the error)."""
    if summary.get("error"):
        return str(summary["error"])
    for item in summary.get("records") or ():
        if isinstance(item, dict):
            for line in item.get("explained") or ():
                if not str(line).endswith("no overflow"):
                    return str(line)
    return "no overflow bit set"


# ---------------------------------------------------------------- app
class ReplayApp(AclmonApp):
    """The live app over a replay: a timeline and its keys for a recording,
    the grouped dumps view for a dump directory."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "play_pause", "Play/pause", id="replay.play"),
        Binding("full_stop", "step(1)", "Step", id="replay.step"),
        Binding("comma", "step(-1)", "Back", show=False, id="replay.back"),
        Binding("plus,equals_sign", "speed(1)", "Faster", id="replay.faster"),
        Binding("minus", "speed(-1)", "Slower", show=False, id="replay.slower"),
        Binding("greater_than_sign,n", "marker(1)", "Next exc/ovf", id="replay.next_marker"),
        Binding("less_than_sign,N", "marker(-1)", "Prev exc/ovf", show=False, id="replay.prev"),
        Binding("right_square_bracket", "jump(1)", "+10s", show=False, id="replay.forward"),
        Binding("left_square_bracket", "jump(-1)", "-10s", show=False, id="replay.backward"),
        Binding("colon,t", "seek_prompt", "Go to time", id="replay.goto"),
        Binding("S", "seek_to('start')", "Start", show=False, id="replay.start"),
        Binding("E", "seek_to('end')", "End", show=False, id="replay.end"),
    ]

    def __init__(
        self,
        source: Source,
        *,
        engine: ReplayEngine | None = None,
        inputs: ReplayInputs | None = None,
        speed: float = 1.0,
        play: bool = False,
        start_at: str | None = None,
        warnings: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if engine is not None:
            kwargs["store"] = engine.store
        elif inputs is not None and "store" not in kwargs:
            # every file of the directory stays listed (the live ring keeps the newest 2000)
            kwargs["store"] = Store(dump_limit=max(2_000, len(inputs.dump_files)))
        kwargs.setdefault("start_view", "devices" if engine is not None else "dumps")
        super().__init__(source, **kwargs)
        self.engine = engine
        self.inputs = inputs
        self.speed = min(SPEEDS, key=lambda s: abs(s - speed))
        self.playing = False
        self.seeking = False
        self._base_warnings = list(warnings or [])
        self.warnings = list(self._base_warnings)
        self._autoplay = play
        self._start_at = start_at
        self._play_ts = 0
        self._played_at = 0.0
        self.timeline: Timeline | None = Timeline(self) if engine is not None else None

    # ---------------------------------------------------------------- frame
    def compose(self) -> ComposeResult:
        # Reuse the live frame as is; add the timeline above the footer, and
        # for a dump directory show its files grouped.
        for widget in super().compose():
            if isinstance(widget, DumpsView) and self.engine is None:
                widget = self.dumps_view = GroupedDumpsView(id="dumps")
                self.views["dumps"] = widget
            if isinstance(widget, Footer) and self.timeline is not None:
                yield self.timeline
            yield widget

    def on_mount(self) -> None:
        super().on_mount()
        if self.engine is not None:
            # After the first screen: the builder competes with the UI for the GIL.
            self.call_after_refresh(self._start_indexing)
            if self._autoplay:
                self.set_playing(True)
            self._warnings_timer = self.set_interval(0.2, self._check_warnings)
            self._refresh_timeline()

    def _start_indexing(self) -> None:
        engine = self.engine
        assert engine is not None
        if isinstance(engine.index, LateIndex):
            engine.index.open()
        engine.start_background()

    def _check_warnings(self) -> None:
        """Add the file's problems to the timeline once the index knows them."""
        engine = self.engine
        assert engine is not None
        self.warnings = self._base_warnings + recording_warnings(engine)
        if engine.ready or engine.builder_error:
            self._warnings_timer.stop()
        self._refresh_timeline()

    @property
    def cursor_ts(self) -> int:
        if self.playing and self._play_ts:
            return self._play_ts
        engine = self.engine
        if engine is None:
            return 0
        return engine.time_at(engine.position) or (engine.first_ts or 0)

    def _refresh_timeline(self) -> None:
        if self.timeline is not None:
            self.timeline.refresh_timeline()

    # ---------------------------------------------------------------- refresh
    def tick(self) -> None:
        engine = self.engine
        if engine is not None and self._start_at and engine.index.indexed:
            # --at needs the whole index (``end`` is the end of the file, not of what
            # the indexer has reached so far): applied on the first tick after it.
            start_at, self._start_at = self._start_at, None
            self.seek_text(start_at)
        if engine is not None and self.playing and not self.seeking:
            self._advance()
        super().tick()
        self._refresh_timeline()

    def _advance(self) -> None:
        engine = self.engine
        assert engine is not None
        now = self._clock()
        elapsed = max(0.0, now - self._played_at)
        self._played_at = now
        if not self._play_ts:
            # Playing began before the indexer had seen a frame: start at the first one.
            self._play_ts = engine.first_ts or 0
            if not self._play_ts:
                return
        self._play_ts += int(elapsed * self.speed * 1e9)
        more = self._guarded(engine.play_to, self._play_ts, self.max_batch)
        if more:
            # Too many events for one tick: let recording time wait for the fold.
            self._play_ts = engine.time_at(engine.position) or self._play_ts
        if engine.position >= len(engine) and engine.index.indexed:
            self.set_playing(False)

    def set_playing(self, playing: bool) -> None:
        engine = self.engine
        if engine is None:
            return
        if playing and engine.position >= len(engine) and engine.index.indexed:
            playing = False  # nothing left to play
        self.playing = playing
        if isinstance(self.source, RecordingSource):
            self.source.playing = playing
        self._played_at = self._clock()
        self._play_ts = engine.time_at(engine.position) or (engine.first_ts or 0)
        self._after_move()

    def _guarded(self, call: Callable[..., Any], *args: Any) -> Any:
        """An engine call that reads the file: a file damaged or cut since it was
        indexed gives one notice and stops playback, never a traceback."""
        try:
            return call(*args)
        except AclmonError as exc:
            self.playing = False
            if isinstance(self.source, RecordingSource):
                self.source.playing = False
            self.notify(str(exc), severity="error", timeout=8)
            return None

    def _after_move(self) -> None:
        # The header's event rate would compare counts across the jump (even
        # go negative going back): start measuring again from here.
        self._rate_samples.clear()
        self.refresh_view()
        self._update_header()
        self._refresh_timeline()

    # ---------------------------------------------------------------- actions
    def action_play_pause(self) -> None:
        engine = self.engine
        if engine is None or self.seeking:
            return
        if not self.playing and engine.position >= len(engine) and engine.index.indexed:
            self._guarded(engine.seek, 0)  # at the end: play from the start again, like any player
        self.set_playing(not self.playing)

    def action_step(self, count: int) -> None:
        engine = self.engine
        if engine is None or self.seeking:
            return
        self.set_playing(False)
        if count > 0:
            self._guarded(engine.step, count)
        else:
            self._guarded(engine.step_back, -count)
        self._after_move()

    def action_speed(self, direction: int) -> None:
        i = SPEEDS.index(self.speed) + direction
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i))]
        if self.playing:
            # keep the recording time continuous across the change
            self._played_at = self._clock()
        self._refresh_timeline()

    def action_jump(self, direction: int) -> None:
        if self.engine is not None:
            self.seek_time(self.cursor_ts + direction * JUMP_NS)

    def action_seek_to(self, where: str) -> None:
        self.seek_text(where)

    def action_marker(self, direction: int) -> None:
        """Jump just past the next (or previous) exception or overflow dump,
        and show it in its view."""
        engine = self.engine
        if engine is None or self.seeking:
            return
        if direction > 0:
            frame = self._guarded(engine.next_marker, MARKER_KINDS, engine.position)
        else:
            # Back to the newest marker already folded; if the cursor sits just
            # past it (it was jumped to), on to the one before, like a player's
            # "previous chapter".
            frame = self._guarded(engine.previous_marker, MARKER_KINDS, engine.position)
            if frame is not None and frame + 1 == engine.position:
                frame = self._guarded(engine.previous_marker, MARKER_KINDS, frame)
        if frame is None:
            self.notify("no more exceptions or overflows that way", timeout=2)
            return
        view = "dumps" if frame in engine.markers(OVERFLOW) else "exceptions"
        self.set_playing(False)
        self.seek_position(frame + 1, then_show=view)

    def action_seek_prompt(self) -> None:
        if self.engine is None:
            return

        def chosen(text: str | None) -> None:
            if text:
                self.seek_text(text)

        self.set_playing(False)
        self.push_screen(SeekTimeScreen(), chosen)

    # ---------------------------------------------------------------- seeking
    def seek_text(self, text: str) -> None:
        engine = self.engine
        if engine is None or engine.first_ts is None:
            return
        try:
            ts = parse_seek_time(text, engine.first_ts, engine.last_ts or 0, self.cursor_ts)
        except SeekTimeError as exc:
            self.notify(str(exc), severity="error", timeout=5)
            return
        self.seek_time(ts)

    def seek_time(self, ts_ns: int) -> None:
        engine = self.engine
        if engine is not None:
            self.seek_position(engine.position_of_time(ts_ns))

    def seek_position(self, position: int, *, then_show: str | None = None) -> None:
        """Show the state at ``position``: at once when cheap, else from a worker."""
        engine = self.engine
        if engine is None or self.seeking:
            return
        was_playing = self.playing
        if engine.cost(position) <= SYNC_SEEK_FRAMES:
            self._guarded(engine.seek, position)
            self._seeked(then_show, was_playing)
            return
        self.seeking = True
        self._refresh_timeline()
        self._seek_in_background(position, then_show, was_playing)

    @work(thread=True, exclusive=True, group="replay-seek")
    def _seek_in_background(self, position: int, then_show: str | None, playing: bool) -> None:
        engine = self.engine
        assert engine is not None
        try:
            state = engine.state_at(position)
        except AclmonError as exc:
            self._call_ui(self._seek_failed, str(exc))
            return
        self._call_ui(self._install, position, state, then_show, playing)

    def _install(self, position: int, state: Any, then_show: str | None, playing: bool) -> None:
        assert self.engine is not None
        self.engine.install(position, state)
        self.seeking = False
        self._seeked(then_show, playing)

    def _seek_failed(self, message: str) -> None:
        self.seeking = False
        self.notify(message, severity="error", timeout=6)
        self._refresh_timeline()

    def _seeked(self, then_show: str | None, playing: bool) -> None:
        self.set_playing(playing)
        if then_show is not None:
            self.action_show_view(then_show)
            vlist = self.views[then_show].query("VirtualList")
            if vlist:
                vlist.first().action_last()  # type: ignore[attr-defined]
        self._after_move()

    # ---------------------------------------------------------------- dumps
    @work(thread=True, exclusive=True, group="dump-decode")
    def _decode_dump(self, path: str, kind: str) -> None:
        # A recording names files where the job wrote them; the directory may
        # have moved since: look for the same name under PATH.
        if self.inputs is not None:
            path = resolve_dump_path(path, self.inputs)
        report = decode_for_view(path, kind)
        self._call_ui(self._show_dump_report, report)

    def help_sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        sections = super().help_sections()
        rows = []
        for b in ReplayApp.BINDINGS:
            if isinstance(b, Binding):
                keys = self._keymap.get(b.id or "", b.key)
                shown = ",".join(_KEY_SYMBOLS.get(k, k) for k in keys.split(","))
                rows.append((shown, b.description, b.id or ""))
        return [("Replay timeline", rows), *sections]


# ---------------------------------------------------------------- running


def recording_warnings(engine: ReplayEngine) -> list[str]:
    """What is wrong with the file, once the index knows (a cut, an index error)."""
    reader: Any = engine.index
    out = []
    cut = getattr(reader, "cut", None)
    if cut is not None:
        what = "damaged" if cut.damaged else "truncated"
        out.append(f"{what} {cut}; every complete event before it is shown")
    error = getattr(reader, "error", None)
    if error:
        out.append(str(error))
    if engine.builder_error:
        out.append(engine.builder_error)
    return out


def build_app(
    inputs: ReplayInputs,
    *,
    speed: float = 1.0,
    play: bool = False,
    start_at: str | None = None,
    **kwargs: Any,
) -> ReplayApp:
    """The replay app for what ``find_inputs`` found (not yet running)."""
    if not SPEEDS[0] <= speed <= SPEEDS[-1]:
        raise AclmonError(
            f"--speed must be between {SPEEDS[0]:g} and {SPEEDS[-1]:g}, not {speed:g}"
        )
    recording = inputs.recording
    if recording is None:
        return ReplayApp(DumpDirectorySource(inputs), inputs=inputs, **kwargs)
    index = LateIndex(recording)  # a bad header raises here: one clear error, no screen
    engine = ReplayEngine(index, recording)
    warnings = []
    others = [p for p in inputs.recordings if p != recording]
    if others:
        warnings.append(f"{len(others)} other recording(s) under {inputs.root}; showing the newest")
    return ReplayApp(
        RecordingSource(engine, f"replay {recording.name}", index),
        engine=engine,
        inputs=inputs,
        speed=speed,
        play=play,
        start_at=start_at,
        warnings=warnings,
        **kwargs,
    )


def replay_command(args: argparse.Namespace) -> int:
    """``aclmon replay PATH`` (see :func:`aclmon.tui.commands.configure_replay`)."""
    import json

    from aclmon.tui.replay_inputs import find_inputs

    inputs = find_inputs(args.path)
    if args.json:
        from aclmon.tui.replay_summary import replay_summary

        text = json.dumps(replay_summary(inputs), indent=2)
        try:
            print(text, flush=True)
        except BrokenPipeError:  # `aclmon replay --json x | head`: the reader left early
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if not 0 < args.interval <= 60:
        raise AclmonError(f"--interval must be between 0 and 60 seconds, not {args.interval}")

    from aclmon.tui.app import keymap_path, load_keymap

    keymap = (
        load_keymap(Path(args.keymap), required=True) if args.keymap else load_keymap(keymap_path())
    )
    app = build_app(
        inputs,
        speed=args.speed,
        play=args.play,
        start_at=args.at,
        interval=args.interval,
        theme=args.theme,
        keymap=keymap,
    )
    from aclmon.tui.lifetime import run_app

    try:
        return run_app(app)
    finally:
        app.source.close()
