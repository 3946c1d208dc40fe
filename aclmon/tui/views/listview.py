"""What the filterable views share: the ``/`` line, and for lists the rows,
the column header, sorting and ``n``/``N``.

:class:`FilteredView` wires one :class:`FilterBar` to a ``filter_text``
reactive (``/`` opens it, Esc clears it, Tab switches between hiding the rows
that do not match and only marking them). :class:`ListView` adds a
:class:`VirtualList` of rows taken from the store: while nothing narrows or
reorders them the rows *are* the store's ring (absolute numbering, so follow
mode works); otherwise they are a filtered, sorted copy. A view says which
rows exist, how one matches a text, which columns it has and how a row looks.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widgets import Static

from aclmon.tui.columns import Cell, Column, Layout
from aclmon.tui.style import theme_style
from aclmon.tui.views.base import View
from aclmon.tui.views.filterbar import FilterBar
from aclmon.tui.vlist import VirtualList


class FilteredView(View):
    """A view with a ``/`` filter line (a :class:`FilterBar` it composes)."""

    #: what the filter line says it matches
    FILTER_HINT: ClassVar[str] = "filter"
    #: Tab in the filter line switches to searching (marks and ``n``/``N``)
    SEARCHABLE: ClassVar[bool] = False
    #: reactives whose change redraws the rows (each class names its own)
    REDRAWN_BY: ClassVar[tuple[str, ...]] = ("filter_hides",)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", id="filter.open"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="filter.clear"),
        Binding("n", "match(1)", "Next match", show=False, id="filter.next"),
        Binding("N", "match(-1)", "Previous match", show=False, id="filter.previous"),
    ]

    filter_text: reactive[str] = reactive("")
    """The text typed after ``/`` (lower case)."""
    filter_hides: reactive[bool] = reactive(True)
    """Rows that do not match are hidden (else only the matches are marked: search)."""

    def filter_bar(self) -> FilterBar:
        return FilterBar(self.FILTER_HINT, searchable=self.SEARCHABLE, id=f"{self.id}-filter")

    def watch_filter_text(self) -> None:
        self.rebuild()

    def on_mount(self) -> None:
        for cls in type(self).__mro__:
            for name in cls.__dict__.get("REDRAWN_BY", ()):
                self.watch(self, name, self.rebuild, init=False)

    def rebuild(self) -> None:
        """The rows to show changed (a filter, a sort, a toggle): redraw them."""
        if self.store is not None:
            self.redraw()

    def focus_content(self) -> None:
        """Where the focus goes back to when the filter line closes."""
        self.focus()

    @property
    def filtered(self) -> bool:
        """A filter hides rows now."""
        return bool(self.filter_text) and self.filter_hides

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def action_clear_filter(self) -> None:
        self.query_one(FilterBar).action_clear()

    def set_filter(self, text: str) -> None:
        """Filter by ``text`` as if typed after ``/`` (the line shows it; "" clears)."""
        bar = self.query_one(FilterBar)
        bar.value = text
        bar.set_class(bool(text), "-shown")
        self.filter_text = text.strip().lower()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.filter_text)
        if action == "match":
            # without a text, n/N go on to the app (a replay's next/previous marker)
            return bool(self.filter_text)
        return True

    def action_match(self, direction: int) -> None:
        """Move to the next (1) or previous (-1) line that matches the ``/`` text, wrapping."""
        if not self.seek_match(direction, self.cursor_row()):
            self.app.bell()

    def cursor_row(self) -> int:
        """The cursor's position among the rows (-1: none)."""
        raise NotImplementedError

    def seek_match(self, direction: int, start: int) -> bool:
        """Put the cursor on the first match after row ``start`` going ``direction``."""
        raise NotImplementedError

    @on(FilterBar.Changed)
    def _filter_changed(self, message: FilterBar.Changed) -> None:
        message.stop()
        self.filter_text = message.value.strip().lower()

    @on(FilterBar.ModeChanged)
    def _filter_mode(self, message: FilterBar.ModeChanged) -> None:
        self.filter_hides = message.hides

    @on(FilterBar.Done)
    def _filter_done(self) -> None:
        self.focus_content()

    def filter_note(self, shown: int, matches: int) -> str:
        """The status line's words for the filter: ``filter “x”: 3 shown``."""
        if not self.filter_text:
            return ""
        if self.filter_hides:
            return f"  ·  filter “{self.filter_text}”: {shown} shown"
        return (
            f"  ·  search “{self.filter_text}”: {matches} match(es)"
            f" ({self.key('filter.next', 'n')}/{self.key('filter.previous', 'N')})"
        )


