"""The job's device memory as the agent sees it: every allocation and free it makes.

Observers of ``acl.rt.malloc`` / ``malloc_cached`` / ``malloc_align32``,
``acl.media.dvpp_malloc`` and their ``free`` calls record each block that was
given (address, size, device, the call and the job's call site) and each one
given back (when, by which call, from where) in an
:class:`~aclmon.dump.allocations.AllocationTable`; a model loaded into the
job's own memory (``load_*_with_mem``) marks its work and weight blocks. The
exception capture asks the table where each tensor of a failing operator lies
(:mod:`aclmon.dump.allocations`), at the moment of the exception, before the
job frees anything in its cleanup.

Allocations are not hot calls: each observer asks the runtime for the current
device once and formats the call site then.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.agent.launches import site_text
from aclmon.agent.wrappers import After, arg, ret_of
from aclmon.dump.allocations import Allocation, AllocationTable

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

#: allocation calls -> (index, keyword) of their size argument
ALLOCATE = {
    "rt.malloc": (0, "size"),
    "rt.malloc_cached": (0, "size"),
    "rt.malloc_align32": (0, "size"),
    "media.dvpp_malloc": (0, "size"),
}
#: free calls -> (index, keyword) of their pointer argument
FREE = {"rt.free": (0, "dev_ptr"), "media.dvpp_free": (0, "dev_ptr")}
#: frames between an observer and the job's call: the observer, the wrapper
_JOB_FRAME = 2


class MemoryHooks:
    """The observers; :attr:`table` is what they fill."""

    def __init__(self, ctx: AgentContext, table: AllocationTable | None = None) -> None:
        self.ctx = ctx
        self.table = table or AllocationTable()
        self.cwd = os.getcwd()

    def observers(self) -> dict[str, After]:
        table: dict[str, After] = {}
        for name, (index, keyword) in ALLOCATE.items():
            table[name] = self._allocated(name, index, keyword)
        for name, (index, keyword) in FREE.items():
            table[name] = self._freed(name, index, keyword)
        return table

    def _site(self) -> str:
        frame = sys._getframe(_JOB_FRAME + 1)
        return site_text(frame.f_code, frame.f_lineno, self.cwd)

    def _device(self) -> int:
        device, ret = self.ctx.original("rt.get_device")()
        return int(device) if ret == ACL_SUCCESS else -1

    def _allocated(self, name: str, index: int, keyword: str) -> After:
        def after(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
            if ret_of(result) != ACL_SUCCESS or type(result) is not tuple:
                return
            size = arg(args, kwargs, index, keyword)
            address = result[0]
            if type(address) is not int or type(size) is not int or not address:
                return
            self.table.allocated(
                Allocation(address, size, self._device(), name, self._site(), time.time_ns())
            )

        return after

    def _freed(self, name: str, index: int, keyword: str) -> After:
        def after(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
            if ret_of(result) != ACL_SUCCESS:
                return
            address = arg(args, kwargs, index, keyword)
            if type(address) is int:
                self.table.freed(address, time.time_ns(), name, self._site())

        return after

    def model_loaded(self, model_id: int, args: tuple[Any, ...], kwargs: dict[str, Any],
                     *, from_file: bool) -> None:  # fmt: skip
        """A model loaded into the job's memory: say what its blocks hold."""
        first = 1 if from_file else 2  # (path | model, size), then work_ptr, work_size, ...
        work = arg(args, kwargs, first, "work_ptr")
        weight = arg(args, kwargs, first + 2, "weight_ptr")
        if type(work) is int and work:
            self.table.annotate(work, f"model {model_id} work memory")
        if type(weight) is int and weight:
            self.table.annotate(weight, f"model {model_id} weights")
