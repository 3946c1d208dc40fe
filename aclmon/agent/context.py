"""What every part of the agent shares: one :class:`AgentContext`.

The context is built once the publisher exists, and every part of the agent
(hooks, sampler, dump watcher, exception capture, profiling, recorder, plog
tail) takes it plus the few sibling parts it really uses, never the agent
itself. It holds:

* the event sink (the publisher, or a :class:`MemorySink` in tests): ``emit``,
  ``publish`` and ``make`` hand it records that are numbered later, on the
  sink's side (see ``aclmon.bus.records.Record``), so a job thread pays one
  tuple and one deque append;
* the clock offset the hottest hooks use (``wall_offset``);
* the runtime state (``state``), the configuration (``config``), the logger;
* the failure counter (``fail``): the agent's own errors are counted per place,
  logged once, and never reach the job;
* the unwrapped ``acl`` functions the agent calls itself (``original``), and
  the threads' runtime error state kept as the job left it (``errors``, see
  :mod:`aclmon.agent.errorstate`);
* the control thread's task queue (``submit``).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.agent.errorstate import ThreadErrors
from aclmon.agent.history import DEFAULT_RECENT
from aclmon.agent.state import RuntimeState
from aclmon.bus.records import NUMBERED, PLAIN, Record, build_records
from aclmon.events import Event, LogLine

log = logging.getLogger("aclmon.agent")

#: commands and internal jobs waiting for the control thread
TASK_QUEUE_SIZE = 256
DEFAULT_SAMPLE_INTERVAL_S = 1.0


class EventSink(Protocol):
    """Where the agent's records go: :class:`aclmon.bus.publisher.Publisher` has these."""

    ring: collections.deque[Record]
    ring_limit: int

    def submit(self, record: Record) -> bool: ...

    def count_drop(self) -> None: ...


class MemorySink:
    """An in-memory sink (tests, tools): keeps the records and numbers them on :meth:`take`
    the way the publisher does."""

    def __init__(self, limit: int = 65536) -> None:
        self.ring: collections.deque[Record] = collections.deque()
        self.ring_limit = limit
        self.dropped = 0
        self._counter = itertools.count(1)

    def submit(self, record: Record) -> bool:
        if len(self.ring) >= self.ring_limit:
            self.count_drop()
            return False
        self.ring.append(record)
        return True

    def count_drop(self) -> None:
        self.dropped += 1

    def take(self) -> list[Event]:
        """The events of every record so far, numbered 1, 2, ... across calls."""
        records = list(self.ring)
        self.ring.clear()
        events, _ = build_records(records, self._counter)
        return events


@dataclass(frozen=True)
class AgentConfig:
    """The agent's settings (from ``aclmon.agent.start`` / ``aclmon run``), declared
    once here: ``start(**settings)`` and ``Agent(acl, **settings)`` take these."""

    #: where viewers connect: /path.sock, unix:/path or tcp://host:port (None: a
    #: Unix socket in the per-user runtime directory)
    address: str | None = None
    #: the token viewers must prove to send commands (None: none)
    token: str | None = None
    #: also write every event to this recording file
    record: str | None = None
    sample_interval: float = DEFAULT_SAMPLE_INTERVAL_S
    #: events the publisher's queue holds (None: its default)
    queue_size: int | None = None
    #: where aclmon's own API-mode profiling writes (None or "": aclmon-prof-<pid> here;
    #: the agent fills it in)
    profiling_output: str | None = None
    #: the acl.json the job passed to acl.init before the agent started
    acl_json: str | None = None
    #: appear in the registry (so ``aclmon attach`` finds the agent)
    register: bool = True
    take_exception_callback: bool = False
    #: follow the job's CANN log (plog) and publish its warnings and errors
    plog: bool = True
    #: recent exceptions and dump files a viewer that connects late is sent
    history: int = DEFAULT_RECENT
    #: the job's name in the Hello ("": from the environment, see ``rank_identity``)
    job: str = ""
    #: a worker process's index (multiprocessing's), the Hello's rank when the
    #: launcher gave none; -1: not a worker
    worker: int = -1
    #: keep the whole stack of each launch, not only the caller's line (launch sites)
    launch_stacks: bool = False


