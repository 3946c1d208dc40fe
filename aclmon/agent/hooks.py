"""Wrappers around the ``acl`` functions that change runtime state.

A wrapper calls the original with exactly the arguments it got and hands back
exactly what it returned or raised; the observation happens around that call
and is fenced by ``try`` so that nothing the agent does can reach the job.
The observation on the job's thread is kept to building one event tuple and
handing it to the publisher's non-blocking queue; anything slower (decoding,
profiling calls, subscribing a model) goes to the agent's control thread.

Wrappers are installed by replacing attributes of ``acl``, ``acl.rt``,
``acl.mdl`` and ``acl.prof``. A job that bound a function to a local name
before the agent started (``from acl.rt import set_device``) keeps the
unwrapped function: start the agent first (``aclmon run`` does).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.events import (
    ContextCreated,
    ContextCurrent,
    ContextDestroyed,
    DeviceReset,
    DeviceSet,
    ExecuteBegin,
    ExecuteEnd,
    ModelUnloaded,
    StreamCreated,
    StreamDestroyed,
    StreamSyncBegin,
    StreamSynchronized,
    TxMark,
    TxRange,
)

if TYPE_CHECKING:
    from aclmon.agent.core import Agent

Wrapper = Callable[..., Any]

#: the ``stream`` of StreamSyncBegin/StreamSynchronized for ``synchronize_device``
DEVICE_SYNC = -1

_get_ident = threading.get_ident
_perf_ns = time.perf_counter_ns
_time_ns = time.time_ns
_tuple_new = tuple.__new__


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    """Argument ``index`` of a call, positional or by keyword (None if absent)."""
    if len(args) > index:
        return args[index]
    return kwargs.get(name)


def _ret_of(result: Any) -> int:
    """The ACL return code of a result: a bare int, or the last item of a tuple."""
    if type(result) is int:
        return result
    if type(result) is tuple and result and type(result[-1]) is int:
        return result[-1]
    return -1


class Hooks:
    """Installs and removes the wrappers; keeps the originals for the agent's own calls."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.acl = agent.acl
        #: "rt.set_device" -> the original function (the agent calls these, never wrappers)
        self.originals: dict[str, Callable[..., Any]] = {}
        #: code object of a wrapper -> the Begin event a long call of it deserves
        self.slow_call_codes: dict[Any, type] = {}
        self._installed: list[tuple[Any, str, Any, Any]] = []
        #: prof stamp handle -> message (msproftx), and open push ranges per thread
        self._stamp_messages: dict[int, str] = {}
        self._tx_pushed: dict[int, list[tuple[str, int]]] = {}
        self._tx_ranges: dict[int, tuple[str, int]] = {}

    # ------------------------------------------------------------ install
    def original(self, qualified: str) -> Callable[..., Any]:
        """The unwrapped ``acl`` function ``"rt.get_context"`` (or ``"init"`` for top level)."""
        fn = self.originals.get(qualified)
        if fn is not None:
            return fn
        module_name, _, name = qualified.rpartition(".")
        module = getattr(self.acl, module_name) if module_name else self.acl
        return getattr(module, name)  # type: ignore[no-any-return]

    def install(self) -> None:
        for qualified, factory in self._table().items():
            module_name, _, name = qualified.rpartition(".")
            module = getattr(self.acl, module_name, None) if module_name else self.acl
            original = getattr(module, name, None) if module is not None else None
            if original is None or getattr(original, "__aclmon_original__", None) is not None:
                continue  # absent in this CANN version, or already wrapped by another agent
            wrapper = factory(original)
            # Builtins lack some attributes: update_wrapper copies what exists.
            with contextlib.suppress(AttributeError, TypeError):
                functools.update_wrapper(wrapper, original)
            wrapper.__aclmon_original__ = original  # type: ignore[attr-defined]
            setattr(module, name, wrapper)
            self.originals[qualified] = original
            if qualified.startswith(("rt.synchronize_stream", "rt.synchronize_device")):
                self.slow_call_codes[wrapper.__code__] = StreamSyncBegin
            elif qualified.startswith("mdl.execute"):
                self.slow_call_codes[wrapper.__code__] = ExecuteBegin
            self._installed.append((module, name, original, wrapper))

    def uninstall(self) -> None:
        """Put the originals back (only where our wrapper is still the attribute)."""
        for module, name, original, wrapper in reversed(self._installed):
            if getattr(module, name, None) is wrapper:
                setattr(module, name, original)
        self._installed.clear()

    def _table(self) -> dict[str, Callable[[Any], Wrapper]]:
        return {
            "init": self._init,
            "finalize": self._finalize,
            "rt.set_device": self._set_device,
            "rt.reset_device": functools.partial(self._reset_device, force=False),
            "rt.reset_device_force": functools.partial(self._reset_device, force=True),
            "rt.create_context": self._create_context,
            "rt.destroy_context": self._destroy_context,
            "rt.set_context": self._set_context,
            "rt.create_stream": self._create_stream,
            "rt.create_stream_with_config": self._create_stream_with_config,
            "rt.destroy_stream": self._destroy_stream,
            "rt.destroy_stream_force": self._destroy_stream,
            "rt.synchronize_stream": functools.partial(self._synchronize_stream, timed=False),
            "rt.synchronize_stream_with_timeout": functools.partial(
                self._synchronize_stream, timed=True
            ),
            "rt.synchronize_device": functools.partial(self._synchronize_device, timed=False),
            "rt.synchronize_device_with_timeout": functools.partial(
                self._synchronize_device, timed=True
            ),
            "rt.set_exception_info_callback": self._set_exception_info_callback,
            "mdl.load_from_file": functools.partial(self._load_model, from_file=True),
            "mdl.load_from_file_with_mem": functools.partial(self._load_model, from_file=True),
            "mdl.load_from_mem": functools.partial(self._load_model, from_file=False),
            "mdl.load_from_mem_with_mem": functools.partial(self._load_model, from_file=False),
            "mdl.unload": self._unload_model,
            "mdl.execute": functools.partial(self._execute, asynchronous=False),
            "mdl.execute_async": functools.partial(self._execute, asynchronous=True),
            "prof.init": self._prof_init,
            "prof.finalize": self._prof_finalize,
            "prof.create_config": self._prof_create_config,
            "prof.start": self._prof_start,
            "prof.stop": self._prof_stop,
            "prof.model_subscribe": self._prof_model_subscribe,
            "prof.model_unsubscribe": self._prof_model_unsubscribe,
            "prof.set_stamp_trace_message": self._tx_set_message,
            "prof.mark": self._tx_mark,
            "prof.mark_ex": self._tx_mark_ex,
            "prof.destroy_stamp": self._tx_destroy_stamp,
            "prof.push": self._tx_push,
            "prof.pop": self._tx_pop,
            "prof.range_start": self._tx_range_start,
            "prof.range_stop": self._tx_range_stop,
        }

    # ------------------------------------------------------------ helpers used by observers
    def _current_context(self) -> int:
        context, ret = self.original("rt.get_context")()
        return int(context) if ret == ACL_SUCCESS else 0

    def _current_device(self) -> int:
        device, ret = self.original("rt.get_device")()
        return int(device) if ret == ACL_SUCCESS else -1

    def _stream_id(self, stream: int) -> int:
        try:
            stream_id, ret = self.original("rt.stream_get_id")(stream)
        except Exception:  # older CANN has no stream_get_id, or it rejects the default stream
            return -1
        return int(stream_id) if ret == ACL_SUCCESS else -1

    def _publish_stream(self, stream: int, priority: int, flags: int) -> None:
        agent = self.agent
        context = self._current_context()
        device = agent.state.device_of_context(context)
        if device < 0:
            device = self._current_device()
        event = agent.make(
            StreamCreated, device, context, stream, self._stream_id(stream), priority, flags
        )
        agent.state.stream_created(event)
        agent.publish(event)

    def _publish_default_context(self, device: int) -> None:
        """set_device made (or reused) the device's default context and stream."""
        agent = self.agent
        state = agent.state
        context = self._current_context()
        if not context:
            return
        if context not in state.contexts:
            created = agent.make(ContextCreated, device, context, True)
            state.context_created(created)
            agent.publish(created)
            default_stream = agent.make(StreamCreated, device, context, 0, self._stream_id(0), 0, 0)
            state.stream_created(default_stream)
            agent.publish(default_stream)
        current = agent.make(ContextCurrent, context, _get_ident())
        state.current[current.thread_id] = current
        agent.publish(current)

    def _forget_context(self, context: int, ret: int) -> None:
        agent = self.agent
        for key in agent.state.context_destroyed(context):
            if isinstance(key, int):
                agent.emit(StreamDestroyed, key, ret)
        agent.emit(ContextDestroyed, context, ret)

    # ------------------------------------------------------------ acl.init / finalize
    def _init(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def init(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                config_path = _arg(args, kwargs, 0, "config_path")
                agent.on_acl_init(config_path, _ret_of(result))
            except Exception as exc:
                agent.fail("hook acl.init", exc)
            return result

        return init

    def _finalize(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def finalize(*args: Any, **kwargs: Any) -> Any:
            try:
                # aclmon's own profiling session must end before the runtime does.
                agent.profiling.step_aside("the job is finalizing acl")
            except Exception as exc:
                agent.fail("hook acl.finalize", exc)
            result = original(*args, **kwargs)
            try:
                agent.on_acl_finalize(_ret_of(result))
            except Exception as exc:
                agent.fail("hook acl.finalize", exc)
            return result

        return finalize

    # ------------------------------------------------------------ devices
    def _set_device(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def set_device(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                device = _arg(args, kwargs, 0, "device_id")
                ret = _ret_of(result)
                event = agent.make(DeviceSet, device, ret)
                if ret == ACL_SUCCESS:
                    agent.state.device_set(event)
                agent.publish(event)
                if ret == ACL_SUCCESS:
                    self._publish_default_context(device)
            except Exception as exc:
                agent.fail("hook rt.set_device", exc)
            return result

        return set_device

    def _reset_device(self, original: Callable[..., Any], *, force: bool) -> Wrapper:
        agent = self.agent

        def reset_device(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                device = _arg(args, kwargs, 0, "device_id")
                ret = _ret_of(result)
                state = agent.state
                if ret == ACL_SUCCESS and state.device_reset(device, force):
                    context = state.default_context.get(device)
                    if context:
                        self._forget_context(context, ret)
                agent.emit(DeviceReset, device, ret)
            except Exception as exc:
                agent.fail("hook rt.reset_device", exc)
            return result

        return reset_device

    # ------------------------------------------------------------ contexts
    def _create_context(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def create_context(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                context, ret = result
                if ret == ACL_SUCCESS:
                    device = _arg(args, kwargs, 0, "device_id")
                    created = agent.make(ContextCreated, device, context, False)
                    agent.state.context_created(created)
                    agent.publish(created)
                    # aclrtCreateContext also makes the new context current on this thread.
                    current = agent.make(ContextCurrent, context, _get_ident())
                    agent.state.current[current.thread_id] = current
                    agent.publish(current)
            except Exception as exc:
                agent.fail("hook rt.create_context", exc)
            return result

        return create_context

    def _destroy_context(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def destroy_context(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                context = _arg(args, kwargs, 0, "context")
                ret = _ret_of(result)
                if ret == ACL_SUCCESS:
                    self._forget_context(context, ret)
                else:
                    agent.emit(ContextDestroyed, context, ret)
            except Exception as exc:
                agent.fail("hook rt.destroy_context", exc)
            return result

        return destroy_context

    def _set_context(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent
        publish = agent.publish_fn
        counter = agent.counter
        current = agent.state.current

        def set_context(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                if result == ACL_SUCCESS:
                    context = args[0] if args else kwargs.get("context")
                    thread = _get_ident()
                    previous = current.get(thread)
                    # Jobs often set the same context in every step: only a change is news.
                    if previous is None or previous[2] != context:
                        event = _tuple_new(
                            ContextCurrent, (next(counter), _time_ns(), context, thread)
                        )
                        current[thread] = event
                        publish(event)
            except Exception as exc:
                agent.fail("hook rt.set_context", exc)
            return result

        return set_context

    # ------------------------------------------------------------ streams
    def _create_stream(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def create_stream(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                stream, ret = result
                if ret == ACL_SUCCESS:
                    self._publish_stream(stream, 0, 0)
            except Exception as exc:
                agent.fail("hook rt.create_stream", exc)
            return result

        return create_stream

    def _create_stream_with_config(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def create_stream_with_config(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                stream, ret = result
                if ret == ACL_SUCCESS:
                    priority = _arg(args, kwargs, 0, "priority") or 0
                    flags = _arg(args, kwargs, 1, "flag") or 0
                    self._publish_stream(stream, int(priority), int(flags))
            except Exception as exc:
                agent.fail("hook rt.create_stream_with_config", exc)
            return result

        return create_stream_with_config

    def _destroy_stream(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def destroy_stream(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                stream = _arg(args, kwargs, 0, "stream")
                ret = _ret_of(result)
                if ret == ACL_SUCCESS:
                    agent.state.stream_destroyed(stream)
                agent.emit(StreamDestroyed, stream, ret)
            except Exception as exc:
                agent.fail("hook rt.destroy_stream", exc)
            return result

        return destroy_stream

    def _synchronize_stream(self, original: Callable[..., Any], *, timed: bool) -> Wrapper:
        agent = self.agent
        publish = agent.publish_fn
        counter = agent.counter
        fail = agent.fail
        wall_offset = agent.wall_offset

        # StreamSyncBegin is not published from here: the control thread finds calls
        # still waiting after SLOW_CALL_NS on the threads' stacks (this code object,
        # with `start` and `stream` set and no `duration` yet) and announces them.
        def synchronize_stream(*args: Any, **kwargs: Any) -> Any:
            stream = timeout_ms = -1
            try:
                stream = args[0] if args else kwargs.get("stream", 0)
                if timed:
                    timeout_ms = args[1] if len(args) > 1 else kwargs.get("timeout", -1)
            except Exception as exc:
                fail("hook rt.synchronize_stream", exc)
            start = _perf_ns()
            result = original(*args, **kwargs)
            end = _perf_ns()
            duration = end - start
            try:
                ret = result if type(result) is int else _ret_of(result)
                # agent.emit(StreamSynchronized, ...) inlined: this is the hottest path. The
                # wall-clock time is the end reading plus the offset the agent keeps in sync.
                publish(
                    _tuple_new(
                        StreamSynchronized,
                        (next(counter), end + wall_offset[0], stream, duration, ret, timeout_ms),
                    )
                )
            except Exception as exc:
                fail("hook rt.synchronize_stream", exc)
            return result

        return synchronize_stream

    def _synchronize_device(self, original: Callable[..., Any], *, timed: bool) -> Wrapper:
        agent = self.agent
        fail = agent.fail

        # Published as StreamSynchronized with stream = DEVICE_SYNC (every stream of the
        # thread's current device); a long wait gets its StreamSyncBegin like a stream sync.
        def synchronize_device(*args: Any, **kwargs: Any) -> Any:
            stream = DEVICE_SYNC
            timeout_ms = -1
            try:
                if timed:
                    timeout_ms = args[0] if args else kwargs.get("timeout", -1)
            except Exception as exc:
                fail("hook rt.synchronize_device", exc)
            start = _perf_ns()
            result = original(*args, **kwargs)
            duration = _perf_ns() - start
            try:
                agent.emit(StreamSynchronized, stream, duration, _ret_of(result), timeout_ms)
            except Exception as exc:
                fail("hook rt.synchronize_device", exc)
            return result

        return synchronize_device

    # ------------------------------------------------------------ exception callback
    def _set_exception_info_callback(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def set_exception_info_callback(*args: Any, **kwargs: Any) -> Any:
            # The agent's callback stays registered and the job's becomes the next link of
            # the chain. Anything but a plain valid call goes to the original, so the job
            # sees exactly the error (TypeError, ACL code) it would see without the agent.
            capture = agent.exceptions
            callback = args[0] if args else None
            if (
                capture is not None
                and capture.registered
                and len(args) <= 1
                and not kwargs
                and (callback is None or callable(callback))
            ):
                capture.job_callback = callback
                return ACL_SUCCESS
            result = original(*args, **kwargs)
            try:
                if capture is not None and _ret_of(result) == ACL_SUCCESS:
                    capture.job_callback = _arg(args, kwargs, 0, "fn")
                    if capture.registered:
                        capture.reregister()  # the original call replaced ours: put it back
            except Exception as exc:
                agent.fail("hook rt.set_exception_info_callback", exc)
            return result

        return set_exception_info_callback

    # ------------------------------------------------------------ models
    def _load_model(self, original: Callable[..., Any], *, from_file: bool) -> Wrapper:
        agent = self.agent

        def load_model(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                model_id, ret = result
                if ret == ACL_SUCCESS:
                    if from_file:
                        path = _arg(args, kwargs, 0, "model_path")
                        name = os.path.basename(str(path))
                    else:
                        name = f"model-{model_id}"
                    agent.on_model_loaded(int(model_id), self._current_device(), name)
            except Exception as exc:
                agent.fail("hook mdl.load", exc)
            return result

        return load_model

    def _unload_model(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def unload(*args: Any, **kwargs: Any) -> Any:
            model_id = _arg(args, kwargs, 0, "model_id")
            try:
                # Live timings subscribed this model: unsubscribe before it goes away.
                agent.profiling.model_unloading(model_id)
            except Exception as exc:
                agent.fail("hook mdl.unload", exc)
            result = original(*args, **kwargs)
            try:
                ret = _ret_of(result)
                if ret == ACL_SUCCESS:
                    agent.state.models.pop(model_id, None)
                agent.emit(ModelUnloaded, model_id, ret)
            except Exception as exc:
                agent.fail("hook mdl.unload", exc)
            return result

        return unload

    def _execute(self, original: Callable[..., Any], *, asynchronous: bool) -> Wrapper:
        agent = self.agent
        publish = agent.publish_fn
        counter = agent.counter
        fail = agent.fail
        wall_offset = agent.wall_offset

        # ExecuteBegin is deferred like StreamSyncBegin (see synchronize_stream).
        def execute(*args: Any, **kwargs: Any) -> Any:
            model_id = stream = -1
            try:
                model_id = args[0] if args else kwargs.get("model_id")
                stream = 0
                if asynchronous:
                    stream = args[3] if len(args) > 3 else kwargs.get("stream", 0)
            except Exception as exc:
                fail("hook mdl.execute", exc)
            start = _perf_ns()
            result = original(*args, **kwargs)
            end = _perf_ns()
            duration = end - start
            try:
                ret = result if type(result) is int else _ret_of(result)
                publish(
                    _tuple_new(
                        ExecuteEnd,
                        (next(counter), end + wall_offset[0], model_id, stream, duration, ret),
                    )
                )
            except Exception as exc:
                fail("hook mdl.execute", exc)
            return result

        return execute

    # ------------------------------------------------------------ profiling by the job
    def _prof_init(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def init(*args: Any, **kwargs: Any) -> Any:
            try:
                agent.profiling.step_aside("the job called acl.prof.init")
            except Exception as exc:
                agent.fail("hook prof.init", exc)
            result = original(*args, **kwargs)
            try:
                path = _arg(args, kwargs, 0, "path")
                agent.profiling.job_init(str(path or ""), _ret_of(result))
            except Exception as exc:
                agent.fail("hook prof.init", exc)
            return result

        return init

    def _prof_finalize(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def finalize(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                agent.profiling.job_finalize(_ret_of(result))
            except Exception as exc:
                agent.fail("hook prof.finalize", exc)
            return result

        return finalize

    def _prof_create_config(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def create_config(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                devices = _arg(args, kwargs, 0, "device_list")
                metrics = _arg(args, kwargs, 1, "aicore_metrics")
                flags = _arg(args, kwargs, 3, "data_type_config")
                agent.profiling.job_config(result, devices, metrics, flags)
            except Exception as exc:
                agent.fail("hook prof.create_config", exc)
            return result

        return create_config

    def _prof_start(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def start(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                agent.profiling.job_start(_arg(args, kwargs, 0, "config"), _ret_of(result))
            except Exception as exc:
                agent.fail("hook prof.start", exc)
            return result

        return start

    def _prof_stop(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def stop(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                agent.profiling.job_stop(_arg(args, kwargs, 0, "config"), _ret_of(result))
            except Exception as exc:
                agent.fail("hook prof.stop", exc)
            return result

        return stop

    def _prof_model_subscribe(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def model_subscribe(*args: Any, **kwargs: Any) -> Any:
            model_id = _arg(args, kwargs, 0, "model_id")
            try:
                agent.profiling.step_aside("the job subscribes a model itself")
            except Exception as exc:
                agent.fail("hook prof.model_subscribe", exc)
            result = original(*args, **kwargs)
            try:
                agent.profiling.job_subscribe(model_id, _ret_of(result))
            except Exception as exc:
                agent.fail("hook prof.model_subscribe", exc)
            return result

        return model_subscribe

    def _prof_model_unsubscribe(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def model_unsubscribe(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                agent.profiling.job_unsubscribe(_arg(args, kwargs, 0, "model_id"), _ret_of(result))
            except Exception as exc:
                agent.fail("hook prof.model_unsubscribe", exc)
            return result

        return model_unsubscribe

    # ------------------------------------------------------------ msproftx
    def _tx_set_message(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent
        messages = self._stamp_messages

        def set_stamp_trace_message(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                if _ret_of(result) == ACL_SUCCESS and len(messages) < 4096:
                    stamp = _arg(args, kwargs, 0, "stamp")
                    message = str(_arg(args, kwargs, 1, "msg"))
                    length = _arg(args, kwargs, 2, "msg_len")
                    if isinstance(length, int):  # the runtime keeps msg_len bytes
                        message = message.encode()[: max(length, 0)].decode("utf-8", "replace")
                    messages[stamp] = message
            except Exception as exc:
                agent.fail("hook prof.set_stamp_trace_message", exc)
            return result

        return set_stamp_trace_message

    def _tx_mark(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent
        messages = self._stamp_messages

        def mark(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                if _ret_of(result) == ACL_SUCCESS:
                    agent.emit(TxMark, messages.get(_arg(args, kwargs, 0, "stamp"), ""))
            except Exception as exc:
                agent.fail("hook prof.mark", exc)
            return result

        return mark

    def _tx_mark_ex(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent

        def mark_ex(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                if _ret_of(result) == ACL_SUCCESS:
                    agent.emit(TxMark, str(_arg(args, kwargs, 0, "msg")))
            except Exception as exc:
                agent.fail("hook prof.mark_ex", exc)
            return result

        return mark_ex

    def _tx_destroy_stamp(self, original: Callable[..., Any]) -> Wrapper:
        messages = self._stamp_messages

        def destroy_stamp(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            with contextlib.suppress(Exception):
                messages.pop(_arg(args, kwargs, 0, "stamp"), None)
            return result

        return destroy_stamp

    def _tx_push(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent
        messages = self._stamp_messages
        pushed = self._tx_pushed

        def push(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                if _ret_of(result) == ACL_SUCCESS:
                    stack = pushed.setdefault(_get_ident(), [])
                    if len(stack) < 256:
                        message = messages.get(_arg(args, kwargs, 0, "stamp"), "")
                        stack.append((message, _time_ns()))
            except Exception as exc:
                agent.fail("hook prof.push", exc)
            return result

        return push

    def _tx_pop(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent
        pushed = self._tx_pushed

        def pop(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                stack = pushed.get(_get_ident())
                if _ret_of(result) == ACL_SUCCESS and stack:
                    message, start_ns = stack.pop()
                    agent.emit(TxRange, message, start_ns, _time_ns())
            except Exception as exc:
                agent.fail("hook prof.pop", exc)
            return result

        return pop

    def _tx_range_start(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent
        messages = self._stamp_messages
        ranges = self._tx_ranges

        def range_start(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                range_id, ret = result
                if ret == ACL_SUCCESS and len(ranges) < 4096:
                    message = messages.get(_arg(args, kwargs, 0, "stamp"), "")
                    ranges[range_id] = (message, _time_ns())
            except Exception as exc:
                agent.fail("hook prof.range_start", exc)
            return result

        return range_start

    def _tx_range_stop(self, original: Callable[..., Any]) -> Wrapper:
        agent = self.agent
        ranges = self._tx_ranges

        def range_stop(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            try:
                opened = ranges.pop(_arg(args, kwargs, 0, "range_id"), None)
                if opened is not None and _ret_of(result) == ACL_SUCCESS:
                    agent.emit(TxRange, opened[0], opened[1], _time_ns())
            except Exception as exc:
                agent.fail("hook prof.range_stop", exc)
            return result

        return range_stop
