"""The ``/`` filter line under a list: typing filters, Enter keeps, Esc clears,
Tab switches between hiding the rows that do not match and only marking them."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input

from aclmon.tui.messages import AboutWidget


class FilterBar(Input):
    """An input that stays hidden until ``/``; its owner filters on every change."""

    DEFAULT_CSS = """
    FilterBar { height: 1; border: none; padding: 0 1; display: none; }
    FilterBar.-shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Clear filter", id="filter.clear"),
        Binding("tab", "toggle_mode", "Filter/search", id="filter.mode"),
    ]

    class Done(AboutWidget["FilterBar"]):
        """Enter or Esc: the owner gives the focus back to its list."""

    class ModeChanged(AboutWidget["FilterBar"]):
        """Tab: rows that do not match are hidden (``hides``) or only the matches marked."""

        @property
        def hides(self) -> bool:
            return self.widget.hides

    def __init__(self, hint: str, *, searchable: bool = True, **kwargs: Any) -> None:
        # compact: one row without a border, focused or not (a focused Input's
        # border would cover the typed text in the line's one row)
        super().__init__(placeholder=f"filter: {hint}", compact=True, **kwargs)
        self.hint = hint
        #: Tab may switch to searching (the owner can mark matches and go to them)
        self.searchable = searchable
        #: rows that do not match are hidden (a filter), else only marked (a search)
        self.hides = True

    def open(self) -> None:
        self.add_class("-shown")
        self.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_mode":
            return self.searchable
        return True

    def action_toggle_mode(self) -> None:
        self.hides = not self.hides
        self.placeholder = f"{'filter' if self.hides else 'search'}: {self.hint}"
        self.post_message(self.ModeChanged(self))

    def action_clear(self) -> None:
        self.value = ""
        self.remove_class("-shown")
        self.post_message(self.Done(self))

    async def action_submit(self) -> None:
        if not self.value:
            self.remove_class("-shown")
        self.post_message(self.Done(self))
