"""A timeline row drawn run by run is, column for column, the row drawn column by
column: each slice's columns in its shade (a touching neighbour of its hue in the
other), its name where it has six columns, one-column slices one after another as
one dense bar, the markers and the cursor over them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.segment import Segment
from rich.style import Style

from aclmon.store.slices import (
    EXCEPTION,
    EXECUTION,
    LOG,
    OPERATOR,
    SYNCHRONIZE,
    TX_MARK,
    Instant,
    Lane,
    NestingGuard,
    Process,
    Slice,
)
from aclmon.tui.views.timeline_draw import (
    DENSE,
    MARKS,
    Palette,
    draw_row,
    make_palette,
    slice_style,
)

PROCESS = Process(1, "Ascend Hardware", 0, "NPU 0", 14, 1472)
LANE = Lane(PROCESS, 3, "Stream 3", 3, True, (0, 3), None, NestingGuard())
VARIABLES = {"surface": "#1e1e2e", "foreground": "#e0e0e0", "primary": "#0178d4",
             "secondary": "#6e40c9", "accent": "#ffa62b", "success": "#4ebf71",
             "warning": "#ffa62b", "error": "#ba3c5b"}  # fmt: skip
PALETTE = make_palette(VARIABLES)


def fit(name: str, width: int) -> str:
    return name[:width]


def by_columns(
    palette: Palette, cells: list[Slice | None], marks: list[Instant | None], cursor: int
) -> list[tuple[str, Style]]:
    """The row as the columns it is: the reference drawing, one column at a time."""
    width = len(cells)
    chars, styles = [" "] * width, [palette.empty] * width

    def one_column(n: int) -> bool:  # a slice of just this column
        item = cells[n]
        return (
            item is not None
            and (n == 0 or cells[n - 1] is not item)
            and (n == width - 1 or cells[n + 1] is not item)
        )

    dense = [
        one_column(n) and ((n > 0 and one_column(n - 1)) or (n < width - 1 and one_column(n + 1)))
        for n in range(width)
    ]
    # what the column left of the next one was drawn as: (shades, style), or None
    left: tuple[tuple[Style, Style], Style] | None = None
    column = 0
    while column < width:
        item = cells[column]
        if item is None:
            column, left = column + 1, None
            continue
        shades = slice_style(palette, item)
        if dense[column]:
            end = column
            while end < width and dense[end]:
                end += 1
            hues = {id(slice_style(palette, cells[n])) for n in range(column, end)}  # type: ignore[arg-type]
            style = palette.hatches[shades] if len(hues) == 1 else palette.dense
            for n in range(column, end):
                chars[n], styles[n] = DENSE, style
            left = (shades, shades[0]) if len(hues) == 1 else None
            column = end
            continue
        end = column + 1
        while end < width and cells[end] is item:
            end += 1
        second = left is not None and left[0] is shades and left[1] is shades[0]
        style = shades[1] if second else shades[0]
        left = (shades, style)
        text = fit(item.name, end - column) if end - column >= 6 else ""
        for n in range(column, end):
            styles[n] = style
            chars[n] = text[n - column] if n - column < len(text) else " "
        column = end
    for column, mark in enumerate(marks):
        if mark is not None:
            chars[column] = MARKS.get(mark.kind, "•")
            extra = palette.marks.get(mark.kind)
            if extra is not None:
                styles[column] = styles[column] + extra
    if 0 <= cursor < width:
        if cells[cursor] is None and marks[cursor] is None:
            chars[cursor] = "│"
        styles[cursor] = styles[cursor] + palette.cursor
    return list(zip(chars, styles, strict=True))


def columns_of(segments: list[Segment]) -> list[tuple[str, Style | None]]:
    return [(char, segment.style) for segment in segments for char in segment.text]


@st.composite
def rows(draw: st.DrawFn) -> list[Slice | None]:
    width = draw(st.integers(1, 140))
    cells: list[Slice | None] = [None] * width
    column = draw(st.integers(0, 3))
    kinds = st.sampled_from([OPERATOR, OPERATOR, EXECUTION, SYNCHRONIZE, "other"])
    while column < width:
        length = draw(st.sampled_from([1, 1, 1, 2, 5, 6, 12]))
        end = min(width, column + length)
        name = draw(st.sampled_from(["MatMul", "Add", "aclmdlExecute", "a/b/c/Conv2D"]))
        kind = draw(kinds)
        args = {"ret": 1} if draw(st.integers(0, 9)) == 0 else {}
        cells[column:end] = [Slice(LANE, column, end, name, kind, args, None)] * (end - column)
        column = end + draw(st.sampled_from([0, 0, 0, 1, 3]))
    return cells


@settings(max_examples=400, deadline=None)
@given(
    cells=rows(),
    marked=st.lists(
        st.tuples(st.integers(0, 139), st.sampled_from([EXCEPTION, TX_MARK, LOG, "x"])), max_size=8
    ),
    cursor=st.integers(-2, 141),
)
def test_a_row_drawn_by_runs_is_the_row_drawn_by_columns(
    cells: list[Slice | None], marked: list[tuple[int, str]], cursor: int
) -> None:
    width = len(cells)
    marks: list[Instant | None] = [None] * width
    for column, kind in marked:
        if column < width:
            marks[column] = Instant(LANE, column, "mark", kind, {}, None)
    segments = draw_row(PALETTE, cells, marks, cursor, fit)
    assert columns_of(segments) == by_columns(PALETTE, cells, marks, cursor)
    assert all(segment.text for segment in segments)  # none empty


def execution(column: int, kind: str = EXECUTION) -> Slice:
    return Slice(LANE, column, column + 1, "aclmdlExecute", kind, {}, None)


def test_one_column_slices_one_after_another_are_one_dense_bar_in_their_hue() -> None:
    cells: list[Slice | None] = [execution(n) for n in range(4)] + [None] * 2
    first, _second = slice_style(PALETTE, execution(0))
    segments = draw_row(PALETTE, cells, [None] * 6, -1, fit)
    # one segment for the four slices, a line at each one's column
    assert [(s.text, s.style) for s in segments] == [
        (DENSE * 4, PALETTE.hatches[(first, _second)]), ("  ", PALETTE.empty)
    ]  # fmt: skip
    assert PALETTE.hatches[(first, _second)].bgcolor == first.bgcolor


def test_a_dense_bar_of_several_hues_is_neutral_and_a_lone_slice_keeps_its_hue() -> None:
    cells: list[Slice | None] = [
        execution(0), execution(1, SYNCHRONIZE), execution(2), None, execution(4, SYNCHRONIZE)
    ]  # fmt: skip
    segments = draw_row(PALETTE, cells, [None] * 5, -1, fit)
    sync = slice_style(PALETTE, execution(4, SYNCHRONIZE))
    assert [(s.text, s.style) for s in segments] == [
        (DENSE * 3, PALETTE.dense), (" ", PALETTE.empty), (" ", sync[0])
    ]  # fmt: skip


def test_a_wide_slice_after_a_dense_bar_of_its_hue_takes_the_second_shade() -> None:
    wide = Slice(LANE, 2, 9, "aclmdlExecute", EXECUTION, {}, None)
    cells: list[Slice | None] = [execution(0), execution(1), *[wide] * 7]
    first, second = slice_style(PALETTE, wide)
    segments = draw_row(PALETTE, cells, [None] * 9, 6, fit)
    # the cursor splits the wide slice's bar: its name is kept round it
    assert [(s.text, s.style) for s in segments] == [
        (DENSE * 2, PALETTE.hatches[(first, second)]),
        ("aclm", second),
        ("d", second + PALETTE.cursor),
        ("lE", second),
    ]
