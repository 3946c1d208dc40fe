"""A block of one-line rows whose changed rows alone are drawn again.

A ``Static`` draws its whole content again for any change: the Devices trees, whose
figures move every second on a few of their lines, paid for all of them, and the
screen composed the whole block again. :class:`TextLines` keeps each row's drawn
strip with the text it was drawn from; a new set of rows refreshes only the rows
whose text (or styles) changed, and lays the screen out only when their number
does.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from aclmon.tui.views.base import text_key


class TextLines(Widget):
    """Rows of text, one line each (cut with an ellipsis, never wrapped)."""

    DEFAULT_CSS = """
    TextLines { height: auto; }
    """

    def __init__(self, lines: list[Text] | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._lines: list[Text] = []
        self._keys: list[tuple[object, ...]] = []
        #: each row's strip as drawn, for the width and base style it was drawn with
        self._strips: dict[int, Strip] = {}
        self._drawn_for: tuple[int, object] | None = None
        if lines:
            self.set_lines(lines)

    @property
    def content(self) -> Text:
        """All rows as one Text (what a Static of them would hold)."""
        return Text("\n").join(self._lines)

    def set_lines(self, lines: list[Text]) -> int:
        """Show these rows; returns how many rows were drawn again (all of them when
        their number changed: then the screen is laid out)."""
        keys = [text_key(line) for line in lines]
        if len(keys) != len(self._keys):
            self._lines, self._keys = list(lines), keys
            self._strips.clear()
            self.refresh(layout=True)
            return len(keys)
        changed = [
            y for y, (was, now) in enumerate(zip(self._keys, keys, strict=True)) if was != now
        ]
        self._lines, self._keys = list(lines), keys
        width = self.size.width
        for y in changed:
            self._strips.pop(y, None)
            if width:
                self.refresh(Region(0, y, width, 1))
        return len(changed)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return max((line.cell_len for line in self._lines), default=0)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        if (width, base) != self._drawn_for:  # resized, or another theme: all anew
            self._drawn_for = (width, base)
            self._strips.clear()
        if not 0 <= y < len(self._lines) or width <= 0:
            return Strip.blank(width, base)
        strip = self._strips.get(y)
        if strip is None:
            text = self._lines[y].copy()
            text.no_wrap = True
            if text.cell_len > width:
                text.truncate(width, overflow="ellipsis")
            text.stylize_before(base)
            segments = list(text.render(self.app.console, end=""))
            strip = self._strips[y] = Strip(
                Segment.adjust_line_length(segments, width, style=base), width
            )
        return strip
