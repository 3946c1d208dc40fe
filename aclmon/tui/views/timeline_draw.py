"""How the Timeline view draws a line: lane labels, the time axis, and a row of
slices and markers as one strip of segments (no widget here).

A row is drawn from :meth:`aclmon.store.slice_index.SliceIndex.cells` (the slice
in each column) and ``instant_cells`` (the marker in each column): the cost of a
line is its width, never the number of slices in the window. Colours come from
the theme: each kind of slice a hue blended into the background (operators a
hue of their type, stable across runs), markers in the theme's error and warning
colours.
"""

from __future__ import annotations

import bisect
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from rich.segment import Segment
from rich.style import Style
from textual.color import Color

from aclmon.store.slices import (
    EXCEPTION,
    EXECUTION,
    FAILED_CALL,
    LOG,
    OPERATOR,
    OVERFLOW,
    SYNCHRONIZE,
    TX_MARK,
    TX_RANGE,
    UNFINISHED,
    Instant,
    Lane,
    Slice,
)
from aclmon.tui import fmt
from aclmon.tui.style import middle

#: the theme variables operator hues come from (by a hash of the operator type)
OPERATOR_HUES = ("primary", "secondary", "accent", "success", "aclmon-spark", "aclmon-sync")
#: the mark drawn for each kind of instant
MARKS = {EXCEPTION: "✖", OVERFLOW: "▲", FAILED_CALL: "✗", TX_MARK: "◆", LOG: "!"}
#: the line at each column of a dense bar (one-column slices one after another)
DENSE = "▏"
#: nice steps of the time axis: 1, 2, 5 times a power of ten
_STEPS = (1, 2, 5)


@dataclass(frozen=True)
class Palette:
    """The styles one theme draws a timeline with."""

    empty: Style
    #: operator hues, each with a second shade for a neighbour of the same hue
    operators: tuple[tuple[Style, Style], ...]
    kinds: dict[str, tuple[Style, Style]]
    #: a dense bar of one hue, by the hue's shades: its first shade, lines in the
    #: background's colour
    hatches: dict[tuple[Style, Style], Style]
    #: a dense bar of slices of several hues
    dense: Style
    marks: dict[str, Style]
    cursor: Style
    tick: Style
    label: Style
    selected_label: Style
    dim: Style


def _variable(variables: dict[str, str], name: str, fallback: str) -> Color:
    try:
        return Color.parse(variables.get(name) or variables.get(fallback) or "#808080")
    except Exception:  # a theme value Textual cannot parse: grey
        return Color.parse("#808080")


def _shades(background: Color, hue: Color, strength: float) -> tuple[Style, Style]:
    """A slice's style in a hue, and a second shade for a neighbour of that hue."""
    out = []
    for amount in (strength, strength * 0.7):
        bg = background.blend(hue, amount)
        out.append(Style(bgcolor=bg.rich_color, color=bg.get_contrast_text(0.9).rich_color))
    return out[0], out[1]


def make_palette(variables: dict[str, str]) -> Palette:
    """The palette of a theme's CSS variables (``App.get_css_variables()``)."""
    background = _variable(variables, "surface", "background")

    def var(name: str, fallback: str = "primary") -> Color:
        return _variable(variables, name, fallback)

    operators = tuple(_shades(background, var(name), 0.55) for name in OPERATOR_HUES)
    kinds = {
        EXECUTION: _shades(background, var("primary"), 0.4),
        SYNCHRONIZE: _shades(background, var("aclmon-sync", "secondary"), 0.3),
        TX_RANGE: _shades(background, var("accent"), 0.45),
        UNFINISHED: _shades(background, var("warning"), 0.45),
    }
    error, warning = var("error"), var("warning")
    marks = {
        EXCEPTION: Style(color=error.rich_color, bold=True),
        OVERFLOW: Style(color=warning.rich_color, bold=True),
        FAILED_CALL: Style(color=error.rich_color, bold=True),
        TX_MARK: Style(color=var("accent").rich_color, bold=True),
        LOG: Style(color=warning.rich_color, bold=True),
    }
    foreground = var("foreground")
    cursor_bg = var("aclmon-cursor", "primary")

    def hatch(shade: Style) -> Style:
        return Style(bgcolor=shade.bgcolor, color=background.rich_color)

    hatches = {shades: hatch(shades[0]) for shades in (*operators, *kinds.values())}
    return Palette(
        empty=Style(bgcolor=background.rich_color),
        operators=operators,
        kinds=kinds,
        hatches=hatches,
        dense=hatch(_shades(background, foreground, 0.3)[0]),
        marks=marks,
        cursor=Style(bgcolor=cursor_bg.rich_color, color=foreground.rich_color),
        tick=Style(color=var("aclmon-dim", "foreground").rich_color, bgcolor=background.rich_color),
        label=Style(color=foreground.rich_color, bgcolor=background.rich_color),
        selected_label=Style(bgcolor=cursor_bg.rich_color, color=foreground.rich_color, bold=True),
        dim=Style(color=var("aclmon-dim", "foreground").rich_color, bgcolor=background.rich_color),
    )


