"""The Devices table drawn as fitted lines of text is what rich's table draws,
segment for segment and style for style, whenever its columns fit; rich's own
table narrows them when they do not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console, JustifyMethod
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from aclmon.tui.views.device_table import (
    Cell,
    Column,
    FittedTable,
    fitted_lines,
    rich_table,
    shares,
)

STYLES = [Style(), Style(color="green"), Style(bold=True), Style(color="red", dim=True)]
HEADER = Style(color="grey50", bold=True)
words = st.text(alphabet="abc xyz0–▁█░°·…", min_size=0, max_size=14)


@st.composite
def cells(draw: st.DrawFn) -> Cell:
    if draw(st.booleans()):
        return draw(words)
    text = Text(draw(words), style=draw(st.sampled_from(STYLES)))
    for _ in range(draw(st.integers(0, 2))):
        text.append(draw(words), style=draw(st.sampled_from(STYLES)))
    return text


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Column], list[list[Cell]], int]:
    justify: list[JustifyMethod] = ["left", "right"]
    columns: list[Column] = [
        (draw(words), draw(st.sampled_from(justify)), draw(st.integers(1, 12)))
        for _ in range(draw(st.integers(1, 9)))
    ]
    rows = [
        [draw(cells()) for _ in range(draw(st.integers(0, len(columns))))]
        for _ in range(draw(st.integers(0, 5)))
    ]
    return columns, rows, draw(st.integers(1, 200))


def drawn(renderable: object, width: int) -> list[list[tuple[str, Style]]]:
    console = Console(width=width, color_system="truecolor", force_terminal=True)
    lines = console.render_lines(renderable, console.options.update_width(width), pad=False)
    return [
        [(segment.text, segment.style or Style()) for segment in Segment.simplify(
            Segment(s.text, s.style or Style()) for s in line)]
        for line in lines
    ]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(tables())
def test_fitted_lines_are_what_rich_draws_when_the_columns_fit(table) -> None:
    columns, rows, width = table
    lines = fitted_lines(columns, rows, width, HEADER)
    expected = drawn(rich_table(columns, rows, HEADER), width)
    if lines is None:  # did not fit: the renderable hands it to rich
        assert drawn(FittedTable(columns, rows, HEADER), width) == expected
        return
    assert drawn(lines, width) == expected
    assert drawn(FittedTable(columns, rows, HEADER), width) == expected


def test_a_table_wider_than_its_room_is_left_to_rich() -> None:
    columns: list[Column] = [("DEV", "right", 3), ("HBM used / total", "left", 24)]
    assert fitted_lines(columns, [["0", "x" * 30]], 20, HEADER) is None
    assert fitted_lines(columns, [["0", "x" * 30]], 40, HEADER) is not None


@given(st.integers(0, 500), st.lists(st.integers(1, 40), min_size=1, max_size=10))
def test_shares_sum_to_the_total_in_proportion(total: int, weights: list[int]) -> None:
    parts = shares(total, weights)
    assert sum(parts) == total
    assert all(part >= 0 for part in parts)
    for part, weight in zip(parts, weights, strict=True):
        assert abs(part - total * weight / sum(weights)) < len(weights) + 1
