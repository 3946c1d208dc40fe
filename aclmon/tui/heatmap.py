"""The fleet screen's heat map: lines of styled cells, drawn with Textual's Line API.

A thousand ranks are a thousand differently styled cells. As one rich ``Text``
in a ``Static`` every change converted, wrapped and rendered all of them again
(most of a refresh of the fleet screen at 1,024 ranks). Here each line is a
tuple of ``(text, style)`` pieces that is only looked at when it changed: a
line's strip is made once and kept while the line, the width and the widget's
own style stay the same. The widget is as high as it has lines; a line longer
than the widget is cut, never wrapped (the owner fits its lines to the width).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

#: one line of the map: its pieces of text, each with its style
HeatLine = tuple[tuple[str, Style], ...]


class HeatMap(Widget):
    """See the module docstring. :meth:`show` sets the lines."""

    DEFAULT_CSS = "HeatMap { height: auto; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[HeatLine] = []
        #: (line, width, base style) -> its strip
        self._strips: LRUCache[tuple[HeatLine, int, Style], Strip] = LRUCache(1024)

    def show(self, lines: list[HeatLine]) -> None:
        """Draw these lines (nothing is redrawn when they are the ones shown)."""
        if lines == self.lines:
            return
        resized = len(lines) != len(self.lines)
        self.lines = lines
        self.refresh(layout=resized)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines)

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        base = self.rich_style
        if not 0 <= y < len(self.lines) or width <= 0:
            return Strip.blank(width, base)
        line = self.lines[y]
        key = (line, width, base)
        strip = self._strips.get(key)
        if strip is None:
            segments = [Segment(text, base + style) for text, style in line]
            strip = Strip(Segment.adjust_line_length(segments, width, style=base), width)
            self._strips[key] = strip
        return strip