class AgentContext:
    """See the module docstring."""

    def __init__(
        self,
        acl: Any,
        sink: EventSink,
        *,
        config: AgentConfig | None = None,
        state: RuntimeState | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.acl = acl
        self.runtime = "sim" if getattr(acl, "__aclmon_sim__", False) else "real"
        self.sink = sink
        self.config = config or AgentConfig()
        self.state = state or RuntimeState()
        self.log = logger or log
        #: [time_ns() - perf_counter_ns()], re-synced by the control thread (``resync``) so
        #: the hottest hooks read one clock, not two; a list item store is atomic
        self.wall_offset = [time.time_ns() - time.perf_counter_ns()]
        #: the hot wrappers' record builders, registered once each (see aclmon.agent.hot)
        self.record_builders: dict[Hashable, int] = {}
        #: place -> failures of the agent's own code there
        self.failures: dict[str, int] = {}
        #: "rt.set_device" -> the unwrapped function (filled when the hooks install)
        self.originals: dict[str, Callable[..., Any]] = {}
        #: what the agent took of each thread's error state, given back to the job
        self.errors = ThreadErrors(acl)
        self.tasks: queue.Queue[Callable[[], None]] = queue.Queue(TASK_QUEUE_SIZE)
        self.pid = os.getpid()

    # ------------------------------------------------------------ events
    def emit(self, cls: type, *fields: Any) -> bool:
        """Send ``cls(seq, now, *fields)``; the sink numbers it. ``False``: dropped."""
        return self.sink.submit((PLAIN, cls.KIND, time.time_ns(), fields))  # type: ignore[attr-defined]

    def make(self, cls: type, *fields: Any) -> Any:
        """A new event stamped now, to keep (in ``state``) and :meth:`publish`; its
        ``seq`` is given when it is sent."""
        return cls(0, time.time_ns(), *fields)

    def publish(self, event: Any) -> bool:
        """Send a ready event (from :meth:`make`) with the next sequence number."""
        return self.sink.submit((NUMBERED, event))

    def log_line(self, level: str, text: str) -> bool:
        """One of aclmon's own log lines."""
        return self.emit(LogLine, level, text, "", self.pid, "", 0, "", "")

    def resync_clock(self) -> None:
        self.wall_offset[0] = time.time_ns() - time.perf_counter_ns()

    # ------------------------------------------------------------ failures
    def fail(self, where: str, exc: BaseException) -> None:
        """Count one failure of the agent's own code; log the first at each place."""
        count = self.failures.get(where, 0) + 1
        self.failures[where] = count
        if count == 1:
            self.log.warning(
                "aclmon agent: %s failed (%s: %s); further failures here are only counted",
                where,
                type(exc).__name__,
                exc,
            )
            with contextlib.suppress(Exception):
                self.log_line("error", f"agent: {where} failed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------ acl
    def original(self, qualified: str) -> Callable[..., Any]:
        """The unwrapped ``acl`` function ``"rt.get_context"`` (``"init"`` for top level)."""
        fn = self.originals.get(qualified)
        if fn is not None:
            return fn
        module_name, _, name = qualified.rpartition(".")
        module = getattr(self.acl, module_name) if module_name else self.acl
        return getattr(module, name)

    # ------------------------------------------------------------ control thread
    def submit(self, task: Callable[[], None]) -> bool:
        """Run ``task`` on the agent's control thread; False if its queue is full."""
        try:
            self.tasks.put_nowait(task)
            return True
        except queue.Full:
            return False


class DeviceBinder:
    """Makes a live context of a device current on the agent's own thread (current
    contexts are per thread: the job's threads are not affected)."""

    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        self._bound = threading.local()

    def bind(self, device: int) -> bool:
        context = self.ctx.state.context_for_device(device)
        if not context:
            return False
        if getattr(self._bound, "context", None) == context:
            return True
        ret = self.ctx.original("rt.set_context")(context)
        if ret != ACL_SUCCESS:
            self._bound.context = None
            return False
        self._bound.context = context
        return True
