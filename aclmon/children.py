"""Every process aclmon starts ends when the aclmon that started it does.

A child started with ``preexec_fn=dies_with_me()`` gets SIGTERM from the kernel
the moment its parent dies, however it dies (``kill -9``, a closed terminal that
ended it): Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG)``), set in the
child between fork and exec. Every child aclmon starts (demo jobs, ranks, the
relay, nats-server) handles SIGTERM by ending cleanly; nats-server would take
SIGHUP as "reload", so SIGTERM it is. Children also get a session of their own
(``start_new_session``), so a terminal's SIGHUP and Ctrl+C reach only the viewer,
which then stops them itself.

The signal is tied to the *thread* that started the child (the kernel sends it
when that thread ends): start children from the main thread. Elsewhere than
Linux there is no such signal and the parent's own cleanup is all there is.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

#: prctl option number (linux/prctl.h)
PR_SET_PDEATHSIG = 1


def dies_with_me() -> Callable[[], None] | None:
    """The ``preexec_fn`` that makes a child die with this process (None off Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()

    def die_with_parent() -> None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the parent died between fork and prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return die_with_parent