def slice_style(palette: Palette, item: Slice) -> tuple[Style, Style]:
    """The two shades a slice is drawn in: by its kind, an operator by its type
    (a stable hash, so a type keeps its colour from run to run)."""
    if item.kind == OPERATOR:
        key = str(item.args.get("OP Type") or item.name)
        return palette.operators[zlib.crc32(key.encode()) % len(palette.operators)]
    if item.args.get("ret"):  # a call that failed
        return palette.kinds[UNFINISHED]
    return palette.kinds.get(item.kind) or palette.kinds[EXECUTION]


def shown_name(name: str) -> str:
    """A slice's name as drawn in its bar: a host call without msprof's
    ``AscendCL@`` (its lane already says it is a call)."""
    return name.removeprefix("AscendCL@")


#: shorter words for a lane's label where the whole one does not fit
_SHORTER = (
    ("log warnings and errors", "log warn/error"), ("Stream ", "S"), ("Thread ", "T"),
    ("(stream not known)", "(?)"), ("single operators", "single ops"), ("(overlapping)", "(ovl)"),
)  # fmt: skip


def lane_label(lane: Lane, row: int, width: int = 0) -> str:
    """A lane's name at the left of its first row ("NPU 0 Stream 3", "Thread 1"
    of the CANN calls, "tx Thread 2" of msproftx), in shorter words when longer
    than ``width`` (0: any length); its other rows are unnamed."""
    if row:
        return ""
    label = _full_label(lane)
    if width and len(label) > width:
        for long, short in _SHORTER:
            label = label.replace(long, short)
    return label


def _full_label(lane: Lane) -> str:
    process = lane.process
    if process.name == "Ascend Hardware":
        return f"{process.label} {lane.title}"
    if process.name == "CANN":
        return lane.title if lane.title.startswith(("NPU", "log")) else f"CANN {lane.title}"
    return f"tx {lane.title}"


def draw_row(
    palette: Palette,
    cells: Sequence[Slice | None],
    marks: Sequence[Instant | None],
    cursor: int,
    fit: Callable[[str, int], str] = middle,
) -> list[Segment]:
    """One row of the canvas: each run of columns a slice covers in its colour with
    its name in it (cut to fit by ``fit``: an operator's by path segments, as every
    view cuts them), the markers over them, the cursor's column.

    A slice's neighbour of the same hue is drawn in its second shade. Slices of one
    column each, one after another (calls or operators far shorter than a column),
    are one dense bar instead, a thin line at each one's column: in their hue when
    they share one, else in the neutral shade. A column shows the first slice in
    it, so colouring each such column by that slice would be noise; and one bar is
    one segment for Textual to draw rather than one a column."""
    width = len(cells)
    # the row as pieces of text, each in one style, the columns one after another
    texts: list[str] = []
    styles: list[Style] = []
    filled = 0  # the columns the pieces cover
    empty = palette.empty
    runs = _runs(cells)
    previous: tuple[Style, Style] | None = None
    previous_first: Style | None = None
    count = len(runs)
    at = 0
    while at < count:
        column, end, item = runs[at]
        if column > filled:
            texts.append(" " * (column - filled))
            styles.append(empty)
        shades = slice_style(palette, item)
        dense = at + 1
        if end - column == 1:
            while (
                dense < count
                and runs[dense][1] - runs[dense][0] == 1
                and runs[dense][0] == runs[dense - 1][1]
            ):
                dense += 1
        if dense - at >= 2:  # one-column slices one after another: one dense bar
            end = runs[dense - 1][1]
            one_hue = all(slice_style(palette, run[2]) is shades for run in runs[at + 1 : dense])
            texts.append(DENSE * (end - column))
            styles.append(palette.hatches[shades] if one_hue else palette.dense)
            previous, previous_first = (shades, shades[0]) if one_hue else (None, None)
            filled, at = end, dense
            continue
        touching = previous is shades and filled == column
        style = shades[1] if touching and previous_first is shades[0] else shades[0]
        previous, previous_first = shades, style
        run = end - column
        text = fit(shown_name(item.name), run)[:run] if run >= 6 else ""
        texts.append(text.ljust(run))
        styles.append(style)
        filled = end
        at += 1
    if filled < width:
        texts.append(" " * (width - filled))
        styles.append(empty)
    # the markers and the cursor over the pieces, a column each
    over: list[int] = []
    if marks.count(None) != width:  # a row with markers (most have none)
        over = [column for column, mark in enumerate(marks) if mark is not None]
    if 0 <= cursor < width and cursor not in over:
        over.append(cursor)
    if over:
        _overlay(texts, styles, sorted(over, reverse=True), cells, marks, cursor, palette)
    return [Segment(text, style) for text, style in zip(texts, styles, strict=True)]


