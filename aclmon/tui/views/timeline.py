"""The Timeline view: one lane per device stream and host thread, operator and
execution slices, msproftx ranges, exception and overflow markers, over a time
axis; zoomed and panned as in MindStudio Insight (W/S/A/D), plus ``+``/``-``,
the arrows and the mouse wheel.

It draws an :class:`~aclmon.store.slice_index.IndexedTimeline` the app keeps
beside the store (the slice model the trace export writes from, so both show the
same slices for a window): live, fed the events as they come; in replay, built
once from the whole recording, the window following the replay's cursor. Only
the visible window is drawn, line by line (the Line API), each line costing its
width whatever the number of slices.

The cursor is a column of the canvas (a vertical line): zoom keeps the time
under it still, pan moves the slices under it, a click puts it where clicked;
Enter opens what is under it on the selected row (a slice, or a marker
within two columns), and the app shows its details.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from aclmon.store import Store
from aclmon.store.slice_index import IndexedTimeline
from aclmon.store.slices import OPERATOR, Instant, Lane, Slice
from aclmon.tui import fmt
from aclmon.tui.messages import AboutWidget
from aclmon.tui.names import NameFitter
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.base import AtMostEvery, View, show_text
from aclmon.tui.views.timeline_draw import (
    Palette,
    clock_text,
    draw_axis,
    draw_row,
    lane_label,
    make_palette,
    offset_text,
)

#: the window shown when the first slices come (live: the last ten seconds)
FIRST_SPAN_NS = 10_000_000_000
#: seconds between two drawings while only new slices move the window (a key
#: draws at once)
MOVED_EVERY = 1.0
#: a zoom step of the keys (W, +) and of the wheel
ZOOM_KEY = 0.5
ZOOM_WHEEL = 0.8
#: a pan step of the keys: this part of the window
PAN_PART = 0.125
#: columns around the cursor where Enter still finds a marker or a slice
NEAR_COLUMNS = 2
#: the shortest window: a nanosecond per column
MIN_NS_PER_COLUMN = 1
#: operator names the bars' names are told apart among, at most (a model's
#: operators are a few hundred; past this, names drawn are fitted among these)
FITTED_NAMES = 4096

Item = Slice | Instant


class TimelineCanvas(Widget, can_focus=True):
    """The axis and the rows of the lanes, drawn line by line from the view's state."""

    DEFAULT_CSS = """
    TimelineCanvas { height: 1fr; background: $surface; }
    """

    def __init__(self, view: TimelineView, **kwargs: object) -> None:
        super().__init__(id="timeline-canvas")
        self.view = view

    def render_line(self, y: int) -> Strip:
        width = self.container_size.width  # as size.width, without a look-up per line
        return self.view.strip(y, width)

    def on_click(self, event: events.Click) -> None:
        self.view.clicked(event.x, event.y, event.chain)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.view.zoom(ZOOM_WHEEL, at_x=event.x)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.view.zoom(1 / ZOOM_WHEEL, at_x=event.x)

    def on_mouse_scroll_left(self, event: events.MouseScrollLeft) -> None:
        event.stop()
        self.view.pan(-PAN_PART / 2)

    def on_mouse_scroll_right(self, event: events.MouseScrollRight) -> None:
        event.stop()
        self.view.pan(PAN_PART / 2)


