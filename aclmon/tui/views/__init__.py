"""The single-agent views. Each draws a store handed to it and owns its own
state (reactives); it posts messages up and never imports the app."""

from aclmon.tui.views.base import View
from aclmon.tui.views.devices import DevicesView
from aclmon.tui.views.dumps import DumpsView
from aclmon.tui.views.exceptions import ExceptionsView
from aclmon.tui.views.logs import LogsView
from aclmon.tui.views.profiling import ProfilingView

__all__ = ["DevicesView", "DumpsView", "ExceptionsView", "LogsView", "ProfilingView", "View"]
