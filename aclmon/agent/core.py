"""The agent: one per job process, the only aclmon code that touches ``acl``.

Threads:

* the job's own threads run the hook wrappers (one record into the publisher's ring);
* the runtime's callback thread runs the exception capture;
* ``aclmon-agent`` (the control thread) executes commands, samples devices and
  the host, polls the dump directory and follows the job's CANN log (plog):
  everything slow happens here;
* ``aclmon-publisher`` (the bus) builds and numbers the events of the ring's
  records and does all socket I/O;
* ``aclmon-op-timings`` reads the model-subscription pipe while live timings run.

The agent's own failures are counted per place and logged once (stderr via
``logging`` and a LogLine event); they never reach the job.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
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
from aclmon.agent import workers
from aclmon.agent.context import (
    AgentConfig,
    AgentContext,
    DeviceBinder,
)
from aclmon.agent.dumps import DumpWatcher
from aclmon.agent.exceptions import ExceptionCapture
from aclmon.agent.history import HistoryKeeper
from aclmon.agent.hooks import Hooks
from aclmon.agent.plog import PlogTail
from aclmon.agent.profiling import MIN_SAMPLE_INTERVAL_MS, ProfilingController
from aclmon.agent.sampler import Sampler
from aclmon.agent.state import RuntimeState
from aclmon.agent.triage import TriageJoiner
from aclmon.dump.acljson import read_acl_json
from aclmon.events import (
    Goodbye,
    Hello,
    SetProfilingConfig,
    StartProfiling,
    StopProfiling,
    hello_fields,
)

log = logging.getLogger("aclmon.agent")

DUMP_POLL_INTERVAL_S = 0.5
#: the last look at the dump directory and the plog when the job ends, at most
FINAL_POLL_S = 2.0
SLOW_CALL_CHECK_S = 0.05
#: threads with a current context remembered before ended ones are pruned
MAX_CURRENT_THREADS = 256


class Agent:
    """Observes one job's ``acl`` module and publishes what happens; see the module docstring.

    The agent starts the publisher, builds the :class:`AgentContext` on it and then
    its parts, each from the context and the sibling parts it uses; it keeps the
    control thread and answers commands.
    """

    def __init__(self, acl: Any, **settings: Any) -> None:
        """``settings``: the fields of :class:`AgentConfig`."""
        self.acl = acl
        self.runtime = "sim" if getattr(acl, "__aclmon_sim__", False) else "real"
        config = AgentConfig(**settings)
        #: where API-mode profiling writes (the setting, else a directory of this job's)
        self.profiling_output = config.profiling_output or os.path.abspath(
            f"aclmon-prof-{os.getpid()}"
        )
        self.config = config = dataclasses.replace(config, profiling_output=self.profiling_output)
        #: the device sampling interval now (a viewer may change it)
        self.sample_interval = config.sample_interval
        self.state = RuntimeState()
        #: totals and recent exceptions/dumps since start, for late viewers
        self.history = HistoryKeeper(config.history)
        #: (status, reason) of the job's end, once known (sent in the Goodbye)
        self.exit_status: tuple[int, str] | None = None
        # The parts, built by start() once the publisher exists.
        self.context: AgentContext | None = None
        self.hooks: Hooks | None = None
        self.exceptions: ExceptionCapture | None = None
        self.profiling: ProfilingController | None = None
        self.sampler: Sampler | None = None
        self.dump_watcher: DumpWatcher | None = None
        self.plog: PlogTail | None = None
        self.triage: TriageJoiner | None = None
        self.publisher: Any = None
        self.recorder: Any = None
        self._stopping = threading.Event()
        self._control: threading.Thread | None = None
        self._closed = False
        self.started = 0.0
        #: print no listening line (also for the agents of the job's workers)
        self.quiet = False

    # ------------------------------------------------------------ lifecycle
    @property
    def address(self) -> str:
        return str(self.publisher.address) if self.publisher is not None else ""

    @property
    def failures(self) -> dict[str, int]:
        """place -> failures of the agent's own code there."""
        return self.context.failures if self.context is not None else {}

    def fail(self, where: str, exc: BaseException) -> None:
        if self.context is not None:
            self.context.fail(where, exc)
        else:
            log.warning("aclmon agent: %s failed (%s: %s)", where, type(exc).__name__, exc)

    def start(self) -> Agent:
        from aclmon.bus.publisher import Publisher

        config = self.config
        kwargs: dict[str, Any] = {"token": config.token}
        if config.queue_size is not None:
            kwargs["queue_size"] = config.queue_size
        publisher = Publisher(
            config.address,
            snapshot=self.snapshot,
            on_command=self._on_command,
            observer=self.history,
            **kwargs,
        )
        publisher.start()  # raises AclmonError (bad address, socket in use) before anything else
        self.publisher = publisher
        try:
            self._start_observing()
        except BaseException as exc:
            # Leave the job as it was: no hooks, no socket, no half-started threads.
            self._closed = True
            self._stopping.set()
            if self.hooks is not None:
                self.hooks.uninstall()
            publisher.close(flush_timeout=0.0)
            if isinstance(exc, OSError):
                from aclmon.agent import AgentError

                why = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else exc
                raise AgentError(f"the agent cannot start: {why}") from exc
            raise
        return self

    def _start_observing(self) -> None:
        ctx = self.context = AgentContext(
            self.acl, self.publisher, config=self.config, state=self.state, logger=log
        )
        binder = DeviceBinder(ctx)
        self.profiling = ProfilingController(ctx, binder, self.profiling_output)
        self.exceptions = ExceptionCapture(ctx)
        self.hooks = Hooks(ctx, self.profiling, self.exceptions, self.on_acl_init)
        self.exceptions.running_model = self.hooks.slow_calls.synchronous_execute_in_flight
        self.exceptions.note_running = self.history.note_running_model
        self.exceptions.launch_unrecorded = self.hooks.slow_calls.launch_unrecorded
        self.triage = TriageJoiner(ctx, self.hooks.memory.table)
        self.exceptions.launches = self.hooks.launches
        self.exceptions.on_captured = self.triage.exception_captured
        self.sampler = Sampler(ctx, binder)
        if self.config.plog:
            self.plog = PlogTail(ctx)
            self.plog.on_entry = self.triage.plog_entry
        self.started = time.time()
        if self.config.record:
            from aclmon.agent.recorder import Recorder

            self.recorder = Recorder(ctx, self.config.record, self.address, self.config.token)
        # Before the job's acl.init the runtime cannot count devices, and asking would
        # write an ERROR into the job's own log and replace its recent error message:
        # ask only when the caller says acl is initialised; else the Hello sent after
        # the job's acl.init has the count.
        with ctx.errors.kept():  # the job's thread: its error state stays the job's
            self._send_hello(
                ask_runtime=bool(self.config.acl_json or self.config.take_exception_callback)
            )
        self.profiling.publish_state()  # idle until someone starts it: viewers see that too
        self.hooks.install()
        # The callback is registered at the job's next acl.init (a fresh session cannot
        # hold a job callback yet). Registering now could replace one the job set before
        # the agent started, and pyACL cannot tell us: only when the caller says so.
        if self.config.take_exception_callback:
            with ctx.errors.kept():
                self._register_exception_callback()
        if self.config.acl_json:
            self._read_acl_json(self.config.acl_json)
            if not self.config.take_exception_callback:
                text = (
                    "acl was initialised before the agent started: exception capture begins at"
                    " the next acl.init (start the agent first, or pass"
                    " take_exception_callback=True if the job registers its callback later)"
                )
                log.warning("aclmon agent: %s", text)
                ctx.log_line("warning", text)
        self._control = threading.Thread(
            target=self._control_loop, name="aclmon-agent", daemon=True
        )
        self._control.start()
        if self.config.register:
            try:
                from aclmon.bus import registry

                registry.register(self.address)
            except Exception as exc:  # attach by address still works
                ctx.fail("registry", exc)
        atexit.register(self.close)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork_in_child)
        try:
            workers.watch_spawned_children(self.worker_settings())
        except Exception as exc:  # spawned workers then run unobserved
            ctx.fail("spawned workers", exc)

    def worker_settings(self) -> workers.WorkerSettings:
        """What the agents of the job's worker processes start with."""
        config = self.config
        hello = self.state.hello
        job = hello.job if hello is not None else config.job
        kept = ("token", "sample_interval", "queue_size", "register", "plog", "history")
        return workers.WorkerSettings(
            sim=self.runtime == "sim",
            job=job,
            quiet=self.quiet,
            config={name: getattr(config, name) for name in kept},
        )

    def _after_fork_in_child(self) -> None:
        """A forked child has none of the agent's threads: it gets no part of this
        agent (hooks, sockets), and an agent of its own if it initialises ACL."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.hooks is not None:
                self.hooks.uninstall(keep_error_readers=True)
            atexit.unregister(self.close)
            if self.publisher is not None:
                self.publisher.release_in_forked_child()
            import aclmon.agent

            if aclmon.agent._agent is self:  # the child may start an agent of its own
                aclmon.agent._agent = None
            workers.arm(self.acl, self.worker_settings())
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
        self._final_polls()
        if self.profiling is not None:
            self._shutdown_step("profiling shutdown", self.profiling.close)
        if restore:
            workers.stop_watching_spawned_children()
            if self.exceptions is not None:
                self._shutdown_step("exception callback shutdown", self.exceptions.unregister)
            if self.hooks is not None:
                self.hooks.uninstall()
        if self.config.register:
            try:
                from aclmon.bus import registry

                registry.unregister()
            except Exception:
                pass
        if self.publisher is not None:
            # Every viewer gets the final snapshot (its History counts everything), so
            # the state a relay keeps for a job that exited is its last.
            try:
                self.publisher.send_snapshots(timeout=0.5)
            except Exception as exc:
                self.fail("final snapshot", exc)
            # The last event: a viewer shows "job exited", not a lost connection.
            status, reason = self.exit_status or (0, "agent stopped")
            # Through the ring, after everything the job's threads sent before it.
            if self.context is not None:
                self.context.emit(Goodbye, status, self.exit_status is not None, reason)
            self.publisher.close(flush_timeout=0.5)
        if self.recorder is not None:
            self.recorder.close()
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    def _shutdown_step(self, where: str, step: Callable[[], object]) -> None:
        """One pyACL-calling step of :meth:`close`, on the thread that stops the agent
        (the job's, or the one exiting): that thread's error state stays the job's,
        and a failure is counted, not raised."""
        kept = self.context.errors.kept if self.context is not None else contextlib.nullcontext
        try:
            with kept():
                step()
        except Exception as exc:
            self.fail(where, exc)

    def _final_polls(self) -> None:
        """The last look at the dump directory and the plog, and the triage of what
        is still pending, with a deadline: a
        file system that hangs (a FIFO, a dead NFS server) must not keep the job
        from exiting. They run on a thread of their own, abandoned past it."""

        def polls() -> None:
            if self.dump_watcher is not None:
                try:
                    # The job is done writing: announce what it left, stable or not.
                    self.dump_watcher.poll(final=True)
                except Exception as exc:
                    self.fail("dump watcher", exc)
            if self.plog is not None:
                try:
                    # The runtime flushes its log at exit: take what it wrote last, in
                    # files too (the first flush may have made a file since the last look).
                    self.plog.poll(final=True)
                    self.plog.poll()
                except Exception as exc:
                    self.fail("plog tail", exc)
            if self.triage is not None:
                try:
                    self.triage.poll(final=True)  # the job is ending: triage with what there is
                except Exception as exc:
                    self.fail("triage", exc)

        if self.dump_watcher is None and self.plog is None and self.triage is None:
            return
        worker = threading.Thread(target=polls, name="aclmon-final-poll", daemon=True)
        worker.start()
        worker.join(FINAL_POLL_S)
        if worker.is_alive():
            self.fail("final poll", TimeoutError(f"still looking after {FINAL_POLL_S:g} s"))

    # ------------------------------------------------------------ publishing
    def reply(self, request_id: int, code: int, message: str, data: dict[str, Any]) -> None:
        self.publisher.reply(request_id, int(code), message, data)

    def snapshot(self) -> list[Any]:
        events = self.state.snapshot()
        if self.state.hello is not None:  # (the recorder subscribes before the Hello)
            events.extend(self.history.snapshot_events())
        return events

    def set_exit_status(self, status: int, reason: str = "exit") -> None:
        """The job's exit status, for the Goodbye sent when the agent closes."""
        if self.exit_status is None:
            self.exit_status = (int(status), reason)

    def _send_hello(self, ask_runtime: bool = True) -> None:
        ctx = self.context
        assert ctx is not None
        soc_name = ""
        device_count = 0  # not known
        if ask_runtime:
            with contextlib.suppress(Exception):
                soc_name = str(self.acl.get_soc_name() or "")
            try:
                count, ret = self.acl.rt.get_device_count()
                if ret == ACL_SUCCESS:
                    device_count = int(count)
            except Exception:
                pass
        hello = ctx.make(Hello, *hello_fields(self.runtime, soc_name, device_count))
        config = self.config
        if config.job:
            hello = hello._replace(job=config.job)
        if config.worker >= 0 and hello.rank < 0:
            # A worker of the job: its index stands for the rank, and says so.
            rank_env = {**hello.rank_env, workers.WORKER_VARIABLE: str(config.worker)}
            hello = hello._replace(rank=config.worker, rank_env=rank_env)
        self.state.hello = hello
        ctx.publish(hello)

    # ------------------------------------------------------------ control thread
    def submit(self, task: Any) -> bool:
        """Run ``task`` on the control thread; False if the queue is full."""
        return self.context.submit(task) if self.context is not None else False

    def _control_loop(self) -> None:
        """Commands, sampling, dump polling and the slow-call watch, until stopped.

        Each step is fenced on its own, so one failing step (counted) never stops the
        others; in particular commands keep getting replies.
        """
        ctx = self.context
        hooks = self.hooks
        assert ctx is not None and hooks is not None
        tasks = ctx.tasks
        timers = {"sample": time.monotonic(), "dumps": time.monotonic()}
        while not self._stopping.is_set():
            wait = max(0.0, min(timers.values()) - time.monotonic())
            try:
                task = tasks.get(timeout=min(wait, SLOW_CALL_CHECK_S))
            except queue.Empty:
                task = None
            if self._stopping.is_set():
                break
            if task is not None:
                self._guarded("control task", task)
            ctx.resync_clock()
            self._guarded("slow call watch", hooks.slow_calls.announce)
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
                if self.plog is not None:
                    self._guarded("plog tail", self.plog.poll)
                if self.triage is not None:
                    self._guarded("triage", self.triage.poll)
                if self.profiling is not None:
                    self._guarded("profiling files", self.profiling.poll_files)
                timers["dumps"] = now + DUMP_POLL_INTERVAL_S

    def _guarded(self, where: str, step: Any) -> None:
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
        alive = {thread.native_id for thread in threading.enumerate()}
        for thread_id in [t for t in list(current) if t not in alive]:
            current.pop(thread_id, None)

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
                code, message, data = self._profiling().start()
            elif isinstance(command, StopProfiling):
                code, message, data = self._profiling().stop()
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
        code, message, data = self._profiling().configure(
            command.flags, command.aicore_metrics, tuple(command.devices), device_count
        )
        if code == ACL_SUCCESS and interval_ms:
            self.sample_interval = interval_ms / 1000.0
            message += f"; sampling every {interval_ms} ms"
        data["sample_interval_ms"] = int(self.sample_interval * 1000)
        return code, message, data

    def _profiling(self) -> ProfilingController:
        assert self.profiling is not None  # commands arrive only after start()
        return self.profiling

    # ------------------------------------------------------------ after acl.init
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
        ctx = self.context
        assert ctx is not None and self.profiling is not None
        config, warning = read_acl_json(config_path)
        if warning:
            ctx.log_line("warning", warning)
        if config.profiler_on:
            self.profiling.acl_json_profiling(
                config.profiler_output, config.profiler_flags, config.profiler_metrics
            )
        if config.dump_path:
            if self.triage is not None:
                self.triage.dump_roots.append(config.dump_path)
            self.dump_watcher = DumpWatcher(ctx, config.dump_path)
            ctx.log_line("info", f"watching dump directory {config.dump_path}")

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


def print_listening(agent: Agent, stream: Any = None) -> None:
    """The one line that says where the agent listens."""
    print(
        f"aclmon agent: listening on {agent.address} (pid {os.getpid()})",
        file=stream or sys.stderr,
        flush=True,
    )
