"""Rich styles from the current theme's variables, and text fitting helpers."""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.style import Style
from textual.color import Color
from textual.dom import DOMNode


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
    """``text`` cut to ``width`` characters by an ellipsis in the middle, so both
    the start and the end (a file's name, a path's last part) stay readable."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return "…"
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")
