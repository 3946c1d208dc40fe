"""The frame's bottom line: Textual's footer, fitted so Help and Quit always show."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: what a footer never drops (the app's own keys, whatever the view adds before them)
KEPT_ACTIONS = frozenset({"help", "quit", "quit_fleet"})


def key_width(key: FooterKey) -> int:
    """Cells a footer key takes: `` k description `` (its padding as Textual draws it)."""
    return len(key.key_display) + 2 + (len(key.description) + 1 if key.description else 0)


class FittingFooter(Footer):
    """A footer that drops the view's keys from the right (they stay in ``?`` help)
    until the app's own Help and Quit fit beside the palette key."""

    def compose(self) -> ComposeResult:
        widgets: list[Widget] = list(super().compose())
        room = (self.size.width or self.app.size.width) - 1
        keys = [w for w in widgets if isinstance(w, FooterKey)]
        used = sum(key_width(k) + (1 if k.has_class("-command-palette") else 0) for k in keys)
        droppable = [
            k for k in keys
            if k.action not in KEPT_ACTIONS and not k.has_class("-command-palette")
        ]  # fmt: skip
        dropped: set[int] = set()
        while used > room and droppable:
            key = droppable.pop()
            dropped.add(id(key))
            used -= key_width(key)
        yield from (w for w in widgets if id(w) not in dropped)

    def on_resize(self) -> None:
        self.refresh(recompose=True)
