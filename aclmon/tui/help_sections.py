"""The help screen's sections for a job's screens: the app's own keys, the
lists', the filter's, each view's (from its ``BINDINGS``) and the details'.
Every binding id the help names is one a keymap may remap."""

from __future__ import annotations

from collections.abc import Sequence

from textual.binding import BindingType

from aclmon.tui.keys import binding_rows, hidden_view_binding_ids
from aclmon.tui.screens import ExceptionDetail, HelpScreen, LogLineDetail, ScrollingModal
from aclmon.tui.slicedetail import SliceDetail
from aclmon.tui.views import ViewEntry
from aclmon.tui.views.filterbar import FilterBar
from aclmon.tui.views.listview import FilteredView, ListView
from aclmon.tui.vlist import VirtualList

#: a section's title and its rows: (keys, what they do, binding id or "")
HelpSection = tuple[str, list[tuple[str, str, str]]]


def job_help_sections(
    app_bindings: list[BindingType], views: Sequence[ViewEntry], keymap: dict[str, str]
) -> list[HelpSection]:
    """The sections, for an app with ``app_bindings`` showing ``views``."""
    hidden = hidden_view_binding_ids(views)
    everywhere = [row for row in binding_rows(app_bindings, keymap) if row[2] not in hidden]
    return [
        ("Everywhere", [*everywhere, ("ctrl+p", "Command palette", ""), ("ctrl+q", "Quit", "")]),
        ("Lists (exceptions, dumps, logs)", binding_rows(list(VirtualList.BINDINGS), keymap)),
        (
            "Filter and sort (devices: no sort)",
            binding_rows([*FilteredView.BINDINGS, *ListView.BINDINGS], keymap),
        ),
        ("Filter line (after /)", binding_rows(list(FilterBar.BINDINGS), keymap)),
        *((e.help_title, binding_rows(list(e.cls.BINDINGS), keymap)) for e in views),
        ("Exception detail", binding_rows(list(ExceptionDetail.BINDINGS), keymap)),
        ("Log line detail", binding_rows(list(LogLineDetail.BINDINGS), keymap)),
        ("Timeline detail", binding_rows(list(SliceDetail.BINDINGS), keymap)),
        ("Help", binding_rows(list(HelpScreen.BINDINGS), keymap)),
        ("Detail and help (scrolling)", binding_rows(list(ScrollingModal.BINDINGS), keymap)),
    ]
