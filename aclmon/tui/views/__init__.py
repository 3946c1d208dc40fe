"""The single-agent views and :data:`VIEWS`, the one table of them.

Each view draws a store handed to it and owns its own state (reactives); it
posts messages up and never imports the app. Everything that lists views
derives from :data:`VIEWS`: the app's panes and number keys, the tab bar and
its counts (:meth:`View.tab_count`), the palette's "View:" entries and each
view's own (:meth:`View.palette_commands`), the help screen's sections (each
view's own ``BINDINGS``) and the key table in docs/usage.md. A new view is a
module here and one row below. A view that only makes sense with something the
viewer was given (Compare: a golden run) is marked so, comes last, and the app
shows the views :func:`shown_views` picks: without it, no tab, number key,
palette entry or help section of it.
"""

from __future__ import annotations

from typing import NamedTuple

from aclmon.tui.views.base import Command, View
from aclmon.tui.views.compare import CompareView
from aclmon.tui.views.devices import DevicesView
from aclmon.tui.views.dumps import DumpsView
from aclmon.tui.views.exceptions import ExceptionsView
from aclmon.tui.views.host import HostView
from aclmon.tui.views.logs import LogsView
from aclmon.tui.views.profiling import ProfilingView
from aclmon.tui.views.timeline import TimelineView


class ViewEntry(NamedTuple):
    """One view: its id (widget id, ``view.<id>`` binding, ``start_view``), its
    title (tab and palette) and its class."""

    id: str
    title: str
    cls: type[View]
    #: shown only when the viewer compares against a golden run (``--golden``)
    golden_only: bool = False

    @property
    def short_title(self) -> str:
        """The title without its " / …" part: "Dumps" for "Dumps / overflow"."""
        return self.title.split(" /")[0]

    @property
    def help_title(self) -> str:
        """Its section on the help screen and in the key table."""
        return f"{self.short_title} view"


#: the views in tab order (number keys 1…)
VIEWS: tuple[ViewEntry, ...] = (
    ViewEntry("devices", "Devices", DevicesView),
    ViewEntry("exceptions", "Exceptions", ExceptionsView),
    ViewEntry("profiling", "Profiling", ProfilingView),
    ViewEntry("dumps", "Dumps / overflow", DumpsView),
    ViewEntry("logs", "Logs", LogsView),
    ViewEntry("timeline", "Timeline", TimelineView),
    ViewEntry("npus", "Host", HostView),
    ViewEntry("compare", "Compare", CompareView, golden_only=True),
)
VIEW_IDS: tuple[str, ...] = tuple(entry.id for entry in VIEWS)


def shown_views(*, golden: bool) -> tuple[ViewEntry, ...]:
    """The views a viewer shows, in tab order: the ``golden_only`` ones only with a
    golden run. They are last in :data:`VIEWS`, so the other views' number keys
    are the same in every session."""
    return tuple(entry for entry in VIEWS if golden or not entry.golden_only)


__all__ = [
    "VIEWS",
    "VIEW_IDS",
    "Command",
    "CompareView",
    "DevicesView",
    "DumpsView",
    "ExceptionsView",
    "HostView",
    "LogsView",
    "ProfilingView",
    "TimelineView",
    "View",
    "ViewEntry",
    "shown_views",
]
