"""Command palette provider: switch view, profiling (start/stop, check a flag
or choose a metric in the pending configuration), jump to a device, switch theme.

It reaches into the app (as Textual's own palette examples do); the views never do.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

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


class AclmonCommands(Provider):
    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app: AclmonApp = self.app  # type: ignore[assignment]
        out: list[tuple[str, Callable[[], object], str]] = []
        for view, title in VIEW_TITLES.items():
            out.append((f"View: {title}", partial(app.action_show_view, view), "switch view"))
        profiling = app.profiling_view
        if profiling.check_action("start_stop", ()):
            out.append(
                ("Profiling: start / stop", app.action_toggle_profiling, "start or stop profiling")
            )
        if not profiling.readonly:

            def edit(change: Callable[[], None]) -> None:
                change()
                app.action_show_view("profiling")

            wanted = profiling.wanted
            for name, value in PROF_FLAGS:
                on = "checked" if wanted.flags & value else "unchecked"
                out.append(
                    (
                        f"Profiling: toggle {name}",
                        partial(edit, partial(profiling.toggle_flag, value)),
                        f"now {on}; Enter in the view applies",
                    )
                )
            for value, (name, _json_name) in AICORE_METRICS.items():
                out.append(
                    (
                        f"Profiling: AI Core metric {name}",
                        partial(edit, partial(profiling.set_metric, value)),
                        "Enter in the view applies",
                    )
                )
        dumps = app.dumps_view

        def on_dumps(action: Callable[[], None]) -> None:
            app.action_show_view("dumps")
            action()

        selected = dumps.selected_dump()
        if selected is not None:
            actions = [
                ("export its tensors as .npy", dumps.action_export, "as aclmon convert names them"),
                ("copy its path", dumps.action_copy_path, "to the clipboard"),
                ("copy its operator name", dumps.action_copy_op, "to the clipboard"),
            ]
            if selected.kind == "overflow":
                actions += [
                    ("jump to the overflowing operator", dumps.action_to_operator, "its dump"),
                    ("first overflow of this step", dumps.action_first_overflow, "same step"),
                ]
            for name, action, help_text in actions:
                out.append(
                    (f"Dump: {name}", partial(on_dumps, action), f"selected file; {help_text}")
                )
        out.append(("Dump: back", partial(on_dumps, dumps.action_back), "before the last jump"))
        for source, title in zip(SOURCES, SOURCE_TITLES, strict=True):
            out.append(
                (f"Logs: {title}", partial(app.show_log_source, source), "the Logs view, filtered")
            )
        for device_id in app.store.device_ids():
            out.append(
                (
                    f"Device {device_id}: jump to it",
                    partial(app.jump_to_device, device_id),
                    "devices view",
                )
            )
        for theme in sorted(app.available_themes):
            out.append((f"Theme: {theme}", partial(setattr, app, "theme", theme), "switch theme"))
        out.append(("Help: show every key", app.action_help, "help screen"))
        return out

    async def discover(self) -> Hits:
        for name, callback, help_text in self._commands():
            if name.startswith(("View:", "Profiling: start", "Device", "Help")):
                yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, text=name, help=help_text)
