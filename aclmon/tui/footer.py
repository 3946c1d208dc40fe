"""The frame's bottom line: the keys of the focused view, fitted so Help and Quit
always show.

Built from Textual's public API only (``Screen.active_bindings``,
``App.get_key_display``, ``Screen.bindings_updated_signal``, ``App.simulate_key``)
and drawn as Textual's own footer draws its keys (the same theme variables), so
it looks the same; unlike that footer it knows which keys it may drop.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

#: what a footer never drops (the app's own keys, whatever the view adds before them)
KEPT_ACTIONS = frozenset({"help", "quit", "quit_fleet"})


class Hint(NamedTuple):
    """One key as the footer shows it."""

    key: str
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str

    @property
    def width(self) -> int:
        """Cells it takes: `` k description ``."""
        return len(self.display) + 2 + (len(self.description) + 1 if self.description else 0)


class FooterKey(Widget):
    """One key of the footer; a click does what the key does."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {"footer-key--key", "footer-key--description"}
    DEFAULT_CSS = """
    FooterKey {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        & > .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        &:hover {
            pointer: pointer;
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        &.-disabled { text-style: dim; }
        &.-command-palette {
            dock: right;
            padding-right: 1;
            border-left: vkey $foreground 20%;
        }
    }
    """

    def __init__(self, hint: Hint, *, classes: str = "") -> None:
        super().__init__(classes=classes + ("" if hint.enabled else " -disabled"))
        self.hint = hint
        self.action = hint.action
        if hint.tooltip:
            self.tooltip = hint.tooltip

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        display, description = self.hint.display, self.hint.description
        if not description:
            text = Text(display, key_style)
        elif self.has_class("-command-palette"):  # compact: ``^p palette``
            text = Text.assemble((display, key_style), (f" {description}", description_style))
        else:
            text = Text.assemble(
                (f" {display} ", key_style), (f"{description} ", description_style)
            )
        text.stylize_before(self.rich_style)
        return text

    def on_mouse_down(self) -> None:
        if self.hint.enabled:
            self.app.simulate_key(self.hint.key)
        else:
            self.app.bell()


class FittingFooter(Widget):
    """The focused view's keys (one per action), the app's Help and Quit, and the
    palette key on the right; the view's keys are dropped from the right (they stay
    in ``?`` help) until Help and Quit fit."""

    ALLOW_SELECT = False
    #: what the keys were last made from: (keys, palette key, room)
    _composed: tuple[object, ...] = ()
    DEFAULT_CSS = """
    FittingFooter {
        layout: horizontal;
        color: $footer-foreground;
        background: $footer-background;
        dock: bottom;
        height: 1;
        overflow: hidden hidden;
    }
    """

    def hints(self) -> tuple[list[Hint], Hint | None]:
        """The keys to show, in order, and the palette's key (``None``: no palette)."""
        bindings = self.screen.active_bindings
        by_action: dict[str, Hint] = {}
        for _node, binding, enabled, tooltip in bindings.values():
            if binding.show and binding.action not in by_action:
                by_action[binding.action] = self._hint(binding, enabled, tooltip)
        palette = None
        palette_key = self.app.COMMAND_PALETTE_BINDING
        if self.app.ENABLE_COMMAND_PALETTE and palette_key in bindings:
            _node, binding, enabled, tooltip = bindings[palette_key]
            palette = self._hint(binding, enabled, binding.tooltip or binding.description)
        return list(by_action.values()), palette

    def _hint(self, binding: Binding, enabled: bool, tooltip: str) -> Hint:
        return Hint(
            binding.key,
            self.app.get_key_display(binding),
            binding.description,
            binding.action,
            enabled,
            tooltip,
        )

    def compose(self) -> ComposeResult:
        keys, palette = self.hints()
        room = (self.size.width or self.app.size.width) - 1
        self._composed = (keys, palette, room)
        # the palette's key is drawn compact (2 cells less) after a 1-cell border
        used = sum(k.width for k in keys) + (palette.width - 1 if palette else 0)
        droppable = [k for k in keys if k.action not in KEPT_ACTIONS]
        while used > room and droppable:
            key = droppable.pop()
            keys.remove(key)
            used -= key.width
        yield from (FooterKey(k) for k in keys)
        if palette is not None:
            yield FooterKey(palette, classes="-command-palette")

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen and self.app.app_focus:
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        # A view switch signals several times (focus, each binding refreshed); the
        # keys are made again only when what they show changed.
        keys, palette = self.hints()
        room = (self.size.width or self.app.size.width) - 1
        if (keys, palette, room) != self._composed:
            await self.recompose()

    def on_resize(self) -> None:
        self.refresh(recompose=True)
