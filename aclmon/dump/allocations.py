"""The device memory a job allocated and freed, and where an address lies in it.

The agent records every ``acl.rt.malloc*`` / ``acl.media.dvpp_malloc`` that
succeeded and every ``free`` (with the time and the job's call site), and the
memory a model was given (``load_*_with_mem``). When an AI Core exception
names its operator's input and output addresses, :meth:`AllocationTable.classify`
says for each where it lies:

* ``inside``: the whole ``[address, address + size)`` lies in one live allocation;
* ``out_of_range``: it starts inside a live allocation and runs ``overrun``
  bytes past its end;
* ``freed``: it lies in memory the job freed (and nothing live holds it now),
  freed at ``freed_ns`` by the call at ``freed_by``;
* ``unknown``: in no allocation the job made itself. That is not a fault:
  the runtime allocates memory of its own (a model loaded without memory of
  the job's holds its weights and activations there).

Only ``out_of_range`` and ``freed`` are findings against the job (``offending``).
A freed block whose address range a later allocation reuses stops counting as
freed where they overlap: the live allocation wins.

Thread-safe (one lock; the hooks that record run on the job's threads and do
one bisect and one dict store each). Bounded: ``max_live`` live allocations
and the newest ``max_freed`` freed ones are kept; what falls off is counted.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

INSIDE = "inside"
OUT_OF_RANGE = "out_of_range"
FREED = "freed"
UNKNOWN = "unknown"
OFFENDING = (OUT_OF_RANGE, FREED)

DEFAULT_MAX_LIVE = 65_536
DEFAULT_MAX_FREED = 4_096


def clock_time(ns: int) -> str:
    """``HH:MM:SS.mmm`` of an epoch time in ns, local time (what a log line shows)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%H:%M:%S", time.localtime(seconds)) + f".{rest // 1_000_000:03d}"


@dataclass(frozen=True)
class Allocation:
    """One block the job allocated (``api``: the call; ``site``: ``file:line function``)."""

    address: int
    size: int
    device_id: int
    api: str
    site: str
    allocated_ns: int
    note: str = ""  # "model 3 work memory" ...


@dataclass(frozen=True)
class FreedAllocation:
    allocation: Allocation
    freed_ns: int
    freed_api: str
    freed_site: str


@dataclass(frozen=True)
class AddressFinding:
    """Where one tensor of a failing operator lies."""

    role: str  # "input" or "output"
    index: int
    name: str
    address: int
    size: int
    status: str  # INSIDE, OUT_OF_RANGE, FREED or UNKNOWN
    overrun: int = 0  # OUT_OF_RANGE: bytes past the allocation's end
    allocation: Allocation | None = None
    freed_ns: int = 0
    freed_by: str = ""  # "rt.free at job.py:41 release"

    @property
    def offending(self) -> bool:
        return self.status in OFFENDING

    def text(self) -> str:
        """The finding in words, one line."""
        what = f"{self.role}[{self.index}]" + (f" {self.name}" if self.name else "")
        where = f"{what} 0x{self.address:x}+{self.size}"
        block = self.allocation
        if self.status == INSIDE and block is not None:
            return f"{where}: inside 0x{block.address:x}+{block.size} ({block.api})"
        if self.status == OUT_OF_RANGE and block is not None:
            return (
                f"{where}: out of range by {self.overrun} bytes"
                f" (allocation 0x{block.address:x}+{block.size} from {block.api}"
                + (f" at {block.site})" if block.site else ")")
            )
        if self.status == FREED and block is not None:
            return (
                f"{where}: in freed memory (0x{block.address:x}+{block.size}, freed at"
                f" {clock_time(self.freed_ns)} by {self.freed_by})"
            )
        return f"{where}: unknown (no allocation the job made holds it)"

    def to_dict(self) -> dict[str, Any]:
        block = self.allocation
        return {
            "role": self.role,
            "index": self.index,
            "name": self.name,
            "address": f"0x{self.address:x}",
            "size": self.size,
            "status": self.status,
            "offending": self.offending,
            "overrun": self.overrun,
            "allocation": (
                {
                    "address": f"0x{block.address:x}",
                    "size": block.size,
                    "device_id": block.device_id if block.device_id >= 0 else None,
                    "api": block.api,
                    "site": block.site,
                    "allocated_ns": block.allocated_ns,
                    "note": block.note,
                }
                if block is not None
                else None
            ),
            "freed_ns": self.freed_ns or None,
            "freed_by": self.freed_by or None,
            "text": self.text(),
        }


class AllocationTable:
    """See the module docstring."""

    def __init__(
        self, max_live: int = DEFAULT_MAX_LIVE, max_freed: int = DEFAULT_MAX_FREED
    ) -> None:
        self.max_live = max_live
        self.max_freed = max_freed
        self._lock = threading.Lock()
        self._starts: list[int] = []
        self._live: dict[int, Allocation] = {}
        self._freed: OrderedDict[int, FreedAllocation] = OrderedDict()
        self._freed_starts: list[int] = []
        self.forgotten = 0  # live allocations not recorded (the table was full)

    # ------------------------------------------------------------ recording
    def allocated(self, allocation: Allocation) -> None:
        with self._lock:
            if allocation.address in self._live:
                self._live[allocation.address] = allocation
                return
            if len(self._live) >= self.max_live:
                self.forgotten += 1
                return
            bisect.insort(self._starts, allocation.address)
            self._live[allocation.address] = allocation

    def freed(self, address: int, freed_ns: int, api: str, site: str) -> bool:
        """Record that the block at ``address`` was freed; False if it was not known."""
        with self._lock:
            block = self._live.pop(address, None)
            if block is None:
                return False
            index = bisect.bisect_left(self._starts, address)
            if index < len(self._starts) and self._starts[index] == address:
                del self._starts[index]
            if address in self._freed:
                self._forget_freed(address)
            self._freed[address] = FreedAllocation(block, freed_ns, api, site)
            bisect.insort(self._freed_starts, address)
            while len(self._freed) > self.max_freed:
                oldest = next(iter(self._freed))
                self._forget_freed(oldest)
            return True

    def _forget_freed(self, address: int) -> None:
        self._freed.pop(address, None)
        index = bisect.bisect_left(self._freed_starts, address)
        if index < len(self._freed_starts) and self._freed_starts[index] == address:
            del self._freed_starts[index]

    def annotate(self, address: int, note: str) -> None:
        """Say what the live block holding ``address`` is for (a model's memory)."""
        with self._lock:
            block = self._holding(address)
            if block is not None:
                self._live[block.address] = Allocation(
                    block.address, block.size, block.device_id, block.api, block.site,
                    block.allocated_ns, note,
                )  # fmt: skip

    def release_device(self, device_id: int, freed_ns: int, api: str) -> None:
        """A device reset (or finalize) frees what the job still held on it."""
        with self._lock:
            addresses = [a for a, b in self._live.items() if b.device_id == device_id]
        for address in addresses:
            self.freed(address, freed_ns, api, "")

    # ------------------------------------------------------------ reading
    def _holding(self, address: int) -> Allocation | None:
        index = bisect.bisect_right(self._starts, address) - 1
        if index < 0:
            return None
        block = self._live.get(self._starts[index])
        if block is None or address >= block.address + block.size:
            return None
        return block

    def _freed_holding(self, address: int) -> FreedAllocation | None:
        index = bisect.bisect_right(self._freed_starts, address) - 1
        if index < 0:
            return None
        freed = self._freed.get(self._freed_starts[index])
        if freed is None:
            return None
        block = freed.allocation
        if address >= block.address + block.size:
            return None
        return freed

    def classify(
        self,
        address: int,
        size: int,
        role: str = "input",
        index: int = 0,
        name: str = "",
        *,
        as_of_ns: int = 0,
    ) -> AddressFinding:
        """Where ``[address, address + size)`` lies (see the module docstring); with
        ``as_of_ns``, where it lay then: a block given out later does not hold it, a
        block freed later still did."""
        size = max(0, size)
        with self._lock:
            block = self._holding(address)
            if block is not None and as_of_ns and block.allocated_ns > as_of_ns:
                block = None
            if block is None and as_of_ns:
                later = self._freed_holding(address)
                if (
                    later is not None
                    and later.freed_ns > as_of_ns
                    and later.allocation.allocated_ns <= as_of_ns
                ):
                    block = later.allocation
            if block is not None:
                end = block.address + block.size
                if address + size <= end:
                    return AddressFinding(role, index, name, address, size, INSIDE, 0, block)
                return AddressFinding(
                    role, index, name, address, size, OUT_OF_RANGE, address + size - end, block
                )
            freed = self._freed_holding(address)
            if freed is not None:
                by = freed.freed_api + (f" at {freed.freed_site}" if freed.freed_site else "")
                return AddressFinding(
                    role, index, name, address, size, FREED, 0, freed.allocation,
                    freed.freed_ns, by,
                )  # fmt: skip
        return AddressFinding(role, index, name, address, size, UNKNOWN)

    def live_count(self) -> int:
        return len(self._live)

    def freed_count(self) -> int:
        return len(self._freed)
