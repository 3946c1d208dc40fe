"""Bindings every aclmon screen shares (the single-agent app and the fleet)."""

from __future__ import annotations

from textual.binding import Binding


def quit_bindings(action: str, namespace: str) -> list[Binding]:
    """``q`` quits, and so does Ctrl+C, as in any terminal tool (Textual's own
    Ctrl+C only hints); ids ``<namespace>.quit`` and ``<namespace>.interrupt``."""
    return [
        Binding("q", action, "Quit", id=f"{namespace}.quit"),
        Binding("ctrl+c", action, "Quit", show=False, priority=True, id=f"{namespace}.interrupt"),
    ]


def view_bindings(titles: dict[str, str]) -> list[Binding]:
    """``1``… switch to the views in order (shown on the tab bar, not in the footer)."""
    return [
        Binding(
            str(number), f"show_view('{view}')", title.split(" /")[0], show=False, id=f"view.{view}"
        )
        for number, (view, title) in enumerate(titles.items(), start=1)
    ]
