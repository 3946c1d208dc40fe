"""``aclmon replay`` of a recording: the live app plus a timeline.

The store is the :class:`~aclmon.store.replay.ReplayEngine`'s, so what is on
screen at any point is the fold of the events before it: exactly what the live
view showed then. Seeks that would fold many frames run on a worker thread and
swap the finished state in (the newest seek wins); either way the new state is
drawn once.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.worker import get_current_worker

from aclmon.collector import freeze_long_lived
from aclmon.errors import AclmonError
from aclmon.sources.base import Source
from aclmon.sources.recording import LateIndex, RecordingSource, recording_warnings
from aclmon.sources.replay_inputs import ReplayInputs
from aclmon.store.replay import (
    EXCEPTION,
    OVERFLOW,
    ReplayEngine,
    SeekSuperseded,
    iter_recording_events,
)
from aclmon.store.seek_time import SeekTimeError, parse_seek_time
from aclmon.store.slice_index import IndexedTimeline
from aclmon.tui.app import AclmonApp
from aclmon.tui.footer import FittingFooter
from aclmon.tui.keys import binding_rows
from aclmon.tui.replay.timeline import SeekTimeScreen, Timeline
from aclmon.tui.vlist import VirtualList

#: playback speeds, slowest first (x0.25 .. x64)
SPEEDS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: seeks folding more frames than this run on a worker thread
SYNC_SEEK_FRAMES = 30_000
#: the [ and ] keys move this far in recording time
JUMP_NS = 10_000_000_000
MARKER_KINDS = (EXCEPTION, OVERFLOW)


class ReplayApp(AclmonApp):
    """The live app over a recording: its timeline and keys. (A dump directory
    alone opens in the plain app: see :func:`build_app`.)"""

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

    # What the timeline shows, bound to its own reactives (data_bind in compose).
    playing: reactive[bool] = reactive(False)
    seeking: reactive[bool] = reactive(False)
    speed: reactive[float] = reactive(1.0)
    cursor_ts: reactive[int] = reactive(0)
    warnings: reactive[tuple[str, ...]] = reactive(())

    def __init__(
        self,
        source: Source,
        *,
        engine: ReplayEngine,
        inputs: ReplayInputs | None = None,
        speed: float = 1.0,
        play: bool = False,
        start_at: str | None = None,
        warnings: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs["store"] = engine.store
        super().__init__(source, **kwargs)
        self.engine = engine
        self.inputs = inputs
        self.set_reactive(ReplayApp.speed, min(SPEEDS, key=lambda s: abs(s - speed)))
        self._base_warnings = tuple(warnings or ())
        self.set_reactive(ReplayApp.warnings, self._base_warnings)
        self._autoplay = play
        self._start_at = start_at
        self._play_ts = 0
        self._played_at = 0.0
        #: counts seeks: a worker's state is installed only if no seek came after it
        self._seek_serial = 0
        self._seek_target = 0  # where the worker's seek goes
        self._resume_playing = False  # whether playback resumes when it lands
        self.timeline = Timeline(engine)

    # ---------------------------------------------------------------- frame
    def compose(self) -> ComposeResult:
        # Reuse the live frame as is; add the timeline above the footer.
        for widget in super().compose():
            if isinstance(widget, FittingFooter):
                yield self.timeline.data_bind(
                    ReplayApp.playing, ReplayApp.seeking, ReplayApp.speed, ReplayApp.cursor_ts,
                    ReplayApp.warnings,
                )  # fmt: skip
            yield widget

    def on_mount(self) -> None:
        super().on_mount()
        self.timeline_view.show_timeline(None)  # until the recording's slices are built
        # After the first screen: the builder competes with the UI for the GIL.
        self.call_after_refresh(self._start_indexing)
        if self._autoplay:
            self.set_playing(True)
        self._warnings_timer = self.set_interval(0.2, self._check_warnings)
        self._refresh_timeline()

    def _start_indexing(self) -> None:
        engine = self.engine
        if isinstance(engine.index, LateIndex):
            engine.index.open()
        engine.start_background()
        self._index_slices()

    @work(thread=True, exclusive=True, group="replay-slices")
    def _index_slices(self) -> None:
        """The Timeline view's slices of the whole recording, once it is indexed
        (the view then follows the cursor's time)."""
        worker = get_current_worker()
        engine = self.engine
        while not engine.index.indexed and not worker.is_cancelled:
            time.sleep(0.1)
        events = itertools.chain(iter_recording_events(engine), engine.side_events)
        try:
            built = IndexedTimeline.build(events, lambda: worker.is_cancelled)
        except AclmonError as exc:  # the file went bad since it was indexed
            self._call_ui(self._slices_failed, str(exc))
            return
        if built is not None:
            self._call_ui(self._slices_built, built)

    def _slices_failed(self, message: str) -> None:
        self.notify(f"timeline: {message}", severity="error", timeout=8)

    def _slices_built(self, built: IndexedTimeline) -> None:
        self.slices = built
        self.timeline_view.show_timeline(built)
        self.timeline_view.pin(self.position_ts())
        freeze_long_lived()  # the slices too, kept to the end

    def _check_warnings(self) -> None:
        """Add the file's problems to the timeline once the index knows them."""
        engine = self.engine
        self.warnings = self._base_warnings + tuple(recording_warnings(engine))
        if engine.ready or engine.builder_error:
            self._warnings_timer.stop()
            if engine.ready:
                # the index and the snapshots are built, kept to the end: no full
                # collection walks them again (a seek would wait for it)
                freeze_long_lived()
        self._refresh_timeline()

    def position_ts(self) -> int:
        """The recording time the replay is at (while playing, between frames)."""
        if self.playing and self._play_ts:
            return self._play_ts
        engine = self.engine
        # while a worker folds, where it goes: a second "]" goes on from there
        position = self._seek_target if self.seeking else engine.position
        return engine.time_at(position) or (engine.first_ts or 0)

    def _refresh_timeline(self) -> None:
        # The other reactives redraw the timeline when they change; the position
        # moves with the engine, so it is redrawn on every tick.
        self.cursor_ts = self.position_ts()
        self.timeline.refresh_timeline()
        try:
            self.timeline_view.pin(self.cursor_ts)
        except NoMatches:  # a timer's last turn while the app's widgets are torn down
            return

    # ---------------------------------------------------------------- refresh
    def keeps_refreshing(self) -> bool:
        return self.playing or self.seeking

    def tick(self) -> None:
        engine = self.engine
        if self._start_at and engine.index.indexed:
            # --at needs the whole index (``end`` is the end of the file, not of what
            # the indexer has reached so far): applied on the first tick after it.
            start_at, self._start_at = self._start_at, None
            self.seek_text(start_at)
        if self.playing and not self.seeking:
            self._advance()
        super().tick()
        self._refresh_timeline()

    def _advance(self) -> None:
        engine = self.engine
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
        self.header.show(self.store, self.source, self.events_per_s, force=True)
        self._refresh_timeline()

    # ---------------------------------------------------------------- actions
    def action_play_pause(self) -> None:
        engine = self.engine
        if self.seeking:
            return
        if not self.playing and engine.position >= len(engine) and engine.index.indexed:
            self._guarded(engine.seek, 0)  # at the end: play from the start again, like any player
        self.set_playing(not self.playing)

    def action_step(self, count: int) -> None:
        engine = self.engine
        if self.seeking:
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
        self.seek_time(self.position_ts() + direction * JUMP_NS)

    def action_seek_to(self, where: str) -> None:
        self.seek_text(where)

    def action_marker(self, direction: int) -> None:
        """Jump just past the next (or previous) exception or overflow dump,
        and show it in its view."""
        engine = self.engine
        if self.seeking:
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
        def chosen(text: str | None) -> None:
            if text:
                self.seek_text(text)

        self.set_playing(False)
        self.push_screen(SeekTimeScreen(), chosen)

    # ---------------------------------------------------------------- seeking
    def seek_text(self, text: str) -> None:
        engine = self.engine
        if engine.first_ts is None:
            return
        try:
            ts = parse_seek_time(text, engine.first_ts, engine.last_ts or 0, self.position_ts())
        except SeekTimeError as exc:
            self.notify(str(exc), severity="error", timeout=5)
            return
        self.seek_time(ts)

    def seek_time(self, ts_ns: int) -> None:
        self.seek_position(self.engine.position_of_time(ts_ns))

    def seek_position(self, position: int, *, then_show: str | None = None) -> None:
        """Show the state at ``position``: at once when cheap, else folded on a
        worker and swapped in whole. A seek while a worker folds replaces it: the
        older fold stops, and its state is never shown."""
        engine = self.engine
        self._seek_serial += 1
        if not self.seeking:
            self._resume_playing = self.playing
            if engine.cost(position) <= SYNC_SEEK_FRAMES:
                self._guarded(engine.seek, position)
                self._seeked(then_show, self._resume_playing)
                return
            self.seeking = True
        self._seek_target = max(0, min(position, len(engine)))
        self._refresh_timeline()
        self._seek_in_background(self._seek_serial, position, then_show)

    @work(thread=True, group="replay-seek")
    def _seek_in_background(self, serial: int, position: int, then_show: str | None) -> None:
        def superseded() -> bool:
            return serial != self._seek_serial

        try:
            state = self.engine.state_at(position, superseded)
        except SeekSuperseded:
            return
        except AclmonError as exc:
            self._call_ui(self._seek_failed, serial, str(exc))
            return
        self._call_ui(self._install, serial, position, state, then_show)

    def _install(self, serial: int, position: int, state: Any, then_show: str | None) -> None:
        if serial != self._seek_serial:
            return  # a newer seek is on its way: this state would only flash by
        self.engine.install(position, state)
        self.seeking = False
        self._seeked(then_show, self._resume_playing)

    def _seek_failed(self, serial: int, message: str) -> None:
        if serial != self._seek_serial:
            return
        self.seeking = False
        self.notify(message, severity="error", timeout=6)
        self._refresh_timeline()

    def _seeked(self, then_show: str | None, playing: bool) -> None:
        """The new state is in: draw it once (the view shown, header, timeline)."""
        if then_show is not None:
            self.action_show_view(then_show)
            lists = self.views[then_show].query(VirtualList)
            if lists:
                lists.first().action_last()
        self.set_playing(playing)  # redraws what the view switch did not

    def help_sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        rows = binding_rows(list(ReplayApp.BINDINGS), self.user_keymap)
        return [("Replay timeline", rows), *super().help_sections()]
