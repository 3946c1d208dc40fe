"""What every view shares: it draws the store the app hands it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from textual.containers import Vertical
from textual.widget import Widget

from aclmon.store import Store, StoreState
from aclmon.tui.vlist import VirtualList


class Command(NamedTuple):
    """One palette entry: its name, what it runs, and what it does in words
    (the same for every entry of a kind, so docs/usage.md's key table shows it);
    ``state`` is how things stand now (shown after ``help`` in the palette)."""

    name: str
    run: Callable[[], object]
    help: str
    state: str = ""

    @property
    def shown_help(self) -> str:
        return f"{self.help} ({self.state})" if self.state else self.help


class View(Vertical):
    """Base of a view. The app calls :meth:`update_from` with the store when it
    changed (on the refresh timer, only while the view is visible); the view
    keeps it, so a change of its own state (a reactive) redraws at once with
    :meth:`redraw`. Views never reach into the app: they post messages up."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store: Store | None = None
        #: the user's keymap (binding id -> keys), so hints name the keys in use.
        self.keymap: dict[str, str] = {}
        #: keys the app binds itself (a replay's timeline keys): they win over a view's
        self.app_keys: frozenset[str] = frozenset()

    def key(self, binding_id: str, default: str) -> str:
        """The key a hint should name for a binding: the first remapped one, or ``default``."""
        keys = self.keymap.get(binding_id)
        return keys.split(",")[0] if keys else default

    def focus_target(self) -> Widget:
        """What gets the focus when the view is shown: its first list, else itself."""
        lists = self.query(VirtualList)
        return lists.first() if lists else self

    def update_from(self, store: Store) -> None:
        self.store = store
        self.redraw()

    @property
    def width(self) -> int:
        """Columns to fit: the view's own once laid out, else the screen's."""
        return self.size.width or self.app.size.width or 160

    def redraw(self) -> None:
        """Draw from ``self.store`` (nothing before the first store)."""
        raise NotImplementedError

    def content_version(self) -> object:
        """What the view shows besides the store, as a value that changes with it
        (a compare's table): the app repaints when it or the store's version moved."""
        return None

    def tab_count(self, state: StoreState) -> str:
        """What the view's tab shows after its title (a count, a mark), or ""."""
        return ""

    def palette_commands(self, store: Store) -> list[Command]:
        """The view's own palette entries; the palette shows the view before running one."""
        return []