def follow_binding(view: str) -> Binding:
    """``f``: follow the newest row, or stop (:meth:`ListView.action_toggle_follow`);
    its id is ``<view>.follow``."""
    return Binding("f", "toggle_follow", "Follow on/off", id=f"{view}.follow")


def sort_key_of(*fields: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, ...]]:
    """A sort key from field getters, compared in order."""
    return lambda row: tuple(f(row) for f in fields)


class ListView(FilteredView):
    """A filterable, sortable list of the store's records; see the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "next_sort", "Sort", id="sort.next"),
        # r as in the Profiling view's operator table; S is a replay's "to the start"
        Binding("r", "reverse_sort", "Reverse sort", show=False, id="sort.reverse"),
    ]
    SEARCHABLE = True
    REDRAWN_BY: ClassVar[tuple[str, ...]] = ("sort", "sort_reverse")
    #: sort name -> key of a row; the first is the store's own (arrival) order
    SORTS: ClassVar[dict[str, Callable[[Any], Any]]] = {}

    sort: reactive[str] = reactive("time")
    """Row order: a key of :attr:`SORTS`."""
    sort_reverse: reactive[bool] = reactive(False)
    """The order is reversed (newest, largest, last name first)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: list[Any] = []
        self._offset = 0
        self._head_spans: list[tuple[int, int, str]] = []
        #: what each one-line Static shows now (selector -> text)
        self._shown_lines: dict[str, tuple[Text, Any]] = {}
        self._layouts: dict[int, Layout] = {}
        self._drawn_columns: list[Column] = []

    # ------------------------------------------------------------ what a view says
    def source_rows(self) -> tuple[list[Any], int]:
        """The store's records (a copy) and how many were dropped before the first."""
        raise NotImplementedError

    def columns(self, width: int) -> list[Column]:
        """The columns at ``width`` (a :class:`Layout` drops those with a ``drop``
        rank that do not fit)."""
        raise NotImplementedError

    def cells(self, row: Any) -> Mapping[str, Cell]:
        """What each column shows of a row (by :attr:`Column.cell_key`), whole: the
        layout cuts it to its column, and ``/`` matches the shown columns' cells."""
        raise NotImplementedError

    def render_row(self, row: Any, width: int) -> Text:
        """A row drawn by the layout the header is drawn by (a view overrides it
        only for rows that are not records, such as group headings)."""
        return self.column_layout(width).row(self.cells(row))

    def row_text(self, row: Any) -> str:
        """What ``/`` matches a row against (lower case): the cells of the columns
        on screen, whole; "" never matches."""
        return self.column_layout(self.list_width).words(self.cells(row)).lower()

    def describe(self, text: Text, state: Any, dim: Style) -> None:
        """Append to ``text`` what the status line above the header says."""
        raise NotImplementedError

    def measure_rows(self, rows: list[Any]) -> None:
        """Called with the rows to show before the columns are laid out: a view
        that sizes columns by their content (or fits names among them) looks here."""

    def column_layout(self, width: int) -> Layout:
        """The columns placed at ``width``, as the header and the rows draw them
        (worked out again at each redraw: a view may size columns by their content)."""
        found = self._layouts.get(width)
        if found is None:
            found = self._layouts[width] = Layout(self.columns(width), width)
        return found

    @property
    def list_width(self) -> int:
        """The width the rows are drawn at, and so the header."""
        width = self.vlist.scrollable_content_region.width if self.is_mounted else 0
        return width or max(1, self.width - 3)

    def draw_status(self) -> None:
        if self.store is None or not self.is_mounted:
            return
        text = Text(no_wrap=True, overflow="ellipsis")
        self.describe(text, self.store.state, theme_style(self, "aclmon-dim"))
        self.show_line(f"#{self.id}-status", text)

    def show_line(self, selector: str, text: Text) -> None:
        """Put ``text`` in a one-line Static: a repaint when it changed, never a
        layout of the screen (its height is fixed)."""
        shown = (text, text.style)  # Text's == leaves its own style out
        if self._shown_lines.get(selector) != shown:
            self._shown_lines[selector] = shown
            self.query_one(selector, Static).update(text, layout=False)

    def narrow(self, rows: list[Any]) -> list[Any]:
        """The view's own toggles (levels, overflow only…) applied to the records."""
        return rows

    @property
    def narrowed(self) -> bool:
        """One of the view's own toggles narrows or regroups the records now."""
        return False

    def order_rows(self, rows: list[Any]) -> list[Any]:
        """The chosen records in display order (a view may also group them)."""
        return self.sorted(rows)

    # ------------------------------------------------------------ composition
    def compose(self) -> ComposeResult:
        yield Static(id=f"{self.id}-status", classes="status")
        yield from self.compose_list()

    def compose_list(self) -> ComposeResult:
        yield Static(id=f"{self.id}-header", classes="colhead")
        yield VirtualList(self._render_row, row_key=self.list_row_key(), id=f"{self.id}-list")
        yield self.filter_bar()

    def list_row_key(self) -> Callable[[int], Hashable] | None:
        """What the list caches a drawn row by (None: its absolute number, and the
        view clears the cache when rows change under their numbers)."""
        return None

    @property
    def vlist(self) -> VirtualList:
        return self.query_one(f"#{self.id}-list", VirtualList)

    def on_focus(self) -> None:
        self.vlist.focus()

    def focus_content(self) -> None:
        self.vlist.focus()

    def on_resize(self) -> None:
        self.draw_header()

    def rebuild(self) -> None:
        if self.store is not None:
            self.vlist.clear_cache()
            self.redraw()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "reverse_sort":
            return self.key("sort.reverse", "r") not in self.app_keys
        return super().check_action(action, parameters)

    def watch_filter_text(self) -> None:
        super().watch_filter_text()
        if self.filter_text and not self.filter_hides:
            # searching: the cursor goes to the first match from where it is
            self.seek_match(1, self.cursor_row() - 1)

    @property
    def default_sort(self) -> str:
        return next(iter(self.SORTS), "")

    @property
    def plain(self) -> bool:
        """The rows are the store's ring as it is (absolute numbering, follow works)."""
        return not (
            self.filtered or self.narrowed or self.sort != self.default_sort or self.sort_reverse
        )

    # ------------------------------------------------------------ rows
    def row_at(self, index: int) -> Any:
        row = index - self._offset
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def sorted(self, rows: Iterable[Any]) -> list[Any]:
        key = self.SORTS.get(self.sort)
        if key is None or (self.sort == self.default_sort and not self.sort_reverse):
            return list(rows)
        return sorted(rows, key=key, reverse=self.sort_reverse)

    def matches(self, row: Any) -> bool:
        return bool(self.filter_text) and self.filter_text in self.row_text(row)

    def redraw(self) -> None:
        if self.store is None or not self.is_mounted:
            return
        records, dropped = self.source_rows()
        vlist = self.vlist
        if self.plain:
            self._rows, self._offset = records, dropped
            vlist.set_rows(self._offset, len(self._rows))
        else:
            selected = None if vlist.follow else self.row_at(vlist.cursor)
            chosen = self.narrow(records)
            if self.filtered:
                chosen = [r for r in chosen if self.matches(r)]
            self._rows, self._offset = self.order_rows(chosen), 0
            vlist.clear_cache()  # row numbers mean other rows after a change
            # the cursor stays on its record wherever the new order puts it
            at = next((n for n, r in enumerate(self._rows) if r is selected), None)
            vlist.set_rows(0, len(self._rows), cursor=at)
        self.measure_rows(self._rows)
        self._layouts.clear()
        columns = self.column_layout(self.list_width).columns
        if (
            columns != self._drawn_columns
        ):  # a column changed its width: rows drawn before are stale
            self._drawn_columns = columns
            vlist.clear_cache()
        self.draw_header()
        self.draw_status()

    def _render_row(self, index: int, width: int) -> Text:
        row = self.row_at(index)
        if row is None:
            return Text("")
        text = self.render_row(row, width)
        if self.filter_text:
            text.highlight_words(
                [self.filter_text],
                theme_style(self, "aclmon-busy", bold=True, underline=True),
                case_sensitive=False,
            )
        return text

    def select(self, wanted: Callable[[Any], bool]) -> bool:
        """Put the cursor on the first row ``wanted`` holds for (the list stops
        following); False when no row shown is one."""
        self.redraw()
        for row, value in enumerate(self._rows):
            if wanted(value):
                self.vlist.set_follow(False)
                self.vlist.move_cursor_to(self._offset + row)
                self.call_after_refresh(self.vlist.scroll_to_cursor)
                self.draw_status()
                return True
        return False

    # ------------------------------------------------------------ keys
    def cursor_row(self) -> int:
        return self.vlist.cursor - self._offset

    def seek_match(self, direction: int, start: int) -> bool:
        """Put the cursor on the first match after row ``start`` going ``direction``."""
        rows = self._rows
        if not self.filter_text or not rows:
            return False
        for step in range(1, len(rows) + 1):
            row = (start + direction * step) % len(rows)
            if self.matches(rows[row]):
                self.vlist.move_cursor_to(self._offset + row)
                return True
        return False

    def action_toggle_follow(self) -> None:
        """Follow the newest row, or stop (a view that binds it: :func:`follow_binding`)."""
        vlist = self.vlist
        vlist.set_follow(not vlist.follow)
        if vlist.follow:
            vlist.action_last()
        self.draw_status()

    def action_next_sort(self) -> None:
        sorts = list(self.SORTS)
        self.sort = sorts[(sorts.index(self.sort) + 1) % len(sorts)]

    def action_reverse_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse

    def sort_by(self, sort: str) -> None:
        """A click on a column's header: sort by it, or reverse when it already is."""
        if sort == self.sort:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort, self.sort_reverse = sort, False

    # ------------------------------------------------------------ header
    def draw_header(self) -> None:
        if not self.is_mounted:
            return
        shows_order = self.sort != self.default_sort or self.sort_reverse
        text, self._head_spans = self.column_layout(self.list_width).header(
            self.sort if shows_order else "", self.sort_reverse, style=Style(bold=True)
        )
        self.show_line(f"#{self.id}-header", text)

    def on_click(self, event: events.Click) -> None:
        header = self.query_one(f"#{self.id}-header", Static)
        if event.widget is not header:
            return
        x = event.screen_x - header.content_region.x
        for start, end, sort in self._head_spans:
            if start <= x < end:
                self.sort_by(sort)
                return

    # ------------------------------------------------------------ status line
    def sort_note(self) -> str:
        if self.sort == self.default_sort and not self.sort_reverse:
            return ""
        order = "reversed" if self.sort_reverse else ""
        return f"  ·  sorted by {self.sort} {order}".rstrip()

    def match_count(self) -> int:
        return sum(1 for row in self._rows if self.matches(row))
