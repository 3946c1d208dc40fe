"""The agent: one per job process, the only aclmon code that touches ``acl``.

Threads:

* the job's own threads run the hook wrappers (build one event, queue it);
* the runtime's callback thread runs the exception capture;
* ``aclmon-agent`` (the control thread) executes commands, samples devices and
  the host, and polls the dump directory: everything slow happens here;
* ``aclmon-publisher`` (the bus) does all socket I/O;
* ``aclmon-op-timings`` reads the model-subscription pipe while live timings run.

The agent's own failures are counted per place and logged once (stderr via
``logging`` and a LogLine event); they never reach the job.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from aclmon.acl_constants import (
    ACL_ERROR_INTERNAL_ERROR,
    ACL_ERROR_INVALID_PARAM,
    ACL_SUCCESS,
)
from aclmon.agent.dumps import DumpWatcher, read_acl_json
from aclmon.agent.exceptions import ExceptionCapture
from aclmon.agent.hooks import Hooks
from aclmon.agent.profiling import MIN_SAMPLE_INTERVAL_MS, ProfilingController
from aclmon.agent.sampler import DEFAULT_INTERVAL_S, Sampler
from aclmon.agent.state import RuntimeState
from aclmon.events import (
    Clock,
    ContextDestroyed,
    DeviceReset,
    ExecuteBegin,
    Hello,
    LogLine,
    ModelLoaded,
    ModelUnloaded,
    Reply,
    SetProfilingConfig,
    StartProfiling,
    StopProfiling,
    StreamDestroyed,
    StreamSyncBegin,
    hello_fields,
)

log = logging.getLogger("aclmon.agent")

#: commands and internal jobs waiting for the control thread
TASK_QUEUE_SIZE = 256
DUMP_POLL_INTERVAL_S = 0.5
#: a synchronize/execute call still running after this long gets its Begin event
SLOW_CALL_NS = 50_000_000
SLOW_CALL_CHECK_S = 0.05
#: threads with a current context remembered before ended ones are pruned
MAX_CURRENT_THREADS = 256
#: frames searched per thread for a synchronize/execute wrapper
MAX_STACK_DEPTH = 64


class Agent:
    """Observes one job's ``acl`` module and publishes what happens; see the module docstring."""

    def __init__(
        self,
        acl: Any,
        *,
        address: str | None = None,
        token: str | None = None,
        record: str | None = None,
        sample_interval: float = DEFAULT_INTERVAL_S,
        queue_size: int | None = None,
        profiling_output: str | None = None,
        acl_json: str | None = None,
        register: bool = True,
        take_exception_callback: bool = False,
    ) -> None:
        self.acl = acl
        self._take_exception_callback = take_exception_callback
        self.runtime = "sim" if getattr(acl, "__aclmon_sim__", False) else "real"
        self._address = address
        self._token = token
        self._record_path = record
        self._queue_size = queue_size
        self._register = register
        self._acl_json = acl_json
        self.state = RuntimeState()
        self.hooks = Hooks(self)
        self.exceptions: ExceptionCapture | None = None
        self.profiling = ProfilingController(
            self, profiling_output or os.path.abspath(f"aclmon-prof-{os.getpid()}")
        )
        self.sampler: Sampler | None = None
        self.sample_interval = sample_interval
        self.dump_watcher: DumpWatcher | None = None
        self.failures: dict[str, int] = {}
        self.publisher: Any = None
        self.recorder: Any = None
        self._clock: Clock = Clock()
        self._publish: Callable[[Any], bool] = _discard
        self._tasks: queue.Queue[Callable[[], None]] = queue.Queue(TASK_QUEUE_SIZE)
        self._stopping = threading.Event()
        self._control: threading.Thread | None = None
        self._bound = threading.local()
        #: [time_ns() - perf_counter_ns()], re-synced by the control thread every
        #: SLOW_CALL_CHECK_S so the hottest hooks need one clock read, not two
        self.wall_offset = [time.time_ns() - time.perf_counter_ns()]
        #: thread id -> start (perf_counter_ns) of the slow call last announced on it
        self._announced: dict[int, int] = {}
        self._closed = False
        self.started = 0.0
        # Bound here so hooks can capture them once; replaced in start().
        self.emit: Callable[..., bool] = self._emit_discard

    # ------------------------------------------------------------ lifecycle
    @property
    def address(self) -> str:
        return str(self.publisher.address) if self.publisher is not None else ""

    def start(self) -> Agent:
        from aclmon.bus.publisher import Publisher

        kwargs: dict[str, Any] = {"token": self._token}
        if self._queue_size is not None:
            kwargs["queue_size"] = self._queue_size
        publisher = Publisher(
            self._address, snapshot=self.snapshot, on_command=self._on_command, **kwargs
        )
        publisher.start()  # raises AclmonError (bad address, socket in use) before anything else
        self.publisher = publisher
        try:
            self._start_observing()
        except BaseException as exc:
            # Leave the job as it was: no hooks, no socket, no half-started threads.
            self._closed = True
            self._stopping.set()
            self.hooks.uninstall()
            publisher.close(flush_timeout=0.0)
            if isinstance(exc, OSError):
                from aclmon.agent import AgentError

                raise AgentError(f"the agent cannot start: {exc}") from exc
            raise
        return self

    def _start_observing(self) -> None:
        publisher = self.publisher
        # One sequence for everything this source sends, including the publisher's own
        # replies and Drops: share its clock.
        self._clock = publisher.clock
        self._publish = publisher.publish
        self.emit = self._make_emit()
        self.started = time.time()
        if self._record_path:
            from aclmon.agent.recorder import Recorder

            self.recorder = Recorder(self, self._record_path)
        self._send_hello()
        self.profiling.publish_state()  # idle until someone starts it: viewers see that too
        self.hooks.install()
        self.exceptions = ExceptionCapture(self)
        # The callback is registered at the job's next acl.init (a fresh session cannot
        # hold a job callback yet). Registering now could replace one the job set before
        # the agent started, and pyACL cannot tell us: only when the caller says so.
        if self._take_exception_callback:
            self._register_exception_callback()
        self.sampler = Sampler(self, self.sample_interval)
        if self._acl_json:
            self._read_acl_json(self._acl_json)
            if not self._take_exception_callback:
                text = (
                    "acl was initialised before the agent started: exception capture begins at"
                    " the next acl.init (start the agent first, or pass"
                    " take_exception_callback=True if the job registers its callback later)"
                )
                log.warning("aclmon agent: %s", text)
                self.emit(LogLine, "warning", text)
        self._control = threading.Thread(
            target=self._control_loop, name="aclmon-agent", daemon=True
        )
        self._control.start()
        if self._register:
            try:
                from aclmon.bus import registry

                registry.register(self.address)
            except Exception as exc:  # attach by address still works
                self.fail("registry", exc)
        atexit.register(self.close)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork_in_child)

    def _after_fork_in_child(self) -> None:
        """A forked child has none of the agent's threads: let it run unobserved."""
        if self._closed:
            return
        self._closed = True
        try:
            self.hooks.uninstall()
            atexit.unregister(self.close)
            import aclmon.agent

            if aclmon.agent._agent is self:  # the child may start an agent of its own
                aclmon.agent._agent = None
        except Exception:  # nothing may disturb the child either
            pass

    def close(self, *, restore: bool = False) -> None:
        """Stop the agent. ``restore`` also removes the hooks (for ``aclmon.agent.stop()``)."""
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        if self._control is not None and self._control is not threading.current_thread():
            self._control.join(timeout=2.0)
        if self.dump_watcher is not None:
            try:
                # The job is done writing: announce what it left, stable or not.
                self.dump_watcher.poll(final=True)
            except Exception as exc:
                self.fail("dump watcher", exc)
        try:
            self.profiling.close()
        except Exception as exc:
            self.fail("profiling shutdown", exc)
        if restore:
            if self.exceptions is not None:
                try:
                    self.exceptions.unregister()
                except Exception as exc:
                    self.fail("exception callback shutdown", exc)
            self.hooks.uninstall()
        if self._register:
            try:
                from aclmon.bus import registry

                registry.unregister()
            except Exception:
                pass
        if self.publisher is not None:
            self.publisher.close(flush_timeout=0.5)
        self._publish = _discard
        if self.recorder is not None:
            self.recorder.close()
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    # ------------------------------------------------------------ publishing
    @property
    def publish_fn(self) -> Callable[[Any], bool]:
        """The publisher's ``publish`` itself (hooks bind it once)."""
        return self._publish

    @property
    def counter(self) -> Any:
        """The sequence counter shared with the publisher (``next()`` is atomic)."""
        return self._clock._counter

    def _make_emit(self) -> Callable[..., bool]:
        # The hot path of every hook. Same as publish(clock.make(cls, *fields)), minus two
        # Python frames: the clock's counter is used directly (next() on itertools.count
        # is atomic under the GIL) and the tuple is built without NamedTuple.__new__
        # (the field counts are checked by the tests, which decode every kind we send).
        counter = self._clock._counter
        publish = self._publish
        time_ns = time.time_ns
        tuple_new = tuple.__new__

        def emit(cls: type, *fields: Any) -> bool:
            return publish(tuple_new(cls, (next(counter), time_ns(), *fields)))

        return emit

    def _emit_discard(self, cls: type, *fields: Any) -> bool:
        return False

    def make(self, cls: type, *fields: Any) -> Any:
        """A new event with this source's next sequence number (not yet published)."""
        return self._clock.make(cls, *fields)

    def publish(self, event: Any) -> bool:
        return self._publish(event)

    def reply(self, request_id: int, code: int, message: str, data: dict[str, Any]) -> None:
        self.emit(Reply, request_id, int(code), message, data)

    def snapshot(self) -> list[Any]:
        return self.state.snapshot()

    def _send_hello(self) -> None:
        soc_name = ""
        device_count = 0
        with contextlib.suppress(Exception):  # before acl.init some runtimes cannot say
            soc_name = str(self.acl.get_soc_name() or "")
        try:
            count, ret = self.acl.rt.get_device_count()
            if ret == ACL_SUCCESS:
                device_count = int(count)
        except Exception:
            pass
        hello = self.make(Hello, *hello_fields(self.runtime, soc_name, device_count))
        self.state.hello = hello
        self.publish(hello)

    # ------------------------------------------------------------ failures
    def fail(self, where: str, exc: BaseException) -> None:
        """Count one failure of the agent's own code; log the first at each place."""
        count = self.failures.get(where, 0) + 1
        self.failures[where] = count
        if count == 1:
            log.warning(
                "aclmon agent: %s failed (%s: %s); further failures here are only counted",
                where,
                type(exc).__name__,
                exc,
            )
            with contextlib.suppress(Exception):
                self.emit(LogLine, "error", f"agent: {where} failed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------ control thread
    def submit(self, task: Callable[[], None]) -> bool:
        """Run ``task`` on the control thread; False if the queue is full."""
        try:
            self._tasks.put_nowait(task)
            return True
        except queue.Full:
            return False

    def _control_loop(self) -> None:
        """Commands, sampling, dump polling and the slow-call watch, until stopped.

        Each step is fenced on its own, so one failing step (counted) never stops the
        others; in particular commands keep getting replies.
        """
        timers = {"sample": time.monotonic(), "dumps": time.monotonic()}
        while not self._stopping.is_set():
            wait = max(0.0, min(timers.values()) - time.monotonic())
            try:
                task = self._tasks.get(timeout=min(wait, SLOW_CALL_CHECK_S))
            except queue.Empty:
                task = None
            if self._stopping.is_set():
                break
            if task is not None:
                self._guarded("control task", task)
            # A list item store is atomic: the hooks read it without a lock.
            self.wall_offset[0] = time.time_ns() - time.perf_counter_ns()
            if self.hooks.slow_call_codes:
                self._guarded("slow call watch", self._announce_slow_calls)
            now = time.monotonic()
            if now >= timers["sample"]:
                if self.sampler is not None:
                    self._guarded("sampler", self.sampler.sample)
                self._guarded("thread pruning", self._prune_current_contexts)
                timers["sample"] = now + self.sample_interval
            if now >= timers["dumps"]:
                watcher = self.dump_watcher
                if watcher is not None:
                    self._guarded("dump watcher", watcher.poll)
                timers["dumps"] = now + DUMP_POLL_INTERVAL_S

    def _guarded(self, where: str, step: Callable[[], Any]) -> None:
        try:
            step()
        except Exception as exc:
            self.fail(where, exc)

    def _prune_current_contexts(self) -> None:
        """Forget the current context of threads that ended, once there are many
        (a job that starts a thread per request must not grow the snapshot forever)."""
        current = self.state.current
        if len(current) <= MAX_CURRENT_THREADS:
            return
        alive = {thread.ident for thread in threading.enumerate()}
        for thread_id in [t for t in list(current) if t not in alive]:
            current.pop(thread_id, None)

    def _announce_slow_calls(self) -> None:
        """Publish the Begin event of each synchronize/execute that has run too long.

        Nothing is recorded on the job's thread for this: the threads' stacks are
        searched for a synchronize/execute wrapper frame whose original call has not
        returned (``start`` set, ``duration`` not yet). A viewer thus still learns which
        thread is stuck waiting on which stream or model, while a hooked call costs one
        event.
        """
        codes = self.hooks.slow_call_codes
        now_perf = time.perf_counter_ns()
        now_wall = time.time_ns()
        seen: dict[int, int] = {}
        for thread, frame in sys._current_frames().items():
            depth = 0
            while frame is not None and depth < MAX_STACK_DEPTH and frame.f_code not in codes:
                frame = frame.f_back
                depth += 1
            if frame is None or depth >= MAX_STACK_DEPTH:
                continue
            local = frame.f_locals
            start = local.get("start")
            if type(start) is not int or "duration" in local:
                continue
            seen[thread] = start
            if self._announced.get(thread) == start or now_perf - start < SLOW_CALL_NS:
                continue
            begin_ns = now_wall - (now_perf - start)
            if codes[frame.f_code] is StreamSyncBegin:
                event = self.make(StreamSyncBegin, local.get("stream", -1), thread)
            else:
                model_id = local.get("model_id", -1)
                model = self.state.models.get(model_id)
                event = self.make(
                    ExecuteBegin,
                    model_id,
                    local.get("stream", 0),
                    model.device_id if model is not None else -1,
                )
            self.publish(event._replace(ts_ns=begin_ns))
            seen[thread] = start
            self._announced[thread] = start
        self._announced = {t: s for t, s in self._announced.items() if seen.get(t) == s}

    def bind_device(self, device: int) -> bool:
        """Make a live context of ``device`` current on the calling (agent) thread."""
        context = self.state.context_for_device(device)
        if not context:
            return False
        if getattr(self._bound, "context", None) == context:
            return True
        ret = self.hooks.original("rt.set_context")(context)
        if ret != ACL_SUCCESS:
            self._bound.context = None
            return False
        self._bound.context = context
        return True

    # ------------------------------------------------------------ commands
    def _on_command(self, command: Any) -> None:
        """Runs on the publisher thread: hand the command to the control thread."""
        if not self.submit(lambda: self._execute_command(command)):
            self.publisher.reply(
                command.request_id, ACL_ERROR_INTERNAL_ERROR, "agent busy: try again", {}
            )

    def _execute_command(self, command: Any) -> None:
        try:
            if isinstance(command, SetProfilingConfig):
                code, message, data = self._configure(command)
            elif isinstance(command, StartProfiling):
                code, message, data = self.profiling.start()
            elif isinstance(command, StopProfiling):
                code, message, data = self.profiling.stop()
            else:
                code, message, data = (
                    ACL_ERROR_INVALID_PARAM,
                    f"the agent does not handle {type(command).__name__}",
                    {},
                )
        except Exception as exc:
            self.fail(f"command {type(command).__name__}", exc)
            code, message, data = ACL_ERROR_INTERNAL_ERROR, f"agent error: {exc}", {}
        self.reply(command.request_id, code, message, data)

    def _configure(self, command: SetProfilingConfig) -> tuple[int, str, dict[str, Any]]:
        interval_ms = command.sample_interval_ms
        if interval_ms and interval_ms < MIN_SAMPLE_INTERVAL_MS:
            return (
                ACL_ERROR_INVALID_PARAM,
                f"sampling interval must be at least {MIN_SAMPLE_INTERVAL_MS} ms",
                {},
            )
        hello = self.state.hello
        device_count = hello.device_count if hello is not None else 0
        code, message, data = self.profiling.configure(
            command.flags, command.aicore_metrics, tuple(command.devices), device_count
        )
        if code == ACL_SUCCESS and interval_ms:
            self.sample_interval = interval_ms / 1000.0
            message += f"; sampling every {interval_ms} ms"
        data["sample_interval_ms"] = int(self.sample_interval * 1000)
        return code, message, data

    # ------------------------------------------------------------ observations from hooks
    def on_acl_init(self, config_path: Any, ret: int) -> None:
        if ret != ACL_SUCCESS:
            return  # REPEAT_INITIALIZE: the session (and our callback) is the one we know
        # A new runtime session has no callback yet: register the agent's.
        self._register_exception_callback()
        # The SoC name and device count are only certain after init: say hello again.
        self._send_hello()
        if config_path:
            self._read_acl_json(str(config_path))

    def _read_acl_json(self, config_path: str) -> None:
        config, warning = read_acl_json(config_path)
        if warning:
            self.emit(LogLine, "warning", warning)
        if config.profiler_on:
            self.profiling.acl_json_profiling(
                config.profiler_output, config.profiler_flags, config.profiler_metrics
            )
        if config.dump_path:
            self.dump_watcher = DumpWatcher(self, config.dump_path)
            self.emit(LogLine, "info", f"watching dump directory {config.dump_path}")

    def on_acl_finalize(self, ret: int) -> None:
        if ret != ACL_SUCCESS:
            return
        if self.exceptions is not None:
            # The runtime session and its callback are gone; the next acl.init registers again.
            self.exceptions.registered = False
        # Finalize releases whatever the job did not: say so, so no viewer keeps stale state.
        state = self.state
        for model_id in list(state.models):
            state.models.pop(model_id, None)
            self.emit(ModelUnloaded, model_id, ACL_SUCCESS)
        for context in list(state.contexts):
            for key in state.context_destroyed(context):
                if isinstance(key, int):
                    self.emit(StreamDestroyed, key, ACL_SUCCESS)
            self.emit(ContextDestroyed, context, ACL_SUCCESS)
        for device in list(state.device_refs):
            state.device_reset(device, force=True)
            self.emit(DeviceReset, device, ACL_SUCCESS)
        state.current.clear()

    def on_model_loaded(self, model_id: int, device: int, name: str) -> None:
        # op_count 0 = unknown: pyACL's model description does not list the operators.
        event = self.make(ModelLoaded, model_id, device, name, 0)
        self.state.models[model_id] = event
        self.publish(event)
        self.profiling.model_loaded(model_id, device)

    def op_type_of(self, op_name: str) -> str:
        return self.state.op_type_of(op_name)

    def _register_exception_callback(self) -> None:
        if self.exceptions is None:
            return
        try:
            ret = self.exceptions.register()
        except Exception as exc:
            self.fail("exception callback registration", exc)
            return
        if ret != ACL_SUCCESS:
            log.debug("exception callback not registered yet (ret %s); retrying after init", ret)


def _discard(event: Any) -> bool:
    return False


def print_listening(agent: Agent, stream: Any = None) -> None:
    """The one line that says where the agent listens."""
    print(
        f"aclmon agent: listening on {agent.address} (pid {os.getpid()})",
        file=stream or sys.stderr,
        flush=True,
    )
