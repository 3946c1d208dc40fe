"""The event and command schema, its wire codec and its JSON form.

- :mod:`aclmon.events.schema`: every kind as a typed ``NamedTuple``, declared
  once with ``@register(kind, name)``; ``KINDS``, ``KIND_NAMES``,
  ``COMMAND_KINDS`` and ``Event`` derive from those declarations.
- :mod:`aclmon.events.codec`: ``encode`` and the validating ``EventDecoder``
  (per-kind generated decoders; each keeps its source as ``__source__``).
- :mod:`aclmon.events.clock`: ``Clock`` (sequence numbers and timestamps) and
  the ``Hello`` of this process.
- :mod:`aclmon.events.json`: ``to_json``.

Every public name is re-exported here: ``from aclmon.events import StreamCreated``.
"""

from aclmon.events.clock import Clock, hello_fields
from aclmon.events.codec import EventDecoder, encode, unpack_payload
from aclmon.events.json import JSON_RENAMED_FIELDS, to_json
from aclmon.events.schema import (
    COMMAND_KINDS,
    KIND_NAMES,
    KINDS,
    SCHEMA_VERSION,
    AclException,
    CallFailed,
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
    Hello,
    HostSample,
    LogLine,
    ModelLoaded,
    ModelUnloaded,
    OpTiming,
    Ping,
    ProfilingState,
    Reply,
    RequestSnapshot,
    SetProfilingConfig,
    StartProfiling,
    StopProfiling,
    StreamCreated,
    StreamDestroyed,
    StreamSyncBegin,
    StreamSynchronized,
    Summary,
    TensorDesc,
    TxMark,
    TxRange,
    kind_name,
    register,
)

__all__ = [
    "COMMAND_KINDS",
    "JSON_RENAMED_FIELDS",
    "KINDS",
    "KIND_NAMES",
    "SCHEMA_VERSION",
    "AclException",
    "CallFailed",
    "Clock",
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
    "Hello",
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
    "TxMark",
    "TxRange",
    "encode",
    "hello_fields",
    "kind_name",
    "register",
    "to_json",
    "unpack_payload",
]