def _overlay(
    texts: list[str],
    styles: list[Style],
    columns: list[int],
    cells: Sequence[Slice | None],
    marks: Sequence[Instant | None],
    cursor: int,
    palette: Palette,
) -> None:
    """Splits the pieces at ``columns`` (the last first) for a marker or the cursor."""
    starts = [0]
    for text in texts[:-1]:
        starts.append(starts[-1] + len(text))
    for column in columns:
        index = bisect.bisect_right(starts, column) - 1
        start, text, style = starts[index], texts[index], styles[index]
        offset = column - start
        char = text[offset]
        mark = marks[column]
        over = style
        if mark is not None:
            char = MARKS.get(mark.kind, "•")
            mark_style = palette.marks.get(mark.kind)
            if mark_style is not None:
                over = over + mark_style
        if column == cursor:
            if cells[column] is None and mark is None:
                char = "│"
            over = over + palette.cursor
        pieces = [(text[:offset], style, start), (char, over, column),
                  (text[offset + 1 :], style, column + 1)]  # fmt: skip
        kept = [piece for piece in pieces if piece[0]]
        texts[index : index + 1] = [piece[0] for piece in kept]
        styles[index : index + 1] = [piece[1] for piece in kept]
        starts[index : index + 1] = [piece[2] for piece in kept]


def _runs(cells: Sequence[Slice | None]) -> list[tuple[int, int, Slice]]:
    """(first column, column past the last, slice) of each run of columns one slice covers."""
    runs = []
    width = len(cells)
    column = 0
    while column < width:
        item = cells[column]
        if item is None:
            column += 1
            continue
        end = column + 1
        while end < width and cells[end] is item:
            end += 1
        runs.append((column, end, item))
        column = end
    return runs


def _segments(chars: list[str], styles: list[Style]) -> list[Segment]:
    # the columns where the style changes, found in one comprehension: the axis
    # is drawn again each second a window follows the job
    width = len(chars)
    bounds = [0, *(c for c in range(1, width) if styles[c] is not styles[c - 1]), width]
    text = "".join(chars)
    return [Segment(text[a:b], styles[a]) for a, b in pairwise(bounds) if a < b]


def tick_step(span_ns: int, width: int, min_gap: int = 12) -> int:
    """The axis's tick step: the smallest 1, 2 or 5 x 10^k ns that leaves at
    least ``min_gap`` columns between ticks."""
    if width <= 0 or span_ns <= 0:
        return 1
    wanted = span_ns * min_gap / width
    power = 10 ** max(0, math.floor(math.log10(max(wanted, 1))))
    for multiple in (*_STEPS, 10):
        if multiple * power >= wanted:
            return int(multiple * power)
    return int(10 * power)  # pragma: no cover (the loop always returns)


def offset_text(ns: int) -> str:
    """A time since the session start as an axis label: ``0``, ``250 ms``, ``1.5 s``."""
    if ns == 0:
        return "0"
    text = fmt.duration_ns(abs(ns))
    # whole numbers of their unit drop the ".0": "250 ms", not "250.0 ms"
    number, _, unit = text.partition(" ")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return ("-" if ns < 0 else "") + f"{number} {unit}".strip()


def clock_text(ts_ns: int, step_ns: int) -> str:
    """A moment as the axis labels its first tick: UTC time of day to the
    precision of the step (``10:00:55``, ``10:00:55.250``, ``10:00:55.250120``)."""
    whole = fmt.utc_time(ts_ns, with_ms=False)
    fraction = ts_ns % 1_000_000_000
    if step_ns >= 1_000_000_000:
        return whole
    if step_ns >= 1_000_000:
        return f"{whole}.{fraction // 1_000_000:03d}"
    if step_ns >= 1_000:
        return f"{whole}.{fraction // 1_000:06d}"
    return f"{whole}.{fraction:09d}"


def draw_axis(palette: Palette, start_ns: int, span_ns: int, width: int,
              cursor: int) -> list[Segment]:  # fmt: skip
    """The time axis over the canvas: a tick at each step, the first labelled with
    its time of day (UTC), the others with the time since it."""
    chars = [" "] * width
    if width > 0 and span_ns > 0:
        step = tick_step(span_ns, width, 14)
        first = -(-start_ns // step) * step
        tick = first
        while True:
            column = int((tick - start_ns) * width / span_ns)
            if column >= width:
                break
            if column >= 0:
                text = clock_text(tick, step) if tick == first else "+" + offset_text(tick - first)
                label = "┆" + text
                for offset, char in enumerate(label[: width - column]):
                    chars[column + offset] = char
            tick += step
    styles = [palette.tick] * width
    if 0 <= cursor < width:
        styles[cursor] = palette.tick + palette.cursor
    return _segments(chars, styles)
