"""What the agent knows about the job's runtime right now.

Hooks update this on the job's threads; the publisher thread reads it to build
the snapshot a late subscriber gets first. Every mutation is a single dict
operation (atomic under the GIL) and every read copies with ``list(...)``, which
CPython runs without releasing the GIL, so no lock sits on the hot path.

The state keeps the events that created each object, so the snapshot re-sends
exactly what a subscriber from the start would have seen (with ``seq = 0``).
"""

from __future__ import annotations

from typing import Any

from aclmon.events import (
    ContextCreated,
    ContextCurrent,
    DeviceSet,
    Hello,
    ModelLoaded,
    ProfilingState,
    StreamCreated,
    optypes,
)


class RuntimeState:
    """Devices, contexts, streams, models and profiling state of one job."""

    def __init__(self) -> None:
        self.hello: Hello | None = None
        #: device id -> set_device reference count (set_device is refcounted by the runtime)
        self.device_refs: dict[int, int] = {}
        #: device id -> the last successful DeviceSet event
        self.device_events: dict[int, DeviceSet] = {}
        #: device id -> handle of the device's default context (from set_device)
        self.default_context: dict[int, int] = {}
        #: context handle -> its ContextCreated event
        self.contexts: dict[int, ContextCreated] = {}
        #: thread id -> ContextCurrent of that thread
        self.current: dict[int, ContextCurrent] = {}
        #: stream handle -> its StreamCreated event; the default stream of a context is
        #: keyed by ("default", context) because its handle is 0 in every context
        self.streams: dict[Any, StreamCreated] = {}
        #: model id -> its ModelLoaded event
        self.models: dict[int, ModelLoaded] = {}
        self.profiling: ProfilingState | None = None
        #: sanitized op name -> its op type, "" if several were seen (descriptions,
        #: subscription records, dump file names, the plog's AIC_INFO lines)
        self.op_types: dict[str, str] = {}

    # ------------------------------------------------------------ devices
    def device_set(self, event: DeviceSet) -> None:
        device = event.device_id
        self.device_refs[device] = self.device_refs.get(device, 0) + 1
        self.device_events[device] = event

    def device_reset(self, device: int, force: bool) -> bool:
        """Count one reset; True when the device's last reference is gone."""
        refs = 0 if force else self.device_refs.get(device, 0) - 1
        if refs > 0:
            self.device_refs[device] = refs
            return False
        self.device_refs.pop(device, None)
        self.device_events.pop(device, None)
        return True

    def devices_in_use(self) -> list[int]:
        """Devices the job has set, plus devices of contexts it created explicitly."""
        devices = set(self.device_refs)
        devices.update(c.device_id for c in list(self.contexts.values()))
        return sorted(devices)

    def context_for_device(self, device: int) -> int:
        """A live context on ``device`` (the default one first), or 0."""
        context = self.default_context.get(device, 0)
        if context and context in self.contexts:
            return context
        for created in list(self.contexts.values()):
            if created.device_id == device:
                return created.context
        return 0

    def device_of_context(self, context: int) -> int:
        created = self.contexts.get(context)
        return created.device_id if created is not None else -1

    # ------------------------------------------------------------ contexts, streams
    def context_created(self, event: ContextCreated) -> None:
        self.contexts[event.context] = event
        if event.is_default:
            self.default_context[event.device_id] = event.context

    def context_destroyed(self, context: int) -> list[Any]:
        """Forget a context; returns the keys of the streams that went with it."""
        created = self.contexts.pop(context, None)
        if created is not None and self.default_context.get(created.device_id) == context:
            del self.default_context[created.device_id]
        for thread, current in list(self.current.items()):
            if current.context == context:
                self.current.pop(thread, None)
        gone = [k for k, s in list(self.streams.items()) if s.context == context]
        for key in gone:
            self.streams.pop(key, None)
        return gone

    def stream_created(self, event: StreamCreated) -> None:
        key: Any = event.stream if event.stream else ("default", event.context)
        self.streams[key] = event

    def stream_destroyed(self, stream: int) -> None:
        self.streams.pop(stream, None)

    def stream_id_of(self, stream: int) -> int:
        created = self.streams.get(stream)
        return created.stream_id if created is not None else -1

    # ------------------------------------------------------------ op types
    def learn_op_type(self, op_name: str, op_type: str) -> None:
        """Remember that ``op_name`` is an ``op_type`` (see :mod:`aclmon.events.optypes`)."""
        optypes.learn(self.op_types, op_name, op_type)

    def op_type_of(self, op_name: str) -> str:
        """The op type of ``op_name`` when exactly one has been seen, else ""."""
        return optypes.type_of(self.op_types, op_name)

    # ------------------------------------------------------------ snapshot
    def snapshot(self) -> list[Any]:
        """The events that bring a new subscriber up to date, all with ``seq = 0``."""
        events: list[Any] = []
        if self.hello is not None:
            events.append(self.hello)
        events.extend(self.device_events.values())
        events.extend(self.contexts.values())
        events.extend(self.current.values())
        events.extend(self.streams.values())
        events.extend(self.models.values())
        if self.profiling is not None:
            events.append(self.profiling)
        return [e._replace(seq=0) for e in list(events)]
