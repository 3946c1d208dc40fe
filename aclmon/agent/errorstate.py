"""The runtime's error state of each thread, kept as the job left it.

pyACL keeps, per thread, what the last failed call said and its code:
``acl.get_recent_err_msg()`` obtains the message *and clears it*,
``acl.rt.get_last_error(level)`` returns the code and clears it,
``acl.rt.peek_at_last_error(level)`` returns it and leaves it. The agent
touches that state in two ways, and the job must notice neither:

* when a hooked call fails it asks why, on the failing thread
  (:meth:`ThreadErrors.take_message`): that read clears the message, so the
  agent keeps the text for the thread and hands it to the job at the job's
  next ``get_recent_err_msg()``, exactly once, unless a newer failure replaced
  it in the runtime (the runtime keeps only the latest message);
* the agent makes a few calls of its own on a job's thread (the current
  context and device after ``set_device`` or ``create_stream``, the stream id,
  registering its exception callback after ``acl.init``, stopping its own
  profiling session before the job's) and on the runtime's callback thread
  (reading an exception, before the job's callback runs there). Such a block
  runs inside :meth:`ThreadErrors.kept`: the message waiting before it is
  taken and kept for the job, a message the agent's own calls leave is
  dropped, and if they changed the thread's last error code,
  ``get_last_error``/``peek_at_last_error`` answer the job's code until the
  runtime holds a newer one.

The wrappers of ``get_recent_err_msg``, ``get_last_error`` and
``peek_at_last_error`` (:meth:`ThreadErrors.wrappers`) only give back what the
agent took; they publish nothing. A forked child keeps them (its thread may
have a message the agent took before the fork); the agent a worker starts
there (:mod:`aclmon.agent.workers`) finds them installed, leaves them in place
and keeps its state in theirs, so one reader answers for both. One limit: the state kept is the thread
level's (pyACL's default, ``err_msg_mode`` 0); the agent's own threads fail
calls too (a sample of a device being reset), which the process level
(``err_msg_mode`` 1, ``get_last_error(1)``) would show.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from aclmon.agent.wrappers import Wrapper

#: the thread level of get_last_error / peek_at_last_error (ACL_RT_THREAD_LEVEL)
THREAD_LEVEL = 0


class ThreadErrors:
    """See the module docstring. Built on the *unwrapped* functions of ``acl``."""

    def __init__(self, acl: Any) -> None:
        rt = getattr(acl, "rt", None)
        reader = getattr(acl, "get_recent_err_msg", None)
        self._get_message: Callable[[], Any] | None = reader
        self._peek: Callable[[int], Any] | None = getattr(rt, "peek_at_last_error", None)
        self._local = threading.local()
        installed = getattr(reader, "__aclmon_errors__", None)
        if isinstance(installed, ThreadErrors):
            # A forked worker's agent: the readers of the agent before the fork stay
            # installed (they hold what it took for this thread) and the new agent's
            # hooks leave them be, so it keeps the threads' state in theirs.
            self._get_message = installed._get_message
            self._peek = installed._peek
            self._local = installed._local

    # ------------------------------------------------------------ the agent's side
    def take_message(self) -> str:
        """What the runtime says about the call that just failed on this thread; the
        job gets the same text when it asks next. "" when this runtime has no
        ``get_recent_err_msg``."""
        if self._get_message is None:
            return ""
        text = self._get_message()
        local = self._local
        local.message = text
        local.code = None  # the runtime's code is the job's failure now
        return str(text or "")

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        """Around acl calls the agent makes on a thread of the job (or the runtime's
        callback thread): afterwards the thread's message and code read as before."""
        get_message, peek, local = self._get_message, self._peek, self._local
        before: Any = None
        try:
            if get_message is not None:
                waiting = get_message()
                if waiting:
                    local.message = waiting
            if peek is not None:
                before = peek(THREAD_LEVEL)
        except Exception:  # the block still runs; only the keeping is lost
            get_message = peek = None
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                if get_message is not None:
                    get_message()  # what the agent's own failed calls left: not the job's
                if peek is not None:
                    after = peek(THREAD_LEVEL)
                    if after != before:
                        local.code = (after, before)

    def keeping(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` run inside :meth:`kept`."""

        def kept_call(*args: Any, **kwargs: Any) -> Any:
            with self.kept():
                return function(*args, **kwargs)

        return kept_call

    # ------------------------------------------------------------ the job's side
    def wrappers(self) -> dict[str, Callable[[str, Callable[..., Any]], Wrapper]]:
        """qualified name -> ``make(name, original) -> wrapper`` for the three readers."""
        return {
            "get_recent_err_msg": self._message_reader,
            "rt.get_last_error": lambda name, original: self._code_reader(original, clears=True),
            "rt.peek_at_last_error": lambda name, original: self._code_reader(
                original, clears=False
            ),
        }

    def _message_reader(self, name: str, original: Callable[..., Any]) -> Wrapper:
        local = self._local

        def get_recent_err_msg(*args: Any, **kwargs: Any) -> Any:
            text = original(*args, **kwargs)
            kept = getattr(local, "message", None)
            if kept is None:
                return text
            local.message = None
            # A message in the runtime now is newer than the one the agent took.
            return text if text else kept

        get_recent_err_msg.__aclmon_errors__ = self  # type: ignore[attr-defined]
        return get_recent_err_msg

    def _code_reader(self, original: Callable[..., Any], *, clears: bool) -> Wrapper:
        local = self._local

        def read_last_error(*args: Any, **kwargs: Any) -> Any:
            code = original(*args, **kwargs)
            kept = getattr(local, "code", None)
            if kept is None or not _thread_level(args, kwargs):
                return code
            agent_code, job_code = kept
            if code != agent_code:
                local.code = None  # the job failed a call since: the runtime's is newer
                return code
            if clears:
                local.code = None
            return job_code

        return read_last_error


def _thread_level(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    level = args[0] if args else kwargs.get("level", THREAD_LEVEL)
    return bool(level == THREAD_LEVEL)
