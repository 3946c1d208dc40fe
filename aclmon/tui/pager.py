"""A long text drawn a screenful at a time: a 1 MB log line in a detail.

Rich would wrap the whole text before drawing any of it (seconds for a
megabyte); :class:`TextPager` cuts it into rows of the width it is drawn at
(character counts: a line's offsets, no measuring) and renders only the rows
on screen, as a :class:`~aclmon.tui.vlist.VirtualList` does. It takes the
height of all its rows, so the box around it scrolls it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import BindingType

from aclmon.tui.inert import inert
from aclmon.tui.vlist import VirtualList


def row_spans(text: str, width: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each row of ``text`` cut at its newlines and every
    ``width`` characters (half as many in a line with characters outside ASCII,
    which may take two cells each)."""
    width = max(1, width)
    rows: list[tuple[int, int]] = []
    start = 0
    for line in text.split("\n"):
        step = width if line.isascii() else max(1, width // 2)
        end = start + len(line)
        rows.extend((at, min(at + step, end)) for at in range(start, end, step))
        if not line:
            rows.append((start, start))
        start = end + 1
    return rows


class TextPager(VirtualList, can_focus=False):
    """``text`` (from outside: drawn inert) in rows of the pager's width."""

    DEFAULT_CSS = """
    TextPager { height: 1; background: $surface; }
    TextPager > .vlist--cursor { background: $surface; text-style: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = []

    def __init__(self, text: str, *, id: str | None = None) -> None:
        super().__init__(self._render_text_row, id=id)
        self.text = inert(text)
        self.spans: list[tuple[int, int]] = []
        self._laid_out_at = 0
        self.set_follow(False)

    def on_resize(self) -> None:
        width = self.scrollable_content_region.width
        if width > 0 and width != self._laid_out_at:
            self._laid_out_at = width
            self.spans = row_spans(self.text, width)
            self.styles.height = len(self.spans)
            self.clear_cache()
            self.set_rows(0, len(self.spans))

    def _render_text_row(self, index: int, width: int) -> Text:
        if not 0 <= index < len(self.spans):
            return Text("")
        start, end = self.spans[index]
        return Text(self.text[start:end])
