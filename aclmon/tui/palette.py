"""Command palette provider: switch view, each view's own entries (profiling
start/stop and the pending configuration, dump actions, log sources, device
jumps), switch theme, help.

It reaches into the app (as Textual's own palette examples do); the views never
do. Every entry of a view shows that view first, then runs.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, ClassVar

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from aclmon.tui.inert import inert_line, literal_highlight
from aclmon.tui.views import Command

if TYPE_CHECKING:
    from aclmon.tui.app import AclmonApp


def _in_view(app: AclmonApp, view: str, command: Command) -> Command:
    """The view's entry, run after its view is shown."""

    def run() -> None:
        app.action_show_view(view)
        command.run()

    return command._replace(run=run)


class CommandsProvider(Provider):
    """A palette of :class:`Command` entries: those whose names start with one of
    ``DISCOVERED`` are offered before anything is typed; typing searches them all."""

    DISCOVERED: ClassVar[tuple[str, ...]] = ()

    def _commands(self) -> list[Command]:
        raise NotImplementedError

    async def discover(self) -> Hits:
        for command in self._commands():
            if command.name.startswith(self.DISCOVERED):
                yield DiscoveryHit(
                    Content(inert_line(command.name)),
                    command.run,
                    text=command.name,
                    help=escape(inert_line(command.shown_help)),
                )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.name)
            if score > 0:
                yield Hit(
                    score,
                    literal_highlight(matcher, command.name),
                    command.run,
                    text=command.name,
                    help=escape(inert_line(command.shown_help)),
                )


class AclmonCommands(CommandsProvider):
    DISCOVERED = ("View:", "Profiling: start", "Device", "Help")

    def _commands(self) -> list[Command]:
        app: AclmonApp = self.app  # type: ignore[assignment]  # the provider serves only AclmonApp
        out = [
            Command(
                f"View: {entry.title}",
                partial(app.action_show_view, entry.id),
                f"switch to the {entry.short_title} view",
            )
            for entry in app.view_entries
        ]
        for entry in app.view_entries:
            view = app.views[entry.id]
            out += [_in_view(app, entry.id, c) for c in view.palette_commands(app.store)]
        for theme in sorted(app.available_themes):
            out.append(
                Command(
                    f"Theme: {theme}",
                    partial(setattr, app, "theme", theme),
                    "switch to the theme (Ctrl+T toggles aclmon-dark and aclmon-light)",
                )
            )
        out.append(
            Command("Help: show every key", app.action_help, "the help screen: every key, its id")
        )
        return out
