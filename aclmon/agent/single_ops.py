"""Watching single-operator launches (``acl.op``) the way model executions are watched.

Each launch (``execute``, ``execute_v2``, ``execute_with_handle``, ``cast``,
``compile_and_execute``) becomes one :class:`~aclmon.events.OpTiming` with no model
(``model_id`` 0): the operator type is its name, the time is the launch's, as the
job's thread saw it (the device time is the profiler's business). The type is also
learned for the exception capture, which names a failed single operator through
``create_and_get_op_desc`` like any other. A failed launch is a ``CallFailed``
with the runtime's message, as for every hooked call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.agent.wrappers import CallFailed, Wrapper, arg, ret_of
from aclmon.events import OpTiming

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

#: launch call -> how its operator type is found: an argument, or a constant
LAUNCHES: dict[str, str] = {
    "op.execute": "op_type",
    "op.execute_v2": "op_type",
    "op.compile_and_execute": "op_type",
    "op.execute_with_handle": "handle",
    "op.cast": "Cast",
}
#: handles remembered per agent (a job that never destroys them must not grow it)
MAX_HANDLES = 4096


class SingleOps:
    """The wrappers of the launch calls, and what the handles stand for."""

    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        #: operator handle -> its type (from create_handle / create_handle_for_cast)
        self.handles: dict[int, str] = {}
        self._lock = threading.Lock()

    def wrappers(
        self, call_failed: CallFailed
    ) -> dict[str, Callable[[str, Callable[..., Any]], Wrapper]]:
        table: dict[str, Callable[[str, Callable[..., Any]], Wrapper]] = {
            name: self._launch(call_failed) for name in LAUNCHES
        }
        table["op.create_handle"] = self._create_handle(call_failed, None)
        table["op.create_handle_for_cast"] = self._create_handle(call_failed, "Cast")
        table["op.destroy_handle"] = self._destroy_handle
        return table

    # ------------------------------------------------------------ launches
    def _op_type(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        how = LAUNCHES[name]
        if how == "op_type":
            value = arg(args, kwargs, 0, "op_type")
            return value if isinstance(value, str) else ""
        if how == "handle":
            return self.handles.get(arg(args, kwargs, 0, "handle"), "")
        return how

    def _launch(self, call_failed: CallFailed) -> Callable[[str, Callable[..., Any]], Wrapper]:
        ctx = self.ctx
        perf_ns = time.perf_counter_ns

        def make(name: str, original: Callable[..., Any]) -> Wrapper:
            where = f"hook {name}"

            def launch(*args: Any, **kwargs: Any) -> Any:
                start = perf_ns()
                result = original(*args, **kwargs)
                end = perf_ns()
                try:
                    self._launched(name, args, kwargs, result, start, end, call_failed)
                except Exception as exc:
                    ctx.fail(where, exc)
                return result

            return launch

        return make

    def _launched(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: Any,
        start: int,
        end: int,
        call_failed: CallFailed,
    ) -> None:
        ret = ret_of(result)
        if ret != ACL_SUCCESS:
            call_failed(name, args, kwargs, result)
            return
        op_type = self._op_type(name, args, kwargs)
        if not op_type:
            return
        ctx = self.ctx
        ctx.state.learn_op_type(op_type, op_type)
        offset = ctx.wall_offset[0]
        start_us = (start + offset) // 1000
        end_us = (end + offset) // 1000
        ctx.emit(
            OpTiming, 0, op_type, op_type, start_us, end_us, end_us - start_us,
            self._device(),
        )  # fmt: skip

    def _device(self) -> int:
        """The launching thread's device: its current context's, as the agent saw it
        made current (no call), else asked on the job's thread, inside the fence that
        leaves its error state the job's."""
        ctx = self.ctx
        current = ctx.state.current.get(threading.get_native_id())
        if current is not None:
            device = ctx.state.device_of_context(current.context)
            if device >= 0:
                return device
        with ctx.errors.kept():
            device, ret = ctx.original("rt.get_device")()
        return int(device) if ret == ACL_SUCCESS else -1

    # ------------------------------------------------------------ handles
    def _create_handle(
        self, call_failed: CallFailed, fixed: str | None
    ) -> Callable[[str, Callable[..., Any]], Wrapper]:
        ctx = self.ctx

        def make(name: str, original: Callable[..., Any]) -> Wrapper:
            def create_handle(*args: Any, **kwargs: Any) -> Any:
                result = original(*args, **kwargs)
                try:
                    if ret_of(result) != ACL_SUCCESS:
                        call_failed(name, args, kwargs, result)
                    elif type(result) is tuple and result and type(result[0]) is int:
                        op_type = fixed or arg(args, kwargs, 0, "op_type")
                        with self._lock:
                            if len(self.handles) < MAX_HANDLES and isinstance(op_type, str):
                                self.handles[result[0]] = op_type
                except Exception as exc:
                    ctx.fail(f"hook {name}", exc)
                return result

            return create_handle

        return make

    def _destroy_handle(self, name: str, original: Callable[..., Any]) -> Wrapper:
        def destroy_handle(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                with self._lock:
                    self.handles.pop(arg(args, kwargs, 0, "handle"), None)
            except Exception as exc:
                self.ctx.fail(f"hook {name}", exc)
            return result

        return destroy_handle