class TimelineView(View):
    """See the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w,plus,equals_sign", "zoom(0.5)", "Zoom in", id="timeline.zoom_in"),
        Binding("s,minus", "zoom(2.0)", "Out", id="timeline.zoom_out"),
        Binding("a,left", "pan(-1)", "Pan", id="timeline.left"),
        Binding("d,right", "pan(1)", "Pan right", show=False, id="timeline.right"),
        Binding("up,k", "row(-1)", "Up", show=False, id="timeline.up"),
        Binding("down,j", "row(1)", "Down", show=False, id="timeline.down"),
        Binding("pageup", "row(-10)", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown", "row(10)", "Page down", show=False, id="timeline.page_down"),
        Binding("enter", "open", "Details", id="timeline.open"),
        Binding("f,end", "follow", "Follow", id="timeline.follow"),
        Binding("home,z", "whole", "Whole span", show=False, id="timeline.whole"),
    ]
    can_focus = False

    class Opened(AboutWidget["TimelineView"]):
        """Enter on a slice or a marker: the app shows its details."""

        def __init__(self, view: TimelineView, item: Item) -> None:
            super().__init__(view)
            self.item = item

    #: the window's first moment and its length (0: nothing shown yet)
    start_ns: reactive[int] = reactive(0, init=False)
    span_ns: reactive[int] = reactive(0, init=False)
    #: the cursor's place in the window (0: its left edge, 1: its right)
    cursor_at: reactive[float] = reactive(0.5, init=False)
    #: the selected row (of every lane's rows, in order)
    selected: reactive[int] = reactive(0, init=False)
    #: the window follows the newest events (live) or the replay's cursor
    following: reactive[bool] = reactive(True, init=False)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.timeline: IndexedTimeline | None = None
        #: the replay's cursor time (None: live, follow the newest)
        self.pinned_ns: int | None = None
        self._rows: list[tuple[Lane, int]] = []
        self._rows_version = -1
        self._top = 0
        self._palette: tuple[str, Palette] | None = None
        self._drawn_version = -1
        self._moved_every = AtMostEvery(self, MOVED_EVERY, self.redraw)
        #: the operator names drawn so far: a bar's name is cut by path segments
        #: so that it stays told apart from them (…/layer_11/…/query/MatMul)
        self._names = NameFitter()
        #: each canvas line as last drawn: what it was drawn from, and its strip
        self._strips: dict[int, tuple[tuple[object, ...], Strip]] = {}
        #: the lines the last redraw found changed: what each is drawn from, for
        #: a canvas ``_sources_width`` wide
        self._sources: dict[int, tuple[tuple[object, ...], Callable[[], list[Segment]]]] = {}
        self._sources_width = 0

    def compose(self) -> ComposeResult:
        yield Static(id="timeline-status", classes="status")
        yield TimelineCanvas(self)
        yield Static(id="timeline-under", classes="status")

    @property
    def canvas(self) -> TimelineCanvas:
        return self.query_one(TimelineCanvas)

    def focus_target(self) -> Widget:
        return self.canvas

    # ------------------------------------------------------------ feeding
    def show_timeline(self, timeline: IndexedTimeline | None) -> None:
        """Draw ``timeline`` from now on (None: one is being built from a recording)."""
        self.timeline = timeline
        self._rows_version = -1
        self._drawn_version = -1
        self.span_ns = 0
        self.redraw()

    def pin(self, ts_ns: int) -> None:
        """The replay's cursor moved to ``ts_ns``: a following window goes with it,
        drawn now if the view is shown, else when it is (a seek or a playback tick
        in another view costs it nothing)."""
        if ts_ns != self.pinned_ns:
            self.pinned_ns = ts_ns
            if not self.following or not self.is_mounted:
                return
            if self.display:
                self.redraw()
            else:
                self._drawn_version = -1  # update_from draws it once shown

    def update_from(self, store: Store, *, force: bool = False) -> None:
        # It draws the slices, not the store: redrawn when they moved (a following
        # window moves only with them; a replay's cursor moves it through pin()).
        self.store = store
        version = self.timeline.index.version if self.timeline is not None else -1
        if force:
            self.redraw()
        elif version != self._drawn_version:
            self._moved_every.ask()

    # ------------------------------------------------------------ geometry
    @property
    def label_width(self) -> int:
        return max(12, min(28, self.width // 5))

    @property
    def canvas_width(self) -> int:
        return max(1, self.width - self.label_width - 1)

    @property
    def cursor_ns(self) -> int:
        return self.start_ns + int(self.cursor_at * self.span_ns)

    @property
    def cursor_column(self) -> int:
        return min(self.canvas_width - 1, int(self.cursor_at * self.canvas_width))

    def rows(self) -> list[tuple[Lane, int]]:
        """(lane, row) of each line under the axis: every lane, one line per row
        (a lane of markers only has one)."""
        timeline = self.timeline
        if timeline is None:
            return []
        index = timeline.index
        if index.version != self._rows_version:
            self._rows = [
                (lane, row) for lane in index.lanes() for row in range(max(1, index.rows(lane)))
            ]
            self._rows_version = index.version
        return self._rows

    def _settle_window(self) -> None:
        """The first window once there is something, and the following one."""
        timeline = self.timeline
        span = timeline.index.span() if timeline is not None else None
        if span is None:
            return
        first, last = span
        if self.span_ns <= 0:
            whole = max(last - first, self.canvas_width * MIN_NS_PER_COLUMN)
            length = min(FIRST_SPAN_NS, whole + whole // 20)
            self.set_reactive(TimelineView.span_ns, length)
            self.set_reactive(TimelineView.start_ns, last - length)
        if self.following:
            if self.pinned_ns is not None:
                start = self.pinned_ns - int(self.cursor_at * self.span_ns)
            else:
                start = last - self.span_ns + self.span_ns // 50
            self.set_reactive(TimelineView.start_ns, start)

    # ------------------------------------------------------------ drawing
    def palette(self) -> Palette:
        theme = self.app.theme
        if self._palette is None or self._palette[0] != theme:
            self._palette = (theme, make_palette(self.app.get_css_variables()))
        return self._palette[1]

    def redraw(self) -> None:
        # children pruned (the app shutting down, a replay's slices built meanwhile)
        if not self.is_mounted or not self.query(TimelineCanvas):
            return
        self._settle_window()
        self._moved_every.drawn()
        if self.timeline is not None:
            self._drawn_version = self.timeline.index.version
        rows = self.rows()
        self.selected = min(self.selected, max(len(rows) - 1, 0))
        self._keep_selected_shown()
        self._refresh_changed_lines()
        self._draw_status()

    def _refresh_changed_lines(self) -> None:
        """Refresh the canvas lines that would be drawn otherwise than they are: a
        following window moves the busy lanes' rows each second, not the idle ones
        nor the empty lines under the lanes, which Textual then does not draw again."""
        canvas = self.canvas
        width, height = canvas.container_size
        changed = []
        self._sources, self._sources_width = {}, width
        for y in range(height):
            drawn = self._strips.get(y)
            source = self._line_source(y, width)
            if drawn is None or drawn[0] != source[0]:
                changed.append(y)
                self._sources[y] = source  # drawn from when Textual asks for the line
        if len(changed) == height:
            canvas.refresh()
        else:
            for y in changed:
                canvas.refresh(Region(0, y, width, 1))

    def strip(self, y: int, width: int) -> Strip:
        """Line ``y`` of the canvas ``width`` wide: the strip drawn before when it is
        drawn from the same things, else drawn now."""
        source = self._sources.pop(y, None)
        if source is None or width != self._sources_width:  # not from a redraw, or resized
            source = self._line_source(y, width)
        key, draw = source
        drawn = self._strips.get(y)
        if drawn is not None and drawn[0] == key:
            return drawn[1]
        strip = Strip(draw(), width)
        self._strips[y] = (key, strip)
        return strip

    def _keep_selected_shown(self) -> None:
        shown = max(1, self.canvas.size.height - 1)
        if self.selected < self._top:
            self._top = self.selected
        elif self.selected >= self._top + shown:
            self._top = self.selected - shown + 1
        self._top = max(0, min(self._top, max(len(self._rows) - shown, 0)))

    def _line_source(
        self, y: int, width: int
    ) -> tuple[tuple[object, ...], Callable[[], list[Segment]]]:
        """Line ``y`` of the canvas (the axis, then the rows from the top one shown):
        what it is drawn from (equal for lines drawn alike, the width included), and
        the drawing of it."""
        palette = self.palette()
        label_width = self.label_width
        canvas_width = max(1, width - label_width - 1)
        timeline = self.timeline
        span = timeline.index.span() if timeline is not None else None
        if timeline is None or span is None or self.span_ns <= 0:
            if y == 1:
                text = "indexing the recording…" if timeline is None else "no slices yet"
                line = [Segment(f" {text}".ljust(width), palette.dim)]
            else:
                line = [Segment(" " * width, palette.empty)]
            return (palette, width, line), lambda: line
        start, length = self.start_ns, self.span_ns
        cursor = int(self.cursor_at * canvas_width)
        cursor = min(canvas_width - 1, cursor)
        if y == 0:
            window = offset_text(length)

            def axis() -> list[Segment]:
                head = Segment(f" {window}".ljust(label_width)[:label_width] + " ", palette.dim)
                return [head, *draw_axis(palette, start, length, canvas_width, cursor)]

            return (palette, width, label_width, start, length, cursor), axis
        number = self._top + y - 1
        rows = self._rows
        if number >= len(rows):
            blank = [Segment(" " * width, palette.empty)]
            return (palette, width), lambda: blank
        lane, row = rows[number]
        selected = number == self.selected
        index = timeline.index
        end = start + length
        cells = index.cells(lane, row, start, end, canvas_width)
        marks = (
            index.instant_cells(lane, start, end, canvas_width)
            if row == 0
            else [None] * canvas_width
        )
        fitter = self._fitter(cells)

        def draw() -> list[Segment]:
            label = middle(lane_label(lane, row, label_width - 1), label_width - 1)
            label = label.ljust(label_width - 1)
            label_style = palette.selected_label if selected else palette.label
            return [
                Segment(" " + label, label_style),
                Segment("│", palette.dim),
                *draw_row(palette, cells, marks, cursor, fitter.fit),
            ]

        key = (palette, width, label_width, lane, row, selected, cursor, fitter,
               tuple(cells), tuple(marks))  # fmt: skip
        return key, draw

    def _fitter(self, cells: list[Slice | None]) -> NameFitter:
        """The names' fitter, knowing the operators of ``cells`` too."""
        known = self._names.names
        if len(known) < FITTED_NAMES:
            new = {c.name for c in cells if c is not None and c.kind == OPERATOR} - known
            if new:
                self._names = self._names.updated(known | new)
        return self._names

    def _draw_status(self) -> None:
        dim = theme_style(self, "aclmon-dim")
        status = Text()
        timeline = self.timeline
        span = timeline.index.span() if timeline is not None else None
        if timeline is None or span is None:
            status.append("Timeline", style=Style(bold=True))
            status.append("  waiting for slices", style=dim)
        else:
            step = max(1, self.span_ns // self.canvas_width)
            status.append(f"cursor {clock_text(self.cursor_ns, step)}", style=Style(bold=True))
            status.append(f"  window {offset_text(self.span_ns)}")
            lanes = len(timeline.index.lanes())
            status.append(f"  {lanes} lanes", style=dim)
            if timeline.skipped:
                bad = theme_style(self, "aclmon-bad")
                status.append(f"  {timeline.skipped:,} events skipped (fell behind)", style=bad)
            if self.following:
                what = "the replay" if self.pinned_ns is not None else "the newest"
                status.append(f"  following {what}", style=theme_style(self, "aclmon-idle"))
            else:
                status.append(f"  {self.key('timeline.follow', 'f')}: follow", style=dim)
        show_text(self.query_one("#timeline-status", Static), status, self._static_keys)
        show_text(self.query_one("#timeline-under", Static), self._under_text(), self._static_keys)

    def _under_text(self) -> Text:
        """What the cursor is on, on the selected row."""
        item = self.item_under_cursor()
        dim = theme_style(self, "aclmon-dim")
        if item is None:
            return Text("nothing under the cursor", style=dim)
        text = Text()
        text.append(lane_label(item.lane, 0) + "  ", style=dim)
        text.append(item.name, style=Style(bold=True))
        if isinstance(item, Slice):
            text.append(f"  {fmt.duration_ns(item.end_ns - item.start_ns)}")
        op_type = item.args.get("OP Type")
        if op_type and op_type != item.name:
            text.append(f"  {op_type}", style=dim)
        run = fmt.model_run(
            str(item.args.get("Model Name", "")), int(item.args.get("Execution", 0) or 0)
        )
        if run:
            text.append(f"  {run}", style=dim)
        return text

    # ------------------------------------------------------------ finding
    def item_under_cursor(self) -> Item | None:
        """The slice under the cursor on the selected row, else the marker or
        slice nearest to it within two columns."""
        rows = self.rows()
        if self.timeline is None or not 0 <= self.selected < len(rows) or self.span_ns <= 0:
            return None
        lane, row = rows[self.selected]
        index = self.timeline.index
        at = self.cursor_ns
        found = index.slice_at(lane, row, at)
        near = NEAR_COLUMNS * self.span_ns // self.canvas_width + 1
        candidates: list[Item] = []
        if row == 0:
            candidates.extend(index.instants(lane, at - near, at + near))
        if found is not None and not candidates:
            return found
        candidates.extend(index.window(lane, at - near, at + near, row))
        if not candidates:
            return None
        return min(candidates, key=lambda item: _distance(item, at))

    def show_event(self, event: object) -> bool:
        """Put the cursor on the item made from ``event`` (an exception): its lane
        selected, the window around its moment, not following. False when the
        timeline does not hold it."""
        if self.timeline is None:
            return False
        found = self.timeline.index.find(event)
        if found is None:
            return False
        lane, ts = found
        rows = self.rows()
        self.following = False
        self.selected = next((n for n, (lane_, _row) in enumerate(rows) if lane_ is lane), 0)
        if self.span_ns <= 0:
            self._settle_window()
        self.start_ns = ts - int(self.cursor_at * self.span_ns)
        self.redraw()
        return True

    # ------------------------------------------------------------ actions
    def action_zoom(self, factor: float) -> None:
        self.zoom(factor)

    def zoom(self, factor: float, at_x: int | None = None) -> None:
        """The window ``factor`` times as long, the time under the cursor (or
        under column ``at_x`` of the canvas) where it was."""
        if self.span_ns <= 0:
            return
        if at_x is not None:
            column = at_x - self.label_width - 1
            if 0 <= column < self.canvas_width:
                self.cursor_at = column / self.canvas_width
        at = self.cursor_ns
        shortest = self.canvas_width * MIN_NS_PER_COLUMN
        span = self.timeline.index.span() if self.timeline is not None else None
        longest = max(shortest, 4 * (span[1] - span[0])) if span is not None else 1 << 62
        length = int(min(max(self.span_ns * factor, shortest), longest))
        self.span_ns = length
        self.start_ns = at - int(self.cursor_at * length)
        self.redraw()

    def action_pan(self, direction: int) -> None:
        self.pan(direction * PAN_PART)

    def pan(self, part: float) -> None:
        """Moves the window by ``part`` of its length (negative: back in time)."""
        if self.span_ns <= 0:
            return
        self.following = False
        self.start_ns += int(part * self.span_ns)
        self.redraw()

    def action_row(self, delta: int) -> None:
        rows = self.rows()
        if rows:
            self.selected = max(0, min(self.selected + delta, len(rows) - 1))
            self.redraw()

    def action_open(self) -> None:
        item = self.item_under_cursor()
        if item is None:
            self.notify("nothing under the cursor on this lane", timeout=2)
            return
        self.post_message(self.Opened(self, item))

    def action_follow(self) -> None:
        self.following = True
        self.redraw()

    def action_whole(self) -> None:
        span = self.timeline.index.span() if self.timeline is not None else None
        if span is None:
            return
        self.following = False
        length = max(span[1] - span[0], self.canvas_width * MIN_NS_PER_COLUMN)
        self.span_ns = length + length // 50
        self.start_ns = span[0] - length // 100
        self.redraw()

    def clicked(self, x: int, y: int, chain: int) -> None:
        """A click selects the row and puts the cursor there; a second one on the
        same place opens what is there."""
        column = x - self.label_width - 1
        number = self._top + y - 1
        if y < 1 or number >= len(self._rows):
            return
        same = number == self.selected and column == self.cursor_column
        self.selected = number
        if 0 <= column < self.canvas_width:
            self.cursor_at = (column + 0.5) / self.canvas_width
        self.redraw()
        if chain > 1 or same:
            self.action_open()

    # ------------------------------------------------------------ slices shown
    def slices_in_window(self) -> list[Slice]:
        """Every slice the window shows, lane by lane and row by row."""
        timeline = self.timeline
        if timeline is None or self.span_ns <= 0:
            return []
        end = self.start_ns + self.span_ns
        return [
            item
            for lane, row in self.rows()
            for item in timeline.index.window(lane, self.start_ns, end, row)
        ]


def _distance(item: Item, at: int) -> int:
    if isinstance(item, Instant):
        return abs(item.ts_ns - at)
    if item.start_ns <= at <= item.end_ns:
        return 0
    return min(abs(item.start_ns - at), abs(item.end_ns - at))
