"""Bindings every aclmon screen shares (the single-agent app and the fleet),
and how a key is written for people (help, hints, the key table)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual.binding import Binding, BindingType

from aclmon.tui.views import VIEWS, ViewEntry

#: Textual key names as the characters a user types
KEY_SYMBOLS = {
    "question_mark": "?", "slash": "/", "full_stop": ".", "comma": ",", "plus": "+",
    "equals_sign": "=", "minus": "-", "greater_than_sign": ">", "less_than_sign": "<",
    "right_square_bracket": "]", "left_square_bracket": "[", "colon": ":",
}  # fmt: skip


def key_display(keys: str) -> str:
    """``"question_mark,f1"`` as typed: ``"?,f1"``."""
    return ",".join(KEY_SYMBOLS.get(key.strip(), key.strip()) for key in keys.split(","))


def binding_rows(
    bindings: Iterable[BindingType], keymap: dict[str, str]
) -> list[tuple[str, str, str]]:
    """(keys as typed, description, id) of each binding, after the user's keymap:
    the rows of a help screen's section and of the key table."""
    out = []
    for b in bindings:
        if isinstance(b, Binding):
            keys = keymap.get(b.id or "", b.key)
            out.append((key_display(keys), b.description, b.id or ""))
    return out


def quit_bindings(action: str, namespace: str) -> list[Binding]:
    """``q`` quits, and so does Ctrl+C, as in any terminal tool (Textual's own
    Ctrl+C only hints); ids ``<namespace>.quit`` and ``<namespace>.interrupt``."""
    return [
        Binding("q", action, "Quit", id=f"{namespace}.quit"),
        Binding("ctrl+c", action, "Quit", show=False, priority=True, id=f"{namespace}.interrupt"),
    ]


def view_bindings() -> list[Binding]:
    """``1``… switch to the views in order (shown on the tab bar, not in the footer)."""
    return [
        Binding(
            str(number), f"show_view('{entry.id}')", entry.short_title, show=False,
            id=f"view.{entry.id}",
        )
        for number, entry in enumerate(VIEWS, start=1)
    ]  # fmt: skip


def hidden_view_binding_ids(shown: Sequence[ViewEntry]) -> frozenset[str]:
    """The binding ids of the views not ``shown`` (Compare without a golden run):
    their number keys' and their own, left out of the help and still known to a
    keymap."""
    return frozenset(
        binding_id
        for entry in VIEWS
        if entry not in shown
        for binding_id in (
            f"view.{entry.id}",
            *(b.id for b in entry.cls.BINDINGS if isinstance(b, Binding) and b.id),
        )
    )
