"""Profiling on command, without fighting the job for it.

Two ways to profile, because CANN allows only one of them per process at a time
(``ACL_ERROR_PROF_API_CONFLICT``: "cannot interleave subscription APIs between
aclprofInit and aclprofFinalize"):

* **API mode** (``SetProfilingConfig.flags != 0``): ``prof.init`` ->
  ``create_config(devices, aicore_metrics, 0, flags)`` -> ``start`` ... ``stop``
  -> ``destroy_config`` -> ``finalize``. The data goes to files under the
  output path, for msprof to analyse; nothing streams live.
* **Live operator timings** (``flags == 0``): every model the job has loaded
  (and every model it loads later) is subscribed with
  ``create_subscribe_config(1, aicore_metrics, pipe_fd)``; a reader thread
  turns the op records from the pipe into :class:`OpTiming` events.

Who owns profiling is tracked in ``ProfilingState.owner``: ``"acl.json"`` (the
job's acl.json switched the profiler on), ``"job"`` (the job called
``acl.prof.*`` itself), ``"aclmon"`` (a command started it) or ``""``. When the
job or acl.json owns it, commands get the ACL code and a reason instead of a
fight. When the job starts profiling while aclmon owns it, aclmon steps aside
first so the job's call succeeds exactly as it would without the agent.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec

from aclmon.acl_constants import (
    ACL_AICORE_PIPE_UTILIZATION,
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_INVALID_PROFILING_CONFIG,
    ACL_ERROR_PROF_ALREADY_RUN,
    ACL_ERROR_PROF_API_CONFLICT,
    ACL_ERROR_PROF_NOT_RUN,
    ACL_SUCCESS,
    AICORE_METRICS,
    PROF_FLAGS_ALL,
    error_text,
    prof_flag_names,
)
from aclmon.agent.livetimings import LiveTimings
from aclmon.agent.session_files import SessionFiles
from aclmon.events import ProfilingState

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext, DeviceBinder

DEFAULT_METRICS = ACL_AICORE_PIPE_UTILIZATION
#: SetProfilingConfig.flags value that asks for live operator timings (model subscription).
LIVE_TIMINGS = 0
MIN_SAMPLE_INTERVAL_MS = 10

Outcome = tuple[int, str, dict[str, Any]]


_P = ParamSpec("_P")


def _job_call(
    change: Callable[Concatenate[ProfilingController, _P], None],
) -> Callable[Concatenate[ProfilingController, int, _P], None]:
    """An observer of the job's own ``acl.prof`` call, its ``ret`` first: a failed call
    changes nothing; a successful one makes ``change`` under the lock, then the new state
    is published."""

    @functools.wraps(change)
    def observe(self: ProfilingController, ret: int, *args: _P.args, **kwargs: _P.kwargs) -> None:
        if ret != ACL_SUCCESS:
            return
        with self._lock:
            change(self, *args, **kwargs)
        self.publish_state()

    return observe


class ProfilingController:
    """Executes profiling commands and follows the job's own profiling calls.

    Uses the context and the device binder (profiling calls need a current context)."""

    def __init__(self, ctx: AgentContext, binder: DeviceBinder, output_path: str) -> None:
        self.ctx = ctx
        self.binder = binder
        # Serialises aclmon's own session changes (control thread) against the job's
        # profiling calls (job threads), which make aclmon step aside.
        self._lock = threading.RLock()
        # requested configuration, reported in every ProfilingState (next_*), so a
        # viewer shows exactly what a start will do: live operator timings until
        # a SetProfilingConfig names flags.
        self.flags = LIVE_TIMINGS
        self.aicore_metrics = DEFAULT_METRICS
        self.devices: tuple[int, ...] = ()
        self.output_path = output_path
        # current state
        self.owner = ""
        self.initialized = False
        self.running = False
        self.subscribed = False
        self.active_flags = 0
        self.active_metrics = DEFAULT_METRICS
        self.active_devices: tuple[int, ...] = ()
        self.active_output = ""
        # aclmon's API-mode session
        self._config = 0
        # aclmon's live session
        self._live: LiveTimings | None = None
        # the job's profiling configs (handle -> devices, metrics, flags) and subscriptions
        self._job_configs: dict[int, tuple[tuple[int, ...], int, int]] = {}
        self._job_subscribed: set[int] = set()
        # the operator records of the newest session to files, read back (kept after
        # the stop, so the records written at the stop still arrive)
        self.files: SessionFiles | None = None

    # ------------------------------------------------------------ state
    def publish_state(self) -> None:
        event = self.ctx.make(
            ProfilingState,
            self.initialized,
            self.running,
            self.active_flags,
            self.active_metrics,
            self.active_devices,
            self.active_output,
            self.owner,
            self.subscribed,
            self.flags,
            self.aicore_metrics,
            self.devices,
        )
        self.ctx.state.profiling = event
        self.ctx.publish(event)

    def _original(self, name: str) -> Any:
        return self.ctx.original(f"prof.{name}")

    def _runtime_says(self) -> str:
        """``": <the runtime's last error message>"``, for calls that return only a handle."""
        try:
            text = str(self.ctx.acl.get_recent_err_msg() or "").strip()
        except Exception:  # older CANN without it
            text = ""
        return f": {text}" if text else ""

    def _refusal(self) -> Outcome | None:
        """The answer to a start/stop when someone else owns profiling, else None."""
        if self.owner == "acl.json":
            return (
                ACL_ERROR_PROF_ALREADY_RUN,
                "profiling is switched on by the job's acl.json (profiler.switch);"
                " aclmon leaves it alone: " + error_text(ACL_ERROR_PROF_ALREADY_RUN),
                {"owner": self.owner},
            )
        if self.owner == "job":
            code = ACL_ERROR_PROF_ALREADY_RUN if self.initialized else ACL_ERROR_PROF_API_CONFLICT
            return (
                code,
                "the job runs profiling itself (acl.prof.*); aclmon leaves it alone: "
                + error_text(code),
                {"owner": self.owner},
            )
        return None

    # ------------------------------------------------------------ commands
    def configure(
        self, flags: int, aicore_metrics: int, devices: tuple[int, ...], device_count: int
    ) -> Outcome:
        if flags < 0 or flags & ~PROF_FLAGS_ALL:
            return (
                ACL_ERROR_INVALID_PROFILING_CONFIG,
                f"unknown ACL_PROF_* bits in flags 0x{flags:x}",
                {},
            )
        if aicore_metrics not in AICORE_METRICS:
            return (
                ACL_ERROR_INVALID_PROFILING_CONFIG,
                f"unknown AI Core metrics {aicore_metrics}",
                {},
            )
        bad = [d for d in devices if d < 0 or (device_count > 0 and d >= device_count)]
        if bad:
            return (
                ACL_ERROR_INVALID_PROFILING_CONFIG,
                f"no such device {bad[0]} (the job sees {device_count})",
                {},
            )
        with self._lock:
            self.flags = flags
            self.aicore_metrics = aicore_metrics
            self.devices = tuple(sorted(set(devices)))
            active = self.owner == "aclmon"
        mode = "live operator timings" if flags == LIVE_TIMINGS else "API mode"
        names = ", ".join(prof_flag_names(flags)) or "none"
        message = f"profiling config set: {mode}; flags {names}; metrics {AICORE_METRICS[aicore_metrics][1]}"
        if active:
            message += " (takes effect at the next start)"
        self.publish_state()
        return ACL_SUCCESS, message, {"mode": "live" if flags == LIVE_TIMINGS else "api"}

    def start(self) -> Outcome:
        with self._lock:
            refusal = self._refusal()
            if refusal is not None:
                return refusal
            if self.owner == "aclmon":
                return ACL_SUCCESS, "profiling is already running (started by aclmon)", {}
            outcome = self._start_live() if self.flags == LIVE_TIMINGS else self._start_api()
        self.publish_state()
        return outcome

    def stop(self) -> Outcome:
        with self._lock:
            if self.owner != "aclmon":
                refusal = self._refusal()
                if refusal is not None:
                    return refusal
                return (
                    ACL_ERROR_PROF_NOT_RUN,
                    "aclmon has no profiling session to stop: "
                    + error_text(ACL_ERROR_PROF_NOT_RUN),
                    {},
                )
            outcome = self._teardown()
        self.publish_state()
        return outcome

    def _devices_to_profile(self) -> list[int]:
        return list(self.devices) if self.devices else self.ctx.state.devices_in_use()

    def _start_api(self) -> Outcome:
        devices = self._devices_to_profile()
        if not devices:
            return (
                ACL_ERROR_INVALID_PARAM,
                "the job has not set a device yet; name the devices in the profiling config",
                {},
            )
        self.binder.bind(devices[0])
        ret = self._original("init")(self.output_path)
        if ret != ACL_SUCCESS:
            if ret == ACL_ERROR_PROF_ALREADY_RUN:
                reason = "profiling already runs in this process (acl.json or msprof)"
            elif ret == ACL_ERROR_PROF_API_CONFLICT:
                reason = "the job uses model subscription; CANN forbids mixing it with API mode"
            else:
                reason = "acl.prof.init failed"
            return ret, f"{reason}: {error_text(ret)}", {}
        config = self._original("create_config")(devices, self.aicore_metrics, 0, self.flags)
        if not config:
            self._original("finalize")()
            return (
                ACL_ERROR_INVALID_PROFILING_CONFIG,
                "acl.prof.create_config refused the configuration" + self._runtime_says(),
                {},
            )
        ret = self._original("start")(config)
        if ret != ACL_SUCCESS:
            self._original("destroy_config")(config)
            self._original("finalize")()
            return ret, f"acl.prof.start failed: {error_text(ret)}", {}
        self._config = config
        self.owner = "aclmon"
        self.initialized = self.running = True
        self.active_flags = self.flags
        self.active_metrics = self.aicore_metrics
        self.active_devices = tuple(devices)
        self.active_output = self.output_path
        self.files = SessionFiles(self.ctx, self.output_path)
        data: dict[str, Any] = {"mode": "api", "output_path": self.output_path}
        message = f"profiling started on devices {devices}, writing to {self.output_path}"
        if self.ctx.state.models:
            message += (
                "; live operator timings need model subscription, which CANN does not allow"
                " together with API-mode profiling (ACL_ERROR_PROF_API_CONFLICT):"
                " set flags 0 for live timings instead"
            )
            data["live_timings"] = "unavailable in API mode"
        return ACL_SUCCESS, message, data

    def _start_live(self) -> Outcome:
        size, ret = self._original("get_op_desc_size")()
        if ret != ACL_SUCCESS or type(size) is not int or size <= 0:
            code = ret or ACL_ERROR_INVALID_PARAM
            return code, f"live operator timings are unavailable: {error_text(code)}", {}
        live = LiveTimings(self.ctx, self.binder, size, self.aicore_metrics)
        if not live.open():
            return (
                ACL_ERROR_INVALID_PROFILING_CONFIG,
                "acl.prof.create_subscribe_config refused the configuration" + self._runtime_says(),
                {},
            )
        self._live = live
        self.owner = "aclmon"
        self.running = self.subscribed = True
        self.initialized = False
        self.active_flags = LIVE_TIMINGS
        self.active_metrics = self.aicore_metrics
        self.active_devices = tuple(self.ctx.state.devices_in_use())
        self.active_output = ""
        models = list(self.ctx.state.models.values())
        failures = {}
        for model in models:
            code = live.subscribe(model.model_id, model.device_id)
            if code != ACL_SUCCESS:
                failures[model.model_id] = code
        if models and len(failures) == len(models):
            code = next(iter(failures.values()))
            self._teardown()
            reason = (
                "the job already uses API-mode profiling; CANN forbids model subscription"
                " alongside it"
                if code == ACL_ERROR_PROF_API_CONFLICT
                else "no model could be subscribed"
            )
            return code, f"{reason}: {error_text(code)}", {"failed": failures}
        message = (
            f"live operator timings on {len(models) - len(failures)} model(s)"
            if models
            else "live operator timings armed: models are subscribed as the job loads them"
        )
        if failures:
            message += f"; not subscribed: {failures}"
        return ACL_SUCCESS, message, {"mode": "live", "failed": failures}

    def _teardown(self) -> Outcome:
        """End aclmon's session; returns the first failing code of the calls."""
        first = ACL_SUCCESS
        if self._config:
            for ret in (
                self._original("stop")(self._config),
                self._original("destroy_config")(self._config),
                self._original("finalize")(),
            ):
                if first == ACL_SUCCESS and ret != ACL_SUCCESS:
                    first = ret
            self._config = 0
        if self._live is not None:
            ret = self._live.close()
            if first == ACL_SUCCESS:
                first = ret
            self._live = None
        self.owner = ""
        self.initialized = self.running = self.subscribed = False
        # Nothing runs: nothing is active (the next_* configuration is kept).
        self.active_flags = 0
        self.active_devices = ()
        self.active_output = ""
        if first == ACL_SUCCESS:
            return ACL_SUCCESS, "profiling stopped", {}
        return first, f"profiling stopped with an error: {error_text(first)}", {}

    # ------------------------------------------------------------ the job's side
    def step_aside(self, reason: str) -> None:
        """End aclmon's session (if any) before the job uses profiling or finalizes."""
        with self._lock:
            if self.owner != "aclmon":
                return
            self._teardown()
        self.ctx.log_line("warning", f"aclmon stopped its profiling session: {reason}")
        self.publish_state()

    def model_loaded(self, model_id: int, device: int) -> None:
        if self._live is not None:
            self.ctx.submit(lambda: self._subscribe_later(model_id, device))

    def _subscribe_later(self, model_id: int, device: int) -> None:
        with self._lock:
            live = self._live
            if live is None or model_id not in self.ctx.state.models:
                return
            code = live.subscribe(model_id, device)
        if code != ACL_SUCCESS:
            self.ctx.log_line(
                "warning",
                f"live operator timings: model {model_id} not subscribed: {error_text(code)}",
            )

    def model_unloading(self, model_id: int) -> None:
        live = self._live
        if live is not None and model_id in live.models:
            with self._lock:
                if self._live is not None:
                    self._live.unsubscribe(model_id)

    def acl_json_profiling(self, output: str, flags: int, aicore_metrics: int) -> None:
        with self._lock:
            self.owner = "acl.json"
            self.initialized = self.running = True
            self.active_output = output
            self.active_flags = flags
            self.active_metrics = aicore_metrics
            self.active_devices = ()  # acl.json profiles every device the job uses
            if output:
                self.files = SessionFiles(self.ctx, output)
        self.publish_state()

    @_job_call
    def job_init(self, path: str) -> None:
        self.owner = "job"
        self.initialized = True
        self.active_output = path

    def job_config(self, config: Any, devices: Any, metrics: Any, flags: Any) -> None:
        if config and len(self._job_configs) < 64:
            self._job_configs[config] = (tuple(devices or ()), int(metrics), int(flags))

    @_job_call
    def job_start(self, config: Any) -> None:
        devices, metrics, flags = self._job_configs.get(config, ((), DEFAULT_METRICS, 0))
        self.running = True
        self.active_devices, self.active_metrics, self.active_flags = devices, metrics, flags

    @_job_call
    def job_stop(self, config: Any) -> None:
        self._job_configs.pop(config, None)
        self.running = False

    @_job_call
    def job_finalize(self) -> None:
        if self.owner == "job" and not self._job_subscribed:
            self.owner = ""
        self.initialized = self.running = False

    @_job_call
    def job_subscribe(self, model_id: Any) -> None:
        self._job_subscribed.add(model_id)
        self.owner = "job"

    @_job_call
    def job_unsubscribe(self, model_id: Any) -> None:
        self._job_subscribed.discard(model_id)
        if self.owner == "job" and not self._job_subscribed and not self.initialized:
            self.owner = ""

    def poll_files(self) -> None:
        """Publish the operator records the session to files wrote since the last poll
        (control thread)."""
        files = self.files
        if files is not None:
            files.poll()

    def close(self) -> None:
        """End aclmon's session at agent shutdown (quietly: the job may be exiting)."""
        with self._lock:
            if self.owner == "aclmon":
                self._teardown()
