"""A message base for widgets that say something about themselves."""

from __future__ import annotations

from typing import Generic, TypeVar

from textual.message import Message
from textual.widget import Widget

WidgetT = TypeVar("WidgetT", bound=Widget)


class AboutWidget(Message, Generic[WidgetT]):
    """Posted by ``widget`` about itself; it is the ``control``, so a handler
    can pick it by selector (``@on(VirtualList.Selected, "#rows")``)."""

    def __init__(self, widget: WidgetT) -> None:
        super().__init__()
        self.widget = widget

    @property
    def control(self) -> WidgetT:
        return self.widget
