"""The viewer's commands to the agent (the Profiling view's configuration,
start and stop): sent from one background thread, in the order they were
given; each reply comes back to the UI thread, into the store (out of band),
and into the Profiling view's note line, or a notice when another view is shown.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from aclmon import events as ev
from aclmon.errors import AclmonError
from aclmon.tui.views.profiling import ProfilingConfig, reply_text

if TYPE_CHECKING:
    from aclmon.tui.app import AclmonApp

COMMAND_TIMEOUT = 3.0


class AgentCommands:
    """Sends ``app``'s commands to its source's agent; see the module docstring."""

    def __init__(self, app: AclmonApp) -> None:
        self.app = app
        self._numbers = itertools.count(1)
        self._last = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aclmon-commands")

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)

    def send(
        self, cls: type, *fields: Any, then: Callable[[ev.Reply], None] | None = None
    ) -> int | None:
        """Send a command (fields after ``request_id``) to the agent in the
        background; the reply lands in the store (and goes to ``then``). Returns
        the app's own number for it, or None when read-only (nothing is sent)."""
        view = self.app.profiling_view
        if self.app.source.readonly:
            view.note = "read-only: nothing is sent"
            return None
        number = self._last = next(self._numbers)
        view.note = f"{ev.KIND_NAMES[cls]} sent, waiting for the agent…"
        self._thread.submit(self._send_blocking, cls, number, fields, then)
        return number

    def send_config(self, config: ProfilingConfig) -> None:
        view = self.app.profiling_view

        def applied(reply: ev.Reply) -> None:
            # Accepted: the agent's state now holds it (it published it before
            # replying); refused: the edit stays pending, beside the refusal.
            if reply.code == 0 and view.pending == config:
                view.pending = None

        self.send(
            ev.SetProfilingConfig, config.flags, config.metric, config.devices, 0, then=applied
        )

    def _send_blocking(self, cls: type, number: int, fields: tuple[Any, ...], then: Any) -> None:
        name, app = ev.KIND_NAMES[cls], self.app
        try:
            reply = app.source.send_command(cls, *fields, timeout=COMMAND_TIMEOUT)
        except AclmonError as exc:
            app._call_ui(self._failed, number, f"{name}: {exc}")
        except Exception as exc:  # a broken connection must not kill the command thread
            app._call_ui(self._failed, number, f"{name}: {type(exc).__name__}: {exc}")
        else:
            app._call_ui(self._replied, number, reply, then)

    def _replied(self, number: int, reply: ev.Reply, then: Any) -> None:
        app = self.app
        # The same reply also arrives in the event stream, in sequence; this copy
        # is applied out of band, so it must not take part in gap counting.
        app.store.apply(reply._replace(seq=0))
        if number == self._last:
            app.profiling_view.note = ""
        if then is not None:
            then(reply)
        if reply.code != 0 and app.current_view != "profiling":
            # Said once: in the Profiling view's reply line when it is visible, else here.
            app.notify(reply_text(reply), severity="error", timeout=6)
        app.refresh_view(force=True)

    def _failed(self, number: int, message: str) -> None:
        self.app.profiling_view.note = message
        self.app.refresh_view(force=True)
