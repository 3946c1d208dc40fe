"""Command palette provider: switch view, profiling (start/stop, check a flag
or choose a metric in the pending configuration), jump to a device, switch theme.

It reaches into the app (as Textual's own palette examples do); the views never do.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

from textual.command import DiscoveryHit, Hit, Hits, Provider

from aclmon.acl_constants import AICORE_METRICS, PROF_FLAGS
from aclmon.tui.views.logs import SOURCES

if TYPE_CHECKING:
    from aclmon.tui.app import AclmonApp

SOURCE_TITLES = (
    "every source",
    "the job's stdout/stderr",
    "the job's CANN log",
    "the agent's own lines",
)
VIEW_TITLES = {
    "devices": "Devices",
    "exceptions": "Exceptions",
    "profiling": "Profiling",
    "dumps": "Dumps / overflow",
    "logs": "Logs",
}


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


class AclmonCommands(Provider):
    def _commands(self) -> list[Command]:
        app: AclmonApp = self.app  # type: ignore[assignment]
        out: list[Command] = []
        for view, title in VIEW_TITLES.items():
            out.append(
                Command(
                    f"View: {title}",
                    partial(app.action_show_view, view),
                    f"switch to the {title.split(' /')[0]} view",
                )
            )
        profiling = app.profiling_view
        if profiling.check_action("start_stop", ()):
            out.append(
                Command(
                    "Profiling: start / stop",
                    app.action_toggle_profiling,
                    "start or stop profiling in the job",
                )
            )
        if not profiling.readonly:

            def edit(change: Callable[[], None]) -> None:
                change()
                app.action_show_view("profiling")

            wanted = profiling.wanted
            for name, value in PROF_FLAGS:
                out.append(
                    Command(
                        f"Profiling: toggle {name}",
                        partial(edit, partial(profiling.toggle_flag, value)),
                        "check or uncheck the flag in the Profiling view (Enter there applies)",
                        "now checked" if wanted.flags & value else "now unchecked",
                    )
                )
            for value, (name, _json_name) in AICORE_METRICS.items():
                out.append(
                    Command(
                        f"Profiling: AI Core metric {name}",
                        partial(edit, partial(profiling.set_metric, value)),
                        "choose the metric in the Profiling view (Enter there applies)",
                    )
                )
        dumps = app.dumps_view

        def on_dumps(action: Callable[[], None]) -> None:
            app.action_show_view("dumps")
            action()

        selected = dumps.selected_dump()
        if selected is not None:
            actions = [
                ("export its tensors as .npy", dumps.action_export,
                 "the selected file's tensors as .npy files, named as aclmon convert names them"),
                ("copy its path", dumps.action_copy_path,
                 "the selected file's path, to the clipboard"),
                ("copy its operator name", dumps.action_copy_op,
                 "the selected file's operator name, to the clipboard"),
            ]  # fmt: skip
            if selected.kind == "overflow":
                actions += [
                    ("jump to the overflowing operator", dumps.action_to_operator,
                     "select the operator dump the selected overflow record points at"),
                    ("first overflow of this step", dumps.action_first_overflow,
                     "select the first overflow record of the selected record's step"),
                ]  # fmt: skip
            for name, action, help_text in actions:
                out.append(Command(f"Dump: {name}", partial(on_dumps, action), help_text))
        out.append(
            Command(
                "Dump: back",
                partial(on_dumps, dumps.action_back),
                "select the file that was selected before the last jump",
            )
        )
        for source, title in zip(SOURCES, SOURCE_TITLES, strict=True):
            out.append(
                Command(
                    f"Logs: {title}",
                    partial(app.show_log_source, source),
                    f"the Logs view showing {title}",
                )
            )
        for device_id in app.store.device_ids():
            out.append(
                Command(
                    f"Device {device_id}: jump to it",
                    partial(app.jump_to_device, device_id),
                    "the Devices view, scrolled to the device's tree",
                )
            )
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

    async def discover(self) -> Hits:
        for command in self._commands():
            if command.name.startswith(("View:", "Profiling: start", "Device", "Help")):
                yield DiscoveryHit(command.name, command.run, help=command.shown_help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            score = matcher.match(command.name)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.name),
                    command.run,
                    text=command.name,
                    help=command.shown_help,
                )
