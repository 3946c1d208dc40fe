"""Rich styles from the current theme's variables, and text fitting helpers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.table import Table
from textual.color import Color
from textual.dom import DOMNode

from aclmon.tui.inert import inert_line


def theme_style(node: DOMNode, variable: str, **extra: Any) -> Style:
    """A Rich style coloured by one of the current theme's variables."""
    value = node.app.theme_variables.get(variable)
    color = None
    if value:
        try:
            color = Color.parse(value).rich_color
        except Exception:  # a theme with an unparseable value: fall back to no colour
            color = None
    return Style(color=color, **extra)


class Roles(NamedTuple):
    """The styles a status panel draws with, from the current theme."""

    dim: Style
    #: a good state (idle, on, ok)
    good: Style
    bad: Style
    #: a pending or busy state
    busy: Style
    #: a key named in the text
    key: Style


def roles(node: DOMNode) -> Roles:
    """The current theme's :class:`Roles` (the bold ones bold)."""
    return Roles(
        theme_style(node, "aclmon-dim"),
        theme_style(node, "aclmon-idle", bold=True),
        theme_style(node, "aclmon-bad", bold=True),
        theme_style(node, "aclmon-busy", bold=True),
        theme_style(node, "footer-key-foreground", bold=True),
    )


def middle(text: str, width: int) -> str:
    """``text`` (from outside: made inert first) cut to ``width`` characters by an
    ellipsis in the middle, so both the start and the end (a file's name, a
    path's last part) stay readable."""
    text = inert_line(text)
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return "…"
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


class Fitted:
    """``wide`` where its natural width fits the width it is drawn at, else
    ``narrow`` (the same fields as key/value lines): a detail never cuts a
    table's cells when the terminal is narrow."""

    def __init__(self, wide: RenderableType, narrow: RenderableType) -> None:
        self.wide = wide
        self.narrow = narrow

    def fits(self, console: Console, width: int) -> bool:
        unbounded = console.options.update_width(10_000)
        return Measurement.get(console, unbounded, self.wide).maximum <= width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.wide if self.fits(console, options.max_width) else self.narrow

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        narrow = Measurement.get(console, options, self.narrow)
        wide = Measurement.get(console, options, self.wide)
        return Measurement(narrow.minimum, max(narrow.maximum, wide.maximum))


def key_values(rows: Iterable[tuple[str, RenderableType]], dim: Style, title: str = "") -> Table:
    """One field a line: the key (dim) in a column of its own, the value beside
    it wrapping under itself, never cut."""
    table = Table.grid(padding=(0, 2))
    if title:
        table.title = title
        table.title_justify = "left"
        table.title_style = Style(bold=True)
    table.add_column(style=dim, no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    return table
