"""Installs the wrappers around the ``acl`` functions that change runtime state.

Ordinary calls get their wrapper from one builder
(:func:`aclmon.agent.wrappers.observed`) with the observers here: an optional
``before(args, kwargs)``, the call, then ``after(args, kwargs, result)``; the
msproftx observers are in :mod:`aclmon.agent.msproftx`. The few calls a job
makes in its inner loop have hand-written wrappers (:mod:`aclmon.agent.hot`,
which says why).

When a hooked call fails (a non-zero ACL code), the wrapper asks the runtime
why on the same thread (``acl.get_recent_err_msg``, which is per thread) and
sends that with a :class:`~aclmon.events.CallFailed` event; a call that
succeeds never pays for it. That read clears the runtime's message, so the
job's own ``get_recent_err_msg`` is wrapped to hand it the same text; the
observers that call ``acl`` themselves on the job's thread run inside
``ctx.errors.kept()`` (:mod:`aclmon.agent.errorstate`).

Wrappers are installed by replacing attributes of ``acl``, ``acl.rt``,
``acl.mdl`` and ``acl.prof``. A job that bound a function to a local name
before the agent started (``from acl.rt import set_device``) keeps the
unwrapped function: start the agent first (``aclmon run`` does).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.agent import hot
from aclmon.agent import models as loaded_models
from aclmon.agent.launches import LaunchSites
from aclmon.agent.memory import MemoryHooks
from aclmon.agent.msproftx import TxHooks
from aclmon.agent.single_ops import SingleOps
from aclmon.agent.wrappers import (
    NO_ACL_CODE,
    After,
    Before,
    Wrapper,
    arg,
    int_or,
    observed,
    ret_of,
)
from aclmon.events import (
    CallFailed,
    ContextCreated,
    ContextCurrent,
    ContextDestroyed,
    DeviceReset,
    DeviceSet,
    ModelLoaded,
    ModelUnloaded,
    StreamCreated,
    StreamDestroyed,
)

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext
    from aclmon.agent.exceptions import ExceptionCapture
    from aclmon.agent.profiling import ProfilingController

#: the thread id plog prints and the runtime reports (not Python's own ident)
_get_ident = threading.get_native_id


class Hooks:
    """Installs and removes the wrappers; keeps the originals in ``ctx.originals``.

    Uses the context, the profiling controller (the job's profiling calls make
    aclmon step aside), the exception capture (the job's callback joins its
    chain) and ``on_init`` (what the agent does after each ``acl.init``).
    """

    def __init__(
        self,
        ctx: AgentContext,
        profiling: ProfilingController,
        capture: ExceptionCapture,
        on_init: Callable[[Any, int], None],
    ) -> None:
        self.ctx = ctx
        self.acl = ctx.acl
        self.profiling = profiling
        self.capture = capture
        self.on_init = on_init
        self.tx = TxHooks(ctx)
        self.single_ops = SingleOps(ctx)
        #: the job's allocations and frees, and where it launched each stream's work
        self.memory = MemoryHooks(ctx)
        self.launches = LaunchSites(stacks=ctx.config.launch_stacks)
        #: the hot wrappers' calls still waiting (searched by the control thread)
        self.slow_calls = hot.SlowCalls(ctx)
        self._installed: list[tuple[str, Any, str, Any, Any]] = []

    @property
    def originals(self) -> dict[str, Callable[..., Any]]:
        return self.ctx.originals

    def original(self, qualified: str) -> Callable[..., Any]:
        return self.ctx.original(qualified)

    # ------------------------------------------------------------ install
    def install(self) -> None:
        for qualified, make in self._table().items():
            module_name, _, name = qualified.rpartition(".")
            module = getattr(self.acl, module_name, None) if module_name else self.acl
            original = getattr(module, name, None) if module is not None else None
            if original is None or getattr(original, "__aclmon_original__", None) is not None:
                continue  # absent in this CANN version, or already wrapped by another agent
            wrapper = make(qualified, original)
            # Builtins lack some attributes: update_wrapper copies what exists.
            with contextlib.suppress(AttributeError, TypeError):
                functools.update_wrapper(wrapper, original)
            wrapper.__aclmon_original__ = original  # type: ignore[attr-defined]  # marks our wrappers
            setattr(module, name, wrapper)
            self.ctx.originals[qualified] = original
            self.slow_calls.watch(qualified, wrapper)
            self._installed.append((qualified, module, name, original, wrapper))

    def uninstall(self, *, keep_error_readers: bool = False) -> None:
        """Put the originals back (only where our wrapper is still the attribute).

        ``keep_error_readers``: leave the readers of the threads' error state in place
        (a forked child runs unobserved, but a message the agent took before the fork
        is still the child's to read)."""
        readers = self.ctx.errors.wrappers() if keep_error_readers else {}
        kept = []
        for entry in reversed(self._installed):
            qualified, module, name, original, wrapper = entry
            if qualified in readers:
                kept.append(entry)
            elif getattr(module, name, None) is wrapper:
                setattr(module, name, original)
        self._installed[:] = kept[::-1]

    def _table(self) -> dict[str, Callable[[str, Callable[..., Any]], Wrapper]]:
        """qualified name -> ``make(name, original) -> wrapper``."""
        profiling = self.profiling
        plain = self._observed
        # Observers that call acl themselves on the job's thread leave its error state
        # as the job left it.
        kept = self.ctx.errors.keeping
        destroy_stream = self._after_release(StreamDestroyed, "stream", self._forget_stream)
        job_unsubscribe = plain(
            lambda a, k, r: profiling.job_unsubscribe(ret_of(r), arg(a, k, 0, "model_id"))
        )
        table: dict[str, Callable[[str, Callable[..., Any]], Wrapper]] = {
            **self.ctx.errors.wrappers(),
            "init": plain(kept(self._after_init)),
            "finalize": plain(self._after_finalize, kept(self._before_finalize)),
            "rt.set_device": plain(kept(self._after_set_device)),
            "rt.reset_device": plain(functools.partial(self._after_reset_device, force=False)),
            "rt.reset_device_force": plain(functools.partial(self._after_reset_device, force=True)),
            "rt.create_context": plain(kept(self._after_create_context)),
            "rt.destroy_context": plain(
                self._after_release(ContextDestroyed, "context", self._forget_streams)
            ),
            "rt.set_context": self._hot(hot.set_context),
            "rt.create_stream": plain(kept(self._after_create_stream)),
            "rt.create_stream_with_config": plain(kept(self._after_create_stream_with_config)),
            "rt.destroy_stream": plain(destroy_stream),
            "rt.destroy_stream_force": plain(destroy_stream),
            "rt.synchronize_stream": self._hot(hot.synchronize),
            "rt.synchronize_stream_with_timeout": self._hot(hot.synchronize),
            "rt.synchronize_device": self._hot(hot.synchronize),
            "rt.synchronize_device_with_timeout": self._hot(hot.synchronize),
            "rt.set_exception_info_callback": self._set_exception_info_callback,
            "mdl.load_from_file": plain(kept(functools.partial(self._after_load, from_file=True))),
            "mdl.load_from_file_with_mem": plain(
                kept(functools.partial(self._after_load, from_file=True))
            ),
            "mdl.load_from_mem": plain(kept(functools.partial(self._after_load, from_file=False))),
            "mdl.load_from_mem_with_mem": plain(
                kept(functools.partial(self._after_load, from_file=False))
            ),
            "mdl.unload": plain(
                self._after_release(ModelUnloaded, "model_id", self._forget_model),
                kept(self._before_unload),
            ),
            "mdl.execute": self._hot(hot.execute),
            "mdl.execute_async": self._hot(functools.partial(hot.execute, launches=self.launches)),
            "prof.init": plain(self._after_prof_init, kept(self._before_prof_init)),
            "prof.finalize": plain(
                lambda a, k, r: profiling.job_finalize(ret_of(r)),
            ),
            "prof.create_config": plain(self._after_prof_create_config),
            "prof.start": plain(
                lambda a, k, r: profiling.job_start(ret_of(r), arg(a, k, 0, "config"))
            ),
            "prof.stop": plain(
                lambda a, k, r: profiling.job_stop(ret_of(r), arg(a, k, 0, "config"))
            ),
            "prof.model_subscribe": plain(
                lambda a, k, r: profiling.job_subscribe(ret_of(r), arg(a, k, 0, "model_id")),
                kept(lambda a, k: profiling.step_aside("the job subscribes a model itself")),
            ),
            "prof.model_unsubscribe": job_unsubscribe,
            "prof.model_un_subscribe": job_unsubscribe,  # the same call, pyACL's other name
        }
        for qualified, after in self.tx.observers().items():
            table[qualified] = plain(after)
        table.update(self.single_ops.wrappers(self.call_failed))
        for qualified, after in self.memory.observers().items():
            table[qualified] = plain(after)
        # Last: the launch-site hooks wrap every other hook of a launch call (acl.op's
        # too), so the frame they read is the job's.
        return self.launches.compose(table, self.ctx.fail)

    def _observed(
        self, after: After | None, before: Before | None = None
    ) -> Callable[[str, Callable[..., Any]], Wrapper]:
        def make(name: str, original: Callable[..., Any]) -> Wrapper:
            failed = None if name in NO_ACL_CODE else self.call_failed
            return observed(name, original, self.ctx.fail, failed, after, before)

        return make

    def _hot(self, factory: Callable[..., Wrapper]) -> Callable[[str, Callable[..., Any]], Wrapper]:
        def make(name: str, original: Callable[..., Any]) -> Wrapper:
            return factory(self.ctx, name, original, self.call_failed)

        return make

    # ------------------------------------------------------------ failed calls
    def call_failed(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        """Runs on the failing call's thread: the runtime's message is per thread."""
        ret = ret_of(result)
        if ret == ACL_SUCCESS:
            return
        message = ""
        try:
            message = self.ctx.errors.take_message().strip()
        except Exception as exc:
            self.ctx.fail("acl.get_recent_err_msg", exc)
        stream = -1
        if name.startswith("rt.synchronize_stream") or name.startswith("rt.destroy_stream"):
            stream = arg(args, kwargs, 0, "stream")
        elif name == "mdl.execute_async":
            stream = arg(args, kwargs, 3, "stream")
        self.ctx.emit(CallFailed, name, int(ret), message, _get_ident(), int_or(stream, -1))

    # ------------------------------------------------------------ helpers used by observers
    def _current_context(self) -> int:
        context, ret = self.ctx.original("rt.get_context")()
        return int(context) if ret == ACL_SUCCESS else 0

    def _current_device(self) -> int:
        device, ret = self.ctx.original("rt.get_device")()
        return int(device) if ret == ACL_SUCCESS else -1

    def _stream_id(self, stream: int) -> int:
        try:
            stream_id, ret = self.ctx.original("rt.stream_get_id")(stream)
        except Exception:  # older CANN has no stream_get_id, or it rejects the default stream
            return -1
        return int(stream_id) if ret == ACL_SUCCESS else -1

    def _publish_stream(self, stream: int, priority: int, flags: int) -> None:
        """A stream the job created in its current context."""
        context = self._current_context()
        device = self.ctx.state.device_of_context(context)
        if device < 0:
            device = self._current_device()
        self._stream_created(device, context, stream, priority, flags)

    def _stream_created(
        self, device: int, context: int, stream: int, priority: int = 0, flags: int = 0
    ) -> None:
        """Stream 0 is the context's default stream: its handle while the context is
        current (acllite and the samples execute on it, so viewers must know its id)."""
        ctx = self.ctx
        event = ctx.make(
            StreamCreated, device, context, stream, self._stream_id(stream), priority, flags
        )
        ctx.state.stream_created(event)
        ctx.publish(event)

    def _context_created(self, device: int, context: int, is_default: bool) -> None:
        ctx = self.ctx
        created = ctx.make(ContextCreated, device, context, is_default)
        ctx.state.context_created(created)
        ctx.publish(created)

    def _publish_current(self, context: int) -> None:
        current = self.ctx.make(ContextCurrent, context, _get_ident())
        self.ctx.state.current[current.thread_id] = current
        self.ctx.publish(current)

    def _publish_default_context(self, device: int) -> None:
        """set_device made (or reused) the device's default context and stream."""
        context = self._current_context()
        if not context:
            return
        if context not in self.ctx.state.contexts:
            self._context_created(device, context, True)
            self._stream_created(device, context, 0)
        self._publish_current(context)

    def _after_release(self, event: type, name: str, forget: Callable[[Any], object]) -> After:
        """The observer of a call that destroys (or unloads) what its first argument,
        ``name``, names: once it succeeded ``forget(handle)`` drops that from the state;
        ``event`` says what happened either way."""
        emit = self.ctx.emit

        def after(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
            handle = arg(args, kwargs, 0, name)
            ret = ret_of(result)
            if ret == ACL_SUCCESS:
                forget(handle)
            emit(event, handle, ret)

        return after

    def _forget_stream(self, stream: int) -> None:
        self.ctx.state.stream_destroyed(stream)
        self.launches.forget(stream)

    def _forget_model(self, model_id: int) -> None:
        self.ctx.state.models.pop(model_id, None)

    def _forget_streams(self, context: int) -> None:
        """The context is gone, and the streams it held with it."""
        ctx = self.ctx
        for key in ctx.state.context_destroyed(context):
            if isinstance(key, int):
                ctx.emit(StreamDestroyed, key, ACL_SUCCESS)

    def _forget_context(self, context: int) -> None:
        self._forget_streams(context)
        self.ctx.emit(ContextDestroyed, context, ACL_SUCCESS)

    # ------------------------------------------------------------ acl.init / finalize
    def _after_init(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        self.on_init(arg(args, kwargs, 0, "config_path"), ret_of(result))

    def _before_finalize(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        # aclmon's own profiling session must end before the runtime does.
        self.profiling.step_aside("the job is finalizing acl")

    def _after_finalize(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if ret_of(result) != ACL_SUCCESS:
            return
        # The runtime session and its callback are gone; the next acl.init registers again.
        self.capture.registered = False
        # Finalize releases whatever the job did not: say so, so no viewer keeps stale state.
        ctx = self.ctx
        state = ctx.state
        for model_id in list(state.models):
            state.models.pop(model_id, None)
            ctx.emit(ModelUnloaded, model_id, ACL_SUCCESS)
        for context in list(state.contexts):
            self._forget_context(context)
        for device in list(state.device_refs):
            state.device_reset(device, force=True)
            ctx.emit(DeviceReset, device, ACL_SUCCESS)
        state.current.clear()

    # ------------------------------------------------------------ devices
    def _after_set_device(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        device = arg(args, kwargs, 0, "device_id")
        ret = ret_of(result)
        event = self.ctx.make(DeviceSet, device, ret)
        if ret == ACL_SUCCESS:
            self.ctx.state.device_set(event)
        self.ctx.publish(event)
        if ret == ACL_SUCCESS:
            self._publish_default_context(device)

    def _after_reset_device(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, *, force: bool
    ) -> None:
        device = arg(args, kwargs, 0, "device_id")
        ret = ret_of(result)
        state = self.ctx.state
        if ret == ACL_SUCCESS and state.device_reset(device, force):
            context = state.default_context.get(device)
            if context:
                self._forget_context(context)
        self.ctx.emit(DeviceReset, device, ret)

    # ------------------------------------------------------------ contexts
    def _after_create_context(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        context, ret = result
        if ret != ACL_SUCCESS:
            return
        device = arg(args, kwargs, 0, "device_id")
        self._context_created(device, context, False)
        # aclrtCreateContext also makes the new context current on this thread.
        self._publish_current(context)
        self._stream_created(device, context, 0)  # it has a default stream of its own

    # ------------------------------------------------------------ streams
    def _after_create_stream(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        stream, ret = result
        if ret == ACL_SUCCESS:
            self._publish_stream(stream, 0, 0)

    def _after_create_stream_with_config(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        stream, ret = result
        if ret == ACL_SUCCESS:
            priority = arg(args, kwargs, 0, "priority") or 0
            flags = arg(args, kwargs, 1, "flag") or 0
            self._publish_stream(stream, int(priority), int(flags))

    # ------------------------------------------------------------ exception callback
    def _set_exception_info_callback(self, name: str, original: Callable[..., Any]) -> Wrapper:
        capture = self.capture
        fail = self.ctx.fail
        kept = self.ctx.errors.kept

        # Not from the builder: it may answer without calling the original at all.
        def set_exception_info_callback(*args: Any, **kwargs: Any) -> Any:
            # The agent's callback stays registered and the job's becomes the next link of
            # the chain. Anything but a plain valid call goes to the original, so the job
            # sees exactly the error (TypeError, ACL code) it would see without the agent.
            callback = args[0] if args else None
            if (
                capture.registered
                and len(args) <= 1
                and not kwargs
                and (callback is None or callable(callback))
            ):
                capture.job_callback = callback
                return ACL_SUCCESS
            result = original(*args, **kwargs)
            try:
                if ret_of(result) == ACL_SUCCESS:
                    capture.job_callback = arg(args, kwargs, 0, "fn")
                    if capture.registered:
                        with kept():  # the original call replaced ours: put it back
                            capture.reregister()
            except Exception as exc:
                fail("hook rt.set_exception_info_callback", exc)
            return result

        return set_exception_info_callback

    # ------------------------------------------------------------ models
    def _after_load(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, *, from_file: bool
    ) -> None:
        model_id, ret = result
        if ret != ACL_SUCCESS:
            return
        if from_file:
            path = str(arg(args, kwargs, 0, "model_path"))
            name, op_count, op_types = loaded_models.from_file(path, int(model_id))
        else:
            pointer, size = arg(args, kwargs, 0, "model"), arg(args, kwargs, 1, "model_size")
            name, op_count, op_types = loaded_models.from_memory(
                int(pointer), int(size), int(model_id)
            )
        for op_name, op_type in op_types.items():  # the simulator's description names them
            self.ctx.state.learn_op_type(op_name, op_type)
        self.memory.model_loaded(int(model_id), args, kwargs, from_file=from_file)
        device = self._current_device()
        # op_count 0 = unknown (a real .om: pyACL's model description lists no operators).
        event = self.ctx.make(ModelLoaded, int(model_id), device, name, op_count)
        self.ctx.state.models[int(model_id)] = event
        self.ctx.publish(event)
        self.profiling.model_loaded(int(model_id), device)

    def _before_unload(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        # Live timings subscribed this model: unsubscribe before it goes away.
        self.profiling.model_unloading(arg(args, kwargs, 0, "model_id"))

    # ------------------------------------------------------------ profiling by the job
    def _before_prof_init(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.profiling.step_aside("the job called acl.prof.init")

    def _after_prof_init(self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        path = arg(args, kwargs, 0, "path")
        self.profiling.job_init(ret_of(result), str(path or ""))

    def _after_prof_create_config(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any
    ) -> None:
        devices = arg(args, kwargs, 0, "device_list")
        metrics = arg(args, kwargs, 1, "aicore_metrics")
        flags = arg(args, kwargs, 3, "data_type_config")
        self.profiling.job_config(result, devices, metrics, flags)
