"""The ``/`` filter line under a list: typing filters, Enter keeps, Esc clears."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class FilterBar(Input):
    """An input that stays hidden until ``/``; its owner filters on every change."""

    DEFAULT_CSS = """
    FilterBar { height: 1; border: none; padding: 0 1; display: none; }
    FilterBar.-shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Clear filter", id="filter.clear"),
    ]

    class Done(Message):
        """Enter or Esc: the owner gives the focus back to its list."""

        def __init__(self, bar: FilterBar) -> None:
            super().__init__()
            self.bar = bar

        @property
        def control(self) -> FilterBar:
            return self.bar

    def __init__(self, placeholder: str, **kwargs: object) -> None:
        super().__init__(placeholder=placeholder, **kwargs)  # type: ignore[arg-type]

    def open(self) -> None:
        self.add_class("-shown")
        self.focus()

    def action_clear(self) -> None:
        self.value = ""
        self.remove_class("-shown")
        self.post_message(self.Done(self))

    async def action_submit(self) -> None:
        if not self.value:
            self.remove_class("-shown")
        self.post_message(self.Done(self))
