"""The detail of a timeline item (Enter in the Timeline view): what it is, where
and when, the operator, model, run and duration, shapes when the event had
them, and every other field the trace export writes for it. On an exception
``e`` goes on to the exception's own detail."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType

from aclmon import events as ev
from aclmon.store.slices import EXCEPTION, Instant, Slice
from aclmon.tui import fmt
from aclmon.tui.screens import ScrollingModal
from aclmon.tui.style import key_values, theme_style
from aclmon.tui.views.timeline_draw import clock_text, lane_label

#: the args shown in their own lines first (the rest follow as the export has them)
_FIRST = ("OP Type", "Model Name", "Model Id", "Execution", "Input Shapes", "Output Shapes")


class SliceDetail(ScrollingModal[str | None]):
    """Dismissed with ``"exception"`` to open the exception it shows."""

    PREFIX = "detail"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "close", "Close", id="detail.close"),
        Binding("e", "exception", "Exception detail", id="slice.exception"),
    ]

    def __init__(self, item: Slice | Instant) -> None:
        super().__init__()
        self.item = item

    @property
    def is_exception(self) -> bool:
        return self.item.kind == EXCEPTION and isinstance(self.item.event, ev.AclException)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "exception":
            return self.is_exception
        return True

    def action_close(self) -> None:
        self.dismiss(None)

    def action_exception(self) -> None:
        if self.is_exception:
            self.dismiss("exception")

    def on_mount(self) -> None:
        item = self.item
        dim = theme_style(self, "aclmon-dim")
        title = Text(item.name, style=Style(bold=True))
        title.append(f"  · {item.kind}", style=dim)
        rows: list[tuple[str, Text]] = [
            ("lane", Text(f"{lane_label(item.lane, 0)}  ({item.lane.process.name})")),
        ]
        if isinstance(item, Slice):
            rows.append(("start", Text(self._when(item.start_ns))))
            rows.append(("end", Text(self._when(item.end_ns))))
            rows.append(("duration", Text(fmt.duration_ns(item.end_ns - item.start_ns))))
        else:
            rows.append(("time", Text(self._when(item.ts_ns))))
        args = item.args
        for key in _FIRST:
            if key in args:
                rows.append((key, Text(str(args[key]))))
        for key, value in args.items():
            if key not in _FIRST:
                rows.append((key, Text(str(value))))
        note = "Esc closes"
        if self.is_exception:
            note += f" · {self._key('slice.exception', 'e')} opens the exception's detail"
        self.show(title, [key_values(rows, dim)], f"\n{note}")

    def _when(self, ts_ns: int) -> str:
        return f"{clock_text(ts_ns, 1)} UTC"

    def _key(self, binding_id: str, default: str) -> str:
        keymap = getattr(self.app, "user_keymap", {})
        keys = keymap.get(binding_id)
        return keys.split(",")[0] if keys else default
