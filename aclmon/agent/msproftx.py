"""Hooks on the job's msproftx calls (``acl.prof`` stamps, marks, push/pop and ranges).

The runtime gives a stamp handle a message (``set_stamp_trace_message``) and
then marks it or opens a range with it; the agent remembers the messages and
the open ranges (bounded) and publishes :class:`~aclmon.events.TxMark` for a
mark and :class:`~aclmon.events.TxRange` when a range ends, each with the
threads that made it (a range_start/range_stop range may end on another
thread than the one that opened it). Each function here
is the ``after(args, kwargs, result)`` observer of one call, wrapped by
``aclmon.agent.wrappers.observed``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.agent.wrappers import arg, ok
from aclmon.events import TxMark, TxRange

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

#: stamp messages and open ranges remembered at most
MAX_REMEMBERED = 4096
#: push ranges open at once on one thread, at most
MAX_PUSH_DEPTH = 256

#: the thread id plog prints and the runtime reports (not Python's own ident)
_get_ident = threading.get_native_id
_time_ns = time.time_ns


class TxHooks:
    """The msproftx observers and what they remember between calls."""

    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        #: prof stamp handle -> message
        self.messages: dict[int, str] = {}
        #: thread id -> open push ranges (message, start ns)
        self.pushed: dict[int, list[tuple[str, int]]] = {}
        #: range id -> (message, start ns, thread that opened it)
        self.ranges: dict[int, tuple[str, int, int]] = {}

    def observers(self) -> dict[str, Callable[[tuple[Any, ...], dict[str, Any], Any], None]]:
        """qualified ``acl`` name -> its ``after`` observer."""
        return {
            "prof.set_stamp_trace_message": self.set_stamp_trace_message,
            "prof.mark": self.mark,
            "prof.mark_ex": self.mark_ex,
            "prof.destroy_stamp": self.destroy_stamp,
            "prof.push": self.push,
            "prof.pop": self.pop,
            "prof.range_start": self.range_start,
            "prof.range_stop": self.range_stop,
        }

    def set_stamp_trace_message(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        if not ok(result) or len(self.messages) >= MAX_REMEMBERED:
            return
        stamp = arg(args, kwargs, 0, "stamp")
        message = str(arg(args, kwargs, 1, "msg"))
        length = arg(args, kwargs, 2, "msg_len")
        if isinstance(length, int):  # the runtime keeps msg_len bytes
            message = message.encode()[: max(length, 0)].decode("utf-8", "replace")
        self.messages[stamp] = message

    def mark(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if ok(result):
            message = self.messages.get(arg(args, kwargs, 0, "stamp"), "")
            self.ctx.emit(TxMark, message, _get_ident())

    def mark_ex(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if ok(result):
            self.ctx.emit(TxMark, str(arg(args, kwargs, 0, "msg")), _get_ident())

    def destroy_stamp(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        # destroy_stamp returns None: the stamp is gone whatever it says
        self.messages.pop(arg(args, kwargs, 0, "stamp"), None)

    def push(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if not ok(result):
            return
        stack = self.pushed.setdefault(_get_ident(), [])
        if len(stack) < MAX_PUSH_DEPTH:
            message = self.messages.get(arg(args, kwargs, 0, "stamp"), "")
            stack.append((message, _time_ns()))

    def pop(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        thread = _get_ident()
        stack = self.pushed.get(thread)
        if ok(result) and stack:
            message, start_ns = stack.pop()
            self.ctx.emit(TxRange, message, start_ns, _time_ns(), thread, thread)

    def range_start(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        range_id, ret = result
        if ret == ACL_SUCCESS and len(self.ranges) < MAX_REMEMBERED:
            message = self.messages.get(arg(args, kwargs, 0, "stamp"), "")
            self.ranges[range_id] = (message, _time_ns(), _get_ident())

    def range_stop(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        opened = self.ranges.pop(arg(args, kwargs, 0, "range_id"), None)
        if opened is not None and ok(result):
            message, start_ns, thread = opened
            self.ctx.emit(TxRange, message, start_ns, _time_ns(), thread, _get_ident())
