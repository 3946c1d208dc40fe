"""The event and command schema, its wire codec and its JSON form.

- :mod:`aclmon.events.schema`: every kind as a typed ``NamedTuple``, declared
  once with ``@register(kind, name)`` (:mod:`aclmon.events.registry`, which
  keeps ``KINDS`` and ``KIND_NAMES``); ``COMMAND_KINDS`` and ``Event`` derive
  from those declarations.
- :mod:`aclmon.events.commands`: the commands a viewer sends an agent and the
  agent's ``Reply`` (registered as events, with ``command=True``).
- :mod:`aclmon.events.unknown`: the field values that stand for "not known"
  (``UNKNOWN_VALUES``, ``known``).
- :mod:`aclmon.events.codec`: ``encode`` and the validating ``EventDecoder``
  (per-kind generated decoders; each keeps its source as ``__source__``).
- :mod:`aclmon.events.clock`: ``Clock`` (sequence numbers and timestamps) and
  the ``Hello`` of this process.
- :mod:`aclmon.events.json`: ``to_json``.
- :mod:`aclmon.events.optypes`: where the runtime names an operator's type, and
  the table of the types learned (the agent and the store share it).

Every public name is re-exported here: ``from aclmon.events import StreamCreated``.
The codec's names load on first use: reading the schema (the dump decoder's
``aclmon decode`` does, for the dump kinds) does not import msgpack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from aclmon.events.clock import Clock, hello_fields, missed_between
from aclmon.events.commands import (
    Ping,
    Reply,
    RequestSnapshot,
    SetProfilingConfig,
    StartProfiling,
    StopProfiling,
)
from aclmon.events.json import JSON_RENAMED_FIELDS, to_json
from aclmon.events.registry import KIND_NAMES, KINDS, kind_of, register
from aclmon.events.schema import (
    COMMAND_KINDS,
    DEVICE_SYNC,
    DUMP_KINDS,
    EXCEPTION_DUMP,
    NANO_DUMP,
    OP_DUMP,
    OVERFLOW_DUMP,
    SCHEMA_VERSION,
    SLOW_CALL_NS,
    STATS_DUMP,
    AclException,
    CallFailed,
    ClockOffset,
    Command,
    ContextCreated,
    ContextCurrent,
    ContextDestroyed,
    DeviceReset,
    DeviceSample,
    DeviceSet,
    Drops,
    DumpFileSeen,
    Event,
    ExecuteBegin,
    ExecuteEnd,
    Goodbye,
    Hello,
    History,
    HostNpuSample,
    HostSample,
    LogLine,
    ModelLoaded,
    ModelUnloaded,
    OpTiming,
    ProfilingState,
    StreamCreated,
    StreamDestroyed,
    StreamSyncBegin,
    StreamSynchronized,
    Summary,
    TensorDesc,
    Triage,
    TxMark,
    TxRange,
    is_command,
    kind_name,
)
from aclmon.events.unknown import UNKNOWN_VALUES, known

__all__ = [
    "COMMAND_KINDS",
    "DEVICE_SYNC",
    "DUMP_KINDS",
    "EXCEPTION_DUMP",
    "JSON_RENAMED_FIELDS",
    "KINDS",
    "KIND_NAMES",
    "NANO_DUMP",
    "OP_DUMP",
    "OVERFLOW_DUMP",
    "SCHEMA_VERSION",
    "SLOW_CALL_NS",
    "STATS_DUMP",
    "UNKNOWN_VALUES",
    "AclException",
    "CallFailed",
    "Clock",
    "ClockOffset",
    "Command",
    "ContextCreated",
    "ContextCurrent",
    "ContextDestroyed",
    "DeviceReset",
    "DeviceSample",
    "DeviceSet",
    "Drops",
    "DumpFileSeen",
    "Event",
    "EventDecoder",
    "ExecuteBegin",
    "ExecuteEnd",
    "Goodbye",
    "Hello",
    "History",
    "HostNpuSample",
    "HostSample",
    "LogLine",
    "ModelLoaded",
    "ModelUnloaded",
    "OpTiming",
    "Ping",
    "ProfilingState",
    "Reply",
    "RequestSnapshot",
    "SetProfilingConfig",
    "StartProfiling",
    "StopProfiling",
    "StreamCreated",
    "StreamDestroyed",
    "StreamSyncBegin",
    "StreamSynchronized",
    "Summary",
    "TensorDesc",
    "Triage",
    "TxMark",
    "TxRange",
    "encode",
    "hello_fields",
    "is_command",
    "kind_name",
    "kind_of",
    "known",
    "missed_between",
    "register",
    "to_json",
    "unpack_payload",
]

_CODEC = ("EventDecoder", "encode", "unpack_payload")


def __getattr__(name: str) -> Any:
    if name not in _CODEC:
        raise AttributeError(f"module 'aclmon.events' has no attribute {name!r}")
    value = getattr(importlib.import_module("aclmon.events.codec"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from aclmon.events.codec import EventDecoder, encode, unpack_payload
