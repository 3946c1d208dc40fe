"""Command palette provider: switch view, toggle a profiling flag, jump to a
device, switch theme."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from aclmon.acl_constants import AICORE_METRICS, PROF_FLAGS

if TYPE_CHECKING:
    from aclmon.tui.app import AclmonApp

VIEW_TITLES = {
    "devices": "Devices",
    "exceptions": "Exceptions",
    "profiling": "Profiling",
    "dumps": "Dumps / overflow",
}


class AclmonCommands(Provider):
    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app: AclmonApp = self.app  # type: ignore[assignment]
        out: list[tuple[str, Callable[[], object], str]] = []
        for view, title in VIEW_TITLES.items():
            out.append((f"View: {title}", partial(app.action_show_view, view), "switch view"))
        out.append(
            ("Profiling: start / stop", app.action_toggle_profiling, "start or stop profiling")
        )
        for name, value in PROF_FLAGS:
            on = "on" if app.prof_flags & value else "off"
            out.append(
                (f"Profiling: toggle {name}", partial(app.action_toggle_flag, value), f"now {on}")
            )
        for value, (name, _json_name) in AICORE_METRICS.items():
            out.append(
                (f"Profiling: AI Core metric {name}", partial(app.set_metric, value), "metric")
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
