"""One column layout per list, used by both its header and its rows.

A list says which :class:`Column` s it has at a width (each names the cell it
shows, its width, its alignment and how a value too long for it is cut);
:class:`Layout` places them on the line once and draws the header and every row
from that placement, so a heading always stands over its values. A sort arrow
goes right after its heading, into the heading's padding or the gap after it,
never over a letter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from rich.style import Style
from rich.text import Text

from aclmon.tui.style import middle

#: how a value longer than its column is cut: "end" (``abc…``), "middle"
#: (``ab…yz``), "start" (its tail kept, unmarked: a time's seconds), or a
#: function (value, width) -> text (operator names: :class:`aclmon.tui.names.NameFitter`)
Cut = str | Callable[[str, int], str]
#: a cell: plain text, or text with its own style(s)
Cell = str | Text


class Column(NamedTuple):
    """One column of a list."""

    label: str
    #: characters; 0: the rest of the line (at least ``least``)
    width: int
    right: bool = False
    #: the sort a click on its heading picks ("" for none)
    sort: str = ""
    #: the cell it shows (a key of the row's cells; "" = the label)
    key: str = ""
    cut: Cut = "end"
    #: the narrowest a rest-of-the-line column may be before columns are dropped
    least: int = 0
    #: dropped when the line is too narrow, the highest first (0: never)
    drop: int = 0

    @property
    def cell_key(self) -> str:
        return self.key or self.label


def cut_text(value: str, width: int, cut: Cut) -> str:
    """``value`` in at most ``width`` characters, cut the column's way."""
    if len(value) <= width:
        return value
    if width <= 0:
        return ""
    if callable(cut):
        return cut(value, width)
    if cut == "middle":
        return middle(value, width)
    if cut == "start":
        return value[-width:]
    return value[: width - 1] + "…"


def content_width(values: Iterable[str], least: int, most: int) -> int:
    """A column as wide as its longest value, between ``least`` and ``most``."""
    return max(least, min(most, max((len(v) for v in values), default=0)))


class Layout:
    """Columns placed on a line of ``width`` characters: ``indent`` before the
    first, ``gap`` between two. Columns with a ``drop`` rank go, highest first,
    until the rest fit; the rest-of-the-line column gets what is left."""

    def __init__(
        self, columns: Sequence[Column], width: int, *, indent: int = 1, gap: int = 2
    ) -> None:
        self.width = width
        self.indent = indent
        self.gap = gap
        shown = list(columns)
        while self._needed(shown) > width:
            ranked = [c for c in shown if c.drop]
            if not ranked:
                break
            shown.remove(max(ranked, key=lambda c: c.drop))
        rest = max(0, width - self._needed(shown) + sum(c.least for c in shown if not c.width))
        self.columns = [c if c.width else c._replace(width=rest) for c in shown]
        #: (start, end) of each column on the line
        self.spans: list[tuple[int, int]] = []
        x = indent
        for column in self.columns:
            self.spans.append((x, x + column.width))
            x += column.width + gap

    def _needed(self, columns: Sequence[Column]) -> int:
        widths = [c.width or c.least for c in columns]
        return self.indent + sum(widths) + self.gap * max(0, len(widths) - 1)

    def has(self, key: str) -> bool:
        return any(c.cell_key == key for c in self.columns)

    def column(self, key: str) -> Column | None:
        return next((c for c in self.columns if c.cell_key == key), None)

    # ------------------------------------------------------------ rows
    def row(self, cells: Mapping[str, Cell], style: Style | None = None) -> Text:
        """One row: each column's cell cut to its width and aligned in it."""
        text = Text(" " * self.indent, no_wrap=True, overflow="ellipsis", style=style or "")
        for n, column in enumerate(self.columns):
            if n:
                text.append(" " * self.gap)
            text.append_text(self.cell(column, cells.get(column.cell_key, "")))
        text.rstrip()
        return text

    def cell(self, column: Column, value: Cell) -> Text:
        cell = value if isinstance(value, Text) else Text(value)
        fitted = cut_text(cell.plain, column.width, column.cut)
        if fitted != cell.plain:
            cell = Text(fitted, style=cell.style)
        pad = " " * (column.width - cell.cell_len)
        return Text.assemble(pad, cell) if column.right else Text.assemble(cell, pad)

    def words(self, cells: Mapping[str, Cell]) -> str:
        """What ``/`` matches a row by: the cells the columns show, whole and as cut
        to their columns (a name shortened to ``AIC_TRAP_EXC`` matches as shown)."""
        texts = []
        for column in self.columns:
            value = cells.get(column.cell_key, "")
            whole = value.plain if isinstance(value, Text) else value
            texts.append(whole)
            shown = cut_text(whole, column.width, column.cut)
            if shown != whole:
                texts.append(shown)
        return " ".join(texts)

    # ------------------------------------------------------------ header
    def header(
        self,
        sort: str = "",
        descending: bool = False,
        *,
        style: Style | None = None,
        marked: Style | None = None,
    ) -> tuple[Text, list[tuple[int, int, str]]]:
        """The headings (in ``style``) over their columns, and (start, end, sort) of
        each one a click sorts by. ``sort``: the column sorted by, marked with an
        arrow after its heading (▲, or ▼ when ``descending``) and ``marked``
        (underlined by default); "" for none."""
        text = Text(" " * self.indent, no_wrap=True, overflow="ellipsis", style=style or "")
        clicks: list[tuple[int, int, str]] = []
        for column, (start, end) in zip(self.columns, self.spans, strict=True):
            label = column.label[: column.width] if column.width else column.label
            here = bool(sort) and column.sort == sort
            head = Text(label, style=marked or Style(underline=True)) if here else Text(label)
            if here:
                head.append("▼" if descending else "▲")
            width = column.width + self.gap
            if column.right:  # the heading ends where its values end; the arrow after it
                room = column.width - len(label)
                line = Text.assemble(" " * room, head)
            else:
                line = head
            line.truncate(max(width, len(label)), pad=True)
            text.append_text(line)
            if column.sort:
                clicks.append((start, end + self.gap, column.sort))
        text.rstrip()
        return text, clicks
