"""The last rule before the terminal: the filter every drawn line goes through
shows control characters in text escaped, keeps a line's width, and leaves
control segments (Textual's own escapes) and clean lines as they are."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.control import Control
from rich.segment import Segment
from rich.style import Style
from textual.color import Color

from aclmon.tui.inert import _UNSAFE_IN_LINE, INERT_FILTER

BLACK = Color(0, 0, 0)
RED = Style(color="red")


def test_a_clean_line_is_handed_back_as_it_is() -> None:
    line = [Segment("NPU 0 ", RED), Segment("▏▏▏", None), Segment(" MatMul", RED)]
    assert INERT_FILTER.apply(line, BLACK) is line


def test_an_escape_in_text_is_shown_escaped_and_the_line_keeps_its_width() -> None:
    line = [Segment("ab", RED), Segment("\x1b[2Jcd", None), Segment("ef", RED)]
    out = INERT_FILTER.apply(line, BLACK)
    text = "".join(segment.text for segment in out)
    assert _UNSAFE_IN_LINE.search(text) is None
    assert text.startswith("ab\\x1b[2J")
    assert Segment.get_line_length(out) == Segment.get_line_length(line)


def test_a_control_segments_own_escapes_are_left_to_it() -> None:
    move = Control.move_to(3, 4).segment
    assert _UNSAFE_IN_LINE.search(move.text)  # its escapes are in its text
    line = [Segment("ab", RED), move, Segment("cd", None)]
    assert INERT_FILTER.apply(line, BLACK) is line
    hostile = [Segment("ab", RED), move, Segment("c\x07d", None)]
    out = INERT_FILTER.apply(hostile, BLACK)
    assert out[1] is move
    # the escape pushes the line past its four columns: the end is cut
    assert "".join(segment.text for segment in out if not segment.control) == "abc\\"


texts = st.text(alphabet=st.sampled_from("ab ▏…\x1b\x07\x9b\u202e\t"), max_size=6)


@given(st.lists(st.tuples(texts, st.booleans()), max_size=8))
def test_no_control_character_is_left_in_text_and_the_width_is_kept(
    pieces: list[tuple[str, bool]],
) -> None:
    line = [
        Control.move_to(len(text), 0).segment if control else Segment(text, RED)
        for text, control in pieces
    ]
    out = INERT_FILTER.apply(line, BLACK)
    assert not any(_UNSAFE_IN_LINE.search(s.text) for s in out if not s.control)
    controls = [s for s in line if s.control]
    assert all(any(s is c for c in controls) for s in out if s.control)  # only the line's own
    if not any(_UNSAFE_IN_LINE.search(s.text) for s in line if not s.control):
        assert out is line
    else:
        assert Segment.get_line_length(out) == Segment.get_line_length(line)
