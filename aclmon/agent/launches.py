"""Where the job launched each piece of asynchronous work: one bounded ring per stream.

A failure on the device surfaces at a later synchronize, far from the line that
launched the failing work; ``ASCEND_LAUNCH_BLOCKING=1`` finds that line by
making every launch synchronous, at the cost of the whole job. Instead, each
launch hook (``mdl.execute_async`` in :mod:`aclmon.agent.hot`, and
``rt.memcpy_async``, ``rt.memset_async``, ``rt.launch_callback`` and the
``acl.op`` launches through :meth:`LaunchSites.compose`) appends one tuple to
the ring of the launch's stream: the time, the call, and the caller's code
object and line (``sys._getframe``: two attribute reads, no string made, no
frame kept alive, so nothing of the job's stays referenced). With
``launch_stacks`` the whole stack is kept the same way, as (code, line) pairs.

When an exception arrives, :meth:`LaunchSites.failing_launch` names the launch
whose task failed: on the exception's stream (by the stream id the runtime
reports, mapped to the job's stream handles), the newest launch made before the
exception was captured. The ring keeps the last ``depth`` launches per stream; the strings
are made only then, on the runtime's callback thread.

Rule and limits (docs/triage.md): a device reports a stream's tasks in launch
order, and a job that synchronizes each step has one launch in flight, so the
newest launch before the failure is the failing one. With several launches in
flight on one stream the failing one may be older; ``recent`` lists them all.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aclmon.agent.wrappers import Wrapper

if TYPE_CHECKING:
    pass

#: launches remembered per stream, and streams with a ring at most
DEFAULT_DEPTH = 16
MAX_STREAMS = 4096
#: frames kept per launch with launch_stacks
MAX_STACK = 48
#: launches around the failing one shown with it
AROUND = 2

#: the ordinary launch calls: qualified name -> (index, keyword) of the stream argument
LAUNCH_CALLS: dict[str, tuple[int, str]] = {
    "rt.memcpy_async": (5, "stream"),
    "rt.memset_async": (4, "stream"),
    "rt.launch_callback": (3, "stream"),
    "op.execute": (6, "stream"),
    "op.execute_v2": (6, "stream"),
    "op.compile_and_execute": (9, "stream"),
    "op.execute_with_handle": (3, "stream"),
    "op.cast": (5, "stream"),
}

_getframe = sys._getframe
_perf_ns = time.perf_counter_ns

Launch = tuple[Any, ...]  # (perf_ns, api, code, line[, stack])


def site_text(code: Any, line: int, cwd: str = "") -> str:
    """``path/to/file.py:LINE function``: the path relative to ``cwd`` when under it."""
    path = str(getattr(code, "co_filename", "?"))
    if cwd and path.startswith(cwd + os.sep):
        path = path[len(cwd) + 1 :]
    return f"{path}:{line} {getattr(code, 'co_name', '?')}"


def stack_of(frame: Any) -> tuple[tuple[Any, int], ...]:
    """(code, line) of ``frame`` and its callers, innermost first, at most MAX_STACK."""
    out: list[tuple[Any, int]] = []
    while frame is not None and len(out) < MAX_STACK:
        out.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    return tuple(out)


class LaunchSites:
    """The rings, and the naming of the failing launch; see the module docstring.

    ``rings`` is a plain dict the launch hooks read without a lock (a get, and on a
    new stream one setdefault: atomic under the GIL); each ring is a bounded deque.
    """

    def __init__(self, depth: int = DEFAULT_DEPTH, *, stacks: bool = False) -> None:
        self.depth = depth
        self.stacks = stacks
        self.rings: dict[Any, collections.deque[Launch]] = {}
        self._lock = threading.Lock()
        self.cwd = os.getcwd()

    def new_ring(self, stream: Any) -> collections.deque[Launch]:
        """The ring of ``stream``, made on its first launch (a launch hook's slow path)."""
        if len(self.rings) >= MAX_STREAMS:
            with self._lock:
                if len(self.rings) >= MAX_STREAMS:
                    self.rings.clear()  # a job that makes streams without end: start over
        return self.rings.setdefault(stream, collections.deque(maxlen=self.depth))

    def forget(self, stream: Any) -> None:
        """The stream is destroyed: its handle may be reused by the next one."""
        self.rings.pop(stream, None)

    # ------------------------------------------------------------ ordinary launch hooks
    def wrapper(
        self,
        name: str,
        original: Callable[..., Any],
        fail: Callable[[str, BaseException], None],
        index: int,
        keyword: str,
    ) -> Wrapper:
        """A launch hook around ``original`` (itself maybe another hook of the agent):
        note the launch on the stream its argument ``index`` (or ``keyword``) names,
        then make the call."""
        rings_get = self.rings.get
        new_ring = self.new_ring
        stacks = self.stacks
        where = f"hook {name} (launch site)"
        getframe = _getframe
        perf_ns = _perf_ns

        def launch(*args: Any, **kwargs: Any) -> Any:
            try:
                frame = getframe(1)
                stream = args[index] if len(args) > index else kwargs.get(keyword, 0)
                ring = rings_get(stream)
                if ring is None:
                    ring = new_ring(stream)
                if stacks:
                    ring.append((perf_ns(), name, frame.f_code, frame.f_lineno, stack_of(frame)))
                else:
                    ring.append((perf_ns(), name, frame.f_code, frame.f_lineno))
            except Exception as exc:
                fail(where, exc)
            return original(*args, **kwargs)

        return launch

    def compose(
        self,
        table: dict[str, Callable[[str, Callable[..., Any]], Wrapper]],
        fail: Callable[[str, BaseException], None],
    ) -> dict[str, Callable[[str, Callable[..., Any]], Wrapper]]:
        """``table`` (qualified name -> wrapper maker) with every launch call noting its
        site: around the other hook of that call when there is one."""
        composed = dict(table)
        for name in LAUNCH_CALLS:
            inner = table.get(name)

            def make(
                qualified: str,
                original: Callable[..., Any],
                inner: Callable[[str, Callable[..., Any]], Wrapper] | None = inner,
            ) -> Wrapper:
                hooked = inner(qualified, original) if inner is not None else original
                return self.wrapper(qualified, hooked, fail, *LAUNCH_CALLS[qualified])

            composed[name] = make
        return composed

    # ------------------------------------------------------------ naming the failing launch
    def failing_launch(
        self, handles: list[Any], captured_perf_ns: int
    ) -> tuple[str, dict[str, Any]]:
        """(``launch_site``, ``launch``) of the failure on the stream with these handles
        (see the module docstring); ("", {}) when no launch is known."""
        launches: list[Launch] = []
        for handle in handles:
            ring = self.rings.get(handle)
            if ring is not None:
                launches.extend(list(ring))
        launches.sort(key=lambda launch: launch[0])
        before = [i for i, launch in enumerate(launches) if launch[0] <= captured_perf_ns]
        if not before:
            return "", {}
        chosen = before[-1]
        low, high = max(0, chosen - AROUND), min(len(launches), chosen + AROUND + 1)
        cwd = self.cwd
        recent = [
            {
                "api": launch[1],
                "site": site_text(launch[2], launch[3], cwd),
                "ago_ns": max(0, captured_perf_ns - launch[0]),
            }
            for launch in launches[low:high]
        ]
        failing = launches[chosen]
        detail: dict[str, Any] = {"api": failing[1], "recent": recent, "index": chosen - low}
        if len(failing) > 4 and isinstance(failing[4], tuple):
            detail["stack"] = [site_text(code, line, cwd) for code, line in failing[4]]
        return site_text(failing[2], failing[3], cwd), detail
