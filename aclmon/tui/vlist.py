"""A virtual list on Textual's Line API: renders only the visible rows.

The owner keeps the data (a bounded ring in the store) and tells the list how
many rows exist and how many were dropped from its front; rows are numbered
absolutely (dropped + position), so the cursor stays on the same record while
the ring rotates. Rendered rows are cached by absolute number, which is safe
because records never change once appended.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from aclmon.tui.inert import inert_text
from aclmon.tui.messages import AboutWidget

#: (absolute row number, width) -> the row's text.
RowRenderer = Callable[[int, int], Text]


def cursor_bindings(prefix: str, *, first: str, last: str) -> list[BindingType]:
    """The keys that move a cursor through lines (up and down, a page, to the
    first and the last: actions ``cursor(n)``, ``page(n)``, ``first``, ``last``),
    with ids under ``prefix``."""
    return [
        Binding("up,k", "cursor(-1)", "Up", show=False, id=f"{prefix}.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id=f"{prefix}.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id=f"{prefix}.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id=f"{prefix}.page_down"),
        Binding("home,g", "first", first, show=False, id=f"{prefix}.first"),
        Binding("end,G", "last", last, show=False, id=f"{prefix}.last"),
    ]


class VirtualList(ScrollView, can_focus=True):
    """Rows from ``renderer``; a cursor; follow mode that sticks to the newest row."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"vlist--cursor"}
    DEFAULT_CSS = """
    /* the scrollbar's room is kept: rows and the header over them share one width */
    VirtualList { background: $surface; scrollbar-gutter: stable; scrollbar-size-vertical: 1; }
    VirtualList > .vlist--cursor { background: $aclmon-cursor; }
    VirtualList:focus > .vlist--cursor { background: $aclmon-cursor; text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        *cursor_bindings("list", first="First", last="Last (follow)"),
        Binding("enter", "select", "Open", id="list.open"),
    ]

    class _ListMessage(AboutWidget["VirtualList"]):
        @property
        def vlist(self) -> VirtualList:
            return self.widget

    class _RowMessage(_ListMessage):
        def __init__(self, vlist: VirtualList, index: int) -> None:
            super().__init__(vlist)
            self.index = index

    class Selected(_RowMessage):
        """Enter on a row: ``index`` is its absolute number."""

    class Highlighted(_RowMessage):
        """The cursor moved to another row (absolute number ``index``)."""

    class FollowChanged(_ListMessage):
        """Follow mode went on or off (``follow``)."""

        def __init__(self, vlist: VirtualList, follow: bool) -> None:
            super().__init__(vlist)
            self.follow = follow

    def __init__(
        self,
        renderer: RowRenderer,
        *,
        row_key: Callable[[int], Hashable] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._renderer = renderer
        #: what a row's drawn line is cached by (its absolute number when not given):
        #: an owner whose rows move or change keys them by what they show
        self._row_key = row_key
        self._offset = 0  # rows dropped from the front so far
        self._count = 0
        self.cursor = -1  # absolute; -1 = no rows yet
        self.follow = True
        self._cache: LRUCache[tuple[Hashable, int, Style], Strip] = LRUCache(512)
        self._cache_theme = ""

    # ---------------------------------------------------------------- data
    @property
    def row_count(self) -> int:
        return self._count

    @property
    def first_index(self) -> int:
        return self._offset

    def set_rows(self, offset: int, count: int, *, cursor: int | None = None) -> None:
        """The data now holds rows ``offset .. offset+count-1`` (absolute numbers).
        ``cursor``: where the record under the cursor is now (rows reordered or
        filtered anew), when not following; it stays on it."""
        if cursor is not None and not self.follow and 0 <= cursor - offset < count:
            moved = cursor != self.cursor
            self.cursor = cursor
            if moved:
                self.call_after_refresh(self.scroll_to_cursor)
        if offset == self._offset and count == self._count:
            return
        self._offset, self._count = offset, count
        self._set_height(count)
        before = self.cursor
        if count == 0:
            self.cursor = -1
        elif self.follow or self.cursor < offset:
            self.cursor = max(self.cursor, offset) if not self.follow else offset + count - 1
        if self.cursor != before and self.cursor >= 0:
            self.post_message(self.Highlighted(self, self.cursor))
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
            # again once the new size is laid out: a list that grew at once (a toggle
            # showing every row again) has a larger end than the one scrolled to now
            self.call_after_refresh(self._follow_end)
        else:  # the rows changed under a cursor that stays: keep it on screen
            self.call_after_refresh(self.scroll_to_cursor)
        self.refresh()

    def _set_height(self, count: int) -> None:
        """The list is ``count`` rows long now. While its scroll bars stay as they
        are (the vertical one shown before and after, or neither; its width the
        same), nothing around the list moves: only its scrollbar is updated, and
        the screen is not laid out again (a layout of the whole screen costs tens
        of ms; a list that grows with every event would pay it every refresh)."""
        size = Size(self.size.width, count)
        if size == self.virtual_size:
            return
        height = self.container_size.height
        if (
            self.is_mounted
            and height > 0
            and size.width == self.virtual_size.width  # so the horizontal bar stays too
            and self.show_vertical_scrollbar == (count > height)
        ):
            self.set_reactive(VirtualList.virtual_size, size)
            # Textual's own update of a scroll view's bars for a new virtual size
            # (what a layout would end in), without the layout
            self._scroll_update(size)
        else:
            self.virtual_size = size

    def _follow_end(self) -> None:
        if self.follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def clear_cache(self) -> None:
        self._cache.clear()
        self.refresh()

    def refresh_rows(self, indices: Iterable[int]) -> None:
        """Paint again the visible lines of these rows (absolute numbers) only."""
        top = round(self.scroll_y)
        height = max(1, self.scrollable_content_region.height)
        for index in indices:
            row = index - self._offset
            if top <= row < top + height:
                self.refresh_line(row)

    # ---------------------------------------------------------------- keys
    def set_follow(self, follow: bool) -> None:
        if follow != self.follow:
            self.follow = follow
            self.post_message(self.FollowChanged(self, follow))

    def move_cursor_to(self, index: int) -> None:
        if self._count == 0:
            return
        last = self._offset + self._count - 1
        index = min(max(index, self._offset), last)
        before = self.cursor
        if index != before:
            self.post_message(self.Highlighted(self, index))
        self.cursor = index
        self.set_follow(index == last)
        row = index - self._offset
        top = round(self.scroll_y)
        height = max(1, self.scrollable_content_region.height)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)
        if index != before:
            # the line the cursor left and the one it reached (a scroll repaints
            # all it shows); a cursor kept where it is (a view redrawn on a
            # reading) paints nothing
            self.refresh_rows((before, index))

    def action_cursor(self, delta: int) -> None:
        self.move_cursor_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor_to(
            self.cursor + direction * max(1, self.scrollable_content_region.height - 1)
        )

    def action_first(self) -> None:
        self.move_cursor_to(self._offset)

    def action_last(self) -> None:
        self.move_cursor_to(self._offset + self._count - 1)

    def action_select(self) -> None:
        if self.cursor >= 0:
            self.post_message(self.Selected(self, self.cursor))

    def scroll_to_cursor(self) -> None:
        """Scroll so the cursor's row is visible (a list shown again, or resized)."""
        if self.cursor >= 0:
            row = self.cursor - self._offset
            top = round(self.scroll_y)
            height = max(1, self.scrollable_content_region.height)
            if not top <= row < top + height:
                self.scroll_to(y=max(0, row - height // 2), animate=False, immediate=True)

    def on_click(self, event: events.Click) -> None:
        """A click selects the row under it; a double click opens it (as Enter)."""
        if not self._count:
            return
        index = self._offset + round(self.scroll_y) + int(event.y)
        if index >= self._offset + self._count:
            return
        self.move_cursor_to(index)
        if event.chain >= 2:
            self.action_select()

    # ---------------------------------------------------------------- render
    def render_line(self, y: int) -> Strip:
        theme = self.app.theme
        if theme != self._cache_theme:
            self._cache.clear()
            self._cache_theme = theme
        row = round(self.scroll_y) + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if row >= self._count or width <= 0:
            return Strip.blank(width, base)
        index = self._offset + row
        selected = index == self.cursor
        style = base + self.get_component_rich_style("vlist--cursor") if selected else base
        # keyed by the style too: the cursor's differs with focus, and both with the
        # theme's colours, which are new only once the theme's CSS is refreshed
        key = (index if self._row_key is None else self._row_key(index), width, style)
        strip = self._cache.get(key)
        if strip is None:
            text = self._renderer(index, width)
            if len(text) > 2 * width:  # more than fits in any case: not measured
                text = text[: 2 * width + 1]
            # text from outside in a row is drawn, never obeyed (tui.inert)
            text = inert_text(text)
            if text.cell_len > width:  # a row that does not fit says so
                text.truncate(width, overflow="ellipsis")
            text.stylize_before(style)
            segments = list(text.render(self.app.console, end=""))
            strip = Strip(
                Segment.adjust_line_length(segments, width, style=style or Style()), width
            )
            self._cache[key] = strip
        return strip
