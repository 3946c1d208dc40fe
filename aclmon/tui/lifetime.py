"""Run a viewer so that it always ends: on a quit key, a signal, or a dead terminal.

A closed terminal (tmux kill-session, an ssh drop) sends SIGHUP then SIGCONT,
and every later write to it fails with EIO. Textual's own SIGCONT handler
restarts its output thread on the dead terminal; that thread dies on the first
write, its bounded queue fills, and the app's shutdown then blocks for good
putting into it. So after a hangup SIGCONT is ignored, and whenever the viewer
has decided to leave, a watchdog gives the orderly shutdown a bounded time:
past it (or at a second signal) the caller's ``abandon`` cleanup runs (the demo
stops its job) and the process exits at once.

Hangups are also noticed without a signal (a viewer started under ``nohup``):
a light thread checks the terminal twice a second and treats EIO as a hangup.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

#: how long an orderly shutdown may take once the viewer has decided to leave
SHUTDOWN_GRACE_S = 2.0
#: how long the hard path may spend on the caller's cleanup before exiting anyway
ABANDON_BOUND_S = 2.0
_TERMINAL_CHECK_S = 0.5
#: leave the alternate screen, show the cursor, stop mouse and paste reporting,
#: pop the kitty keyboard mode: what Textual writes on an orderly exit
_RESET_TERMINAL = (
    b"\x1b[<u\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[?1004l"
    b"\x1b[?7h\x1b[?1049l\x1b[?25h"
)
_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _terminal_fd() -> int | None:
    stream = sys.__stdin__
    try:
        fd = stream.fileno() if stream is not None else -1
    except (OSError, ValueError):
        return None
    return fd if fd >= 0 and os.isatty(fd) else None


def terminal_is_gone(fd: int) -> bool:
    """True once the terminal on ``fd`` has been hung up (EIO on every request)."""
    import termios

    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return exc.args[0] in (errno.EIO, errno.ENXIO, errno.EBADF)
    return False


class _Lifetime:
    def __init__(self, app: Any, abandon: Callable[[], None] | None) -> None:
        self.app = app
        self.abandon = abandon
        self.finished = threading.Event()
        self.leaving = threading.Event()
        self.exit_code = 0
        self.terminal_fd = _terminal_fd()
        self.saved_attrs: Any = None
        if self.terminal_fd is not None:
            import termios

            with contextlib.suppress(termios.error):
                self.saved_attrs = termios.tcgetattr(self.terminal_fd)
        self.hung_up = False

    # ------------------------------------------------------------ deciding to leave
    def on_signal(self, signum: int, frame: object) -> None:
        if signum == signal.SIGHUP:
            self._hung_up()
        if self.leaving.is_set():
            # A second signal: the orderly shutdown is not getting anywhere.
            self.hard_exit(128 + signum)
        self.leave(128 + signum)

    def _hung_up(self) -> None:
        self.hung_up = True
        # Textual would restart its output on the dead terminal at the SIGCONT
        # that follows: the way it hangs (see the module docstring).
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGCONT, signal.SIG_DFL)

    def leave(self, code: int) -> None:
        """Ask the app to exit (on the main thread) and start the watchdog."""
        if self.leaving.is_set():
            return
        self.exit_code = code
        self.leaving.set()
        threading.Thread(target=self._watchdog, name="aclmon-exit-watchdog", daemon=True).start()
        self.app.exit(code)

    def watch_terminal(self) -> None:
        fd = self.terminal_fd
        if fd is None:
            return
        while not self.finished.wait(_TERMINAL_CHECK_S):
            if terminal_is_gone(fd):
                # Handled on the main thread like the hangup signal it stands for.
                os.kill(os.getpid(), signal.SIGHUP)
                return

    # ------------------------------------------------------------ the hard path
    def _watchdog(self) -> None:
        if not self.finished.wait(SHUTDOWN_GRACE_S):
            self.hard_exit(self.exit_code)

    def hard_exit(self, code: int) -> None:
        """Run the caller's cleanup (bounded), put the terminal back if it is
        still there, and end the process now."""
        cleanup = threading.Thread(target=self._abandon_and_reset, daemon=True)
        cleanup.start()
        cleanup.join(ABANDON_BOUND_S)
        os._exit(code)

    def _abandon_and_reset(self) -> None:
        if self.abandon is not None:
            with contextlib.suppress(Exception):
                self.abandon()
        fd = self.terminal_fd
        if fd is None or self.hung_up:
            return
        with contextlib.suppress(OSError):
            os.write(fd, _RESET_TERMINAL)
        if self.saved_attrs is not None:
            import termios

            with contextlib.suppress(termios.error):
                termios.tcsetattr(fd, termios.TCSANOW, self.saved_attrs)


def run_app(app: Any, *, abandon: Callable[[], None] | None = None) -> int:
    """``app.run()``, made to end within a bounded time once the viewer leaves.

    SIGTERM, SIGHUP and SIGINT leave like a quit key (exit code 128 + signal);
    ``abandon`` runs only on the hard path, where the code after ``run_app``
    would never run: it must stop whatever the viewer started (it runs on
    another thread, bounded by ``ABANDON_BOUND_S``).
    """
    result, status = run_app_result(app, abandon=abandon)
    return status if status is not None else int(result or 0)


def run_app_result(
    app: Any, *, abandon: Callable[[], None] | None = None
) -> tuple[Any, int | None]:
    """:func:`run_app` for an app that returns a value (the fleet screen: the
    rank to open): ``(its result, None)``, or ``(None, exit status)`` when the
    viewer must end (a signal, a dead terminal, a crash)."""
    lifetime = _Lifetime(app, abandon)
    previous = {sig: signal.signal(sig, lifetime.on_signal) for sig in _SIGNALS}
    watcher = threading.Thread(
        target=lifetime.watch_terminal, name="aclmon-terminal-watch", daemon=True
    )
    watcher.start()
    try:
        result = app.run()
    finally:
        lifetime.finished.set()
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, handler)
    if lifetime.leaving.is_set():
        return None, lifetime.exit_code
    if result is None and getattr(app, "return_code", None):
        # A crash (an exception in the app) ends run() with no result: its
        # return code says so, and the command must not exit 0.
        return None, int(app.return_code)
    return result, None
