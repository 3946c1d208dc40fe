"""The event and command schema: the one place it is defined.

Every event is a typed ``NamedTuple`` whose first two fields are ``seq`` (a
per-source sequence number, so gaps are visible) and ``ts_ns`` (wall-clock
nanoseconds). Its kind is the class attribute ``KIND``. On the wire an event is
one msgpack array, positional::

    [kind, seq, ts_ns, field3, field4, ...]

Positional arrays were chosen over maps by measurement (docs/events.md): they
are about half the bytes and faster to pack and unpack on our event shapes.
Sequence fields are tuples (msgpack arrays decoded with ``use_list=False``).

Commands (viewer -> agent) and replies (agent -> viewer) are events too, so the
same framing, recording and decoding serve both directions.

Decoding treats input as hostile: :class:`EventDecoder` validates each array
against the kind's field types, counts malformed and unknown events, and skips
them; it never raises into its caller.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import time
import types
import typing
from collections.abc import Iterable
from typing import Any, NamedTuple

import msgpack

from aclmon import __version__

#: bump when a field is added, removed or changes meaning.
#: 2: LogLine gained module, pid, process, logged_ns, location, log_file.
SCHEMA_VERSION = 2

Summary = dict[str, Any]


class TensorDesc(NamedTuple):
    """One input or output tensor of an operator (from the exception op desc)."""

    dtype: int  # aclDataType
    format: int  # aclFormat
    dims: tuple[int, ...]
    address: int
    size: int
    name: str


# ---------------------------------------------------------------- lifecycle
class Hello(NamedTuple):
    """First event of every source: who is talking."""

    seq: int
    ts_ns: int
    schema_version: int
    agent_version: str
    pid: int
    host: str
    argv: tuple[str, ...]
    runtime: str  # "real" or "sim"
    soc_name: str
    device_count: int


class DeviceSample(NamedTuple):
    """One sample of one device. Utilizations are percent, -1 = not supported."""

    seq: int
    ts_ns: int
    device_id: int
    cube_util: int
    vector_util: int
    aicpu_util: int
    hbm_used: int  # bytes
    hbm_total: int  # bytes
    health: str  # "OK", "Alarm", ...
    temperature_c: float | None
    power_w: float | None


class HostSample(NamedTuple):
    """One sample of the job's host process."""

    seq: int
    ts_ns: int
    cpu_percent: float
    rss: int  # bytes
    threads: int


class DeviceSet(NamedTuple):
    seq: int
    ts_ns: int
    device_id: int
    ret: int


class DeviceReset(NamedTuple):
    seq: int
    ts_ns: int
    device_id: int
    ret: int


class ContextCreated(NamedTuple):
    seq: int
    ts_ns: int
    device_id: int
    context: int  # handle
    is_default: bool  # the implicit context of set_device


class ContextDestroyed(NamedTuple):
    seq: int
    ts_ns: int
    context: int
    ret: int


class ContextCurrent(NamedTuple):
    """A thread made ``context`` its current context."""

    seq: int
    ts_ns: int
    context: int
    thread_id: int


class StreamCreated(NamedTuple):
    seq: int
    ts_ns: int
    device_id: int
    context: int
    stream: int  # handle (0 = the default stream of the context)
    stream_id: int  # the id seen in exception info (acl.rt.stream_get_id)
    priority: int
    flags: int


class StreamDestroyed(NamedTuple):
    seq: int
    ts_ns: int
    stream: int
    ret: int


class StreamSyncBegin(NamedTuple):
    seq: int
    ts_ns: int
    stream: int
    thread_id: int


class StreamSynchronized(NamedTuple):
    seq: int
    ts_ns: int
    stream: int
    duration_ns: int
    ret: int
    timeout_ms: int  # -1 = no timeout


class ModelLoaded(NamedTuple):
    seq: int
    ts_ns: int
    model_id: int
    device_id: int
    name: str
    op_count: int


class ModelUnloaded(NamedTuple):
    seq: int
    ts_ns: int
    model_id: int
    ret: int


class ExecuteBegin(NamedTuple):
    seq: int
    ts_ns: int
    model_id: int
    stream: int  # 0 = synchronous execute
    device_id: int


class ExecuteEnd(NamedTuple):
    seq: int
    ts_ns: int
    model_id: int
    stream: int
    duration_ns: int
    ret: int


class AclException(NamedTuple):
    """An AI Core (or other device) exception reported by the runtime callback."""

    seq: int
    ts_ns: int
    device_id: int
    stream_id: int
    task_id: int
    thread_id: int
    error_code: int
    op_name: str
    op_type: str  # "" when the runtime does not say
    inputs: tuple[TensorDesc, ...]
    outputs: tuple[TensorDesc, ...]


# ---------------------------------------------------------------- profiling
class ProfilingState(NamedTuple):
    seq: int
    ts_ns: int
    initialized: bool
    running: bool
    flags: int  # ACL_PROF_* bitmask
    aicore_metrics: int  # aclprofAicoreMetrics
    devices: tuple[int, ...]
    output_path: str
    owner: str  # "", "aclmon", "job" or "acl.json"
    subscribed: bool  # live operator timings through model subscription
    # The configuration aclmon's next start uses (SetProfilingConfig, else the
    # agent's initial one): flags 0 means live operator timings.
    next_flags: int
    next_metrics: int
    next_devices: tuple[int, ...]


class OpTiming(NamedTuple):
    """One operator record from model subscription (times in microseconds)."""

    seq: int
    ts_ns: int
    model_id: int
    op_name: str
    op_type: str
    start_us: int
    end_us: int
    duration_us: int


class TxMark(NamedTuple):
    """An msproftx instant mark."""

    seq: int
    ts_ns: int
    message: str


class TxRange(NamedTuple):
    """An msproftx range (push/pop or range_start/range_stop), sent when it ends."""

    seq: int
    ts_ns: int
    message: str
    start_ns: int
    end_ns: int


# ---------------------------------------------------------------- dumps, logs
class DumpFileSeen(NamedTuple):
    seq: int
    ts_ns: int
    path: str
    kind: str  # "op-dump", "overflow" or "stats"
    size: int
    summary: Summary  # decoded header / overflow status in plain values


class LogLine(NamedTuple):
    """A log line: aclmon's own (``log_file`` empty) or one entry of the job's CANN log (plog).

    The fields after ``text`` were added in schema version 2; an older array without
    them decodes with these defaults.
    """

    seq: int
    ts_ns: int
    level: str  # "debug", "info", "warning", "error", "event"
    text: str  # the message; a multi-line plog entry keeps its line breaks
    module: str = ""  # the plog module (ASCENDCL, GE, RUNTIME, ...); "" for aclmon's own
    pid: int = 0  # the process that logged it (0: not known)
    process: str = ""  # its process name as the log gives it
    logged_ns: int = 0  # the time the log line states, ns since the epoch (0: none)
    location: str = ""  # "file.cc:123" of the log call ("" when none)
    log_file: str = ""  # the plog file it was read from ("" for aclmon's own lines)


class Drops(NamedTuple):
    """Events lost on purpose: ``total`` dropped so far at ``where``, and why."""

    seq: int
    ts_ns: int
    total: int
    where: str
    why: str


# ---------------------------------------------------------------- commands
class SetProfilingConfig(NamedTuple):
    """Command: profiling flags, AI Core metrics, devices, sampling interval."""

    seq: int
    ts_ns: int
    request_id: int
    flags: int
    aicore_metrics: int
    devices: tuple[int, ...]  # empty = every device in use
    sample_interval_ms: int  # 0 = leave unchanged


class StartProfiling(NamedTuple):
    seq: int
    ts_ns: int
    request_id: int


class StopProfiling(NamedTuple):
    seq: int
    ts_ns: int
    request_id: int


class RequestSnapshot(NamedTuple):
    """Command: re-publish the current state (for a viewer that joins late)."""

    seq: int
    ts_ns: int
    request_id: int


class Ping(NamedTuple):
    seq: int
    ts_ns: int
    request_id: int


class Reply(NamedTuple):
    """The agent's answer to one command, matched by ``request_id``."""

    seq: int
    ts_ns: int
    request_id: int
    code: int  # 0 = ok, else an ACL error code
    message: str
    data: Summary


Event = typing.Union[  # noqa: UP007 (a runtime alias, kept readable)
    Hello,
    DeviceSample,
    HostSample,
    DeviceSet,
    DeviceReset,
    ContextCreated,
    ContextDestroyed,
    ContextCurrent,
    StreamCreated,
    StreamDestroyed,
    StreamSyncBegin,
    StreamSynchronized,
    ModelLoaded,
    ModelUnloaded,
    ExecuteBegin,
    ExecuteEnd,
    AclException,
    ProfilingState,
    OpTiming,
    TxMark,
    TxRange,
    DumpFileSeen,
    LogLine,
    Drops,
    SetProfilingConfig,
    StartProfiling,
    StopProfiling,
    RequestSnapshot,
    Ping,
    Reply,
]

#: wire kind number -> class. Numbers are part of the format: never reuse one.
KINDS: dict[int, type] = {
    1: Hello,
    2: DeviceSample,
    3: HostSample,
    4: DeviceSet,
    5: DeviceReset,
    6: ContextCreated,
    7: ContextDestroyed,
    8: ContextCurrent,
    9: StreamCreated,
    10: StreamDestroyed,
    11: StreamSyncBegin,
    12: StreamSynchronized,
    13: ModelLoaded,
    14: ModelUnloaded,
    15: ExecuteBegin,
    16: ExecuteEnd,
    17: AclException,
    18: ProfilingState,
    19: OpTiming,
    20: TxMark,
    21: TxRange,
    22: DumpFileSeen,
    23: LogLine,
    24: Drops,
    64: SetProfilingConfig,
    65: StartProfiling,
    66: StopProfiling,
    67: RequestSnapshot,
    68: Ping,
    96: Reply,
}

#: kinds a viewer may send to an agent.
COMMAND_KINDS: frozenset[type] = frozenset(
    {SetProfilingConfig, StartProfiling, StopProfiling, RequestSnapshot, Ping}
)

#: snake_case name of each kind, as used in JSON output and docs.
KIND_NAMES: dict[type, str] = {
    Hello: "hello",
    DeviceSample: "device_sample",
    HostSample: "host_sample",
    DeviceSet: "device_set",
    DeviceReset: "device_reset",
    ContextCreated: "context_created",
    ContextDestroyed: "context_destroyed",
    ContextCurrent: "context_current",
    StreamCreated: "stream_created",
    StreamDestroyed: "stream_destroyed",
    StreamSyncBegin: "stream_sync_begin",
    StreamSynchronized: "stream_synchronized",
    ModelLoaded: "model_loaded",
    ModelUnloaded: "model_unloaded",
    ExecuteBegin: "execute_begin",
    ExecuteEnd: "execute_end",
    AclException: "exception",
    ProfilingState: "profiling_state",
    OpTiming: "op_timing",
    TxMark: "tx_mark",
    TxRange: "tx_range",
    DumpFileSeen: "dump_file",
    LogLine: "log",
    Drops: "drops",
    SetProfilingConfig: "set_profiling_config",
    StartProfiling: "start_profiling",
    StopProfiling: "stop_profiling",
    RequestSnapshot: "request_snapshot",
    Ping: "ping",
    Reply: "reply",
}

for _kind, _cls in KINDS.items():
    _cls.KIND = _kind  # type: ignore[attr-defined]
    # ``(kind,) + event`` is the wire array; encoders batch it with C-level
    # map() calls (operator.attrgetter("KIND_TUPLE")) instead of a Python loop.
    _cls.KIND_TUPLE = (_kind,)  # type: ignore[attr-defined]
del _kind, _cls


def kind_of(event: Event) -> int:
    """The wire kind number of an event."""
    return type(event).KIND  # type: ignore[attr-defined,no-any-return]


def kind_name(event: Event) -> str:
    return KIND_NAMES[type(event)]


# ---------------------------------------------------------------- encoding
_packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack


def encode(event: Event) -> bytes:
    """One event as a msgpack payload (without framing)."""
    return _packb((type(event).KIND, *event))  # type: ignore[attr-defined]


def unpack_payload(payload: bytes) -> Any:
    """Unpack one msgpack payload. msgpack bounds every length by the payload's
    own size, so garbage cannot make it allocate more than the input."""
    return msgpack.unpackb(payload, use_list=False, raw=False, strict_map_key=True)


# ---------------------------------------------------------------- validation
_NoneType = type(None)


def _accepts(annotation: Any) -> tuple[type, ...]:
    """The runtime types one annotated field may hold on the wire."""
    if annotation is float:
        return (float, int)
    if annotation in (int, str, bool):
        return (annotation,)
    origin = typing.get_origin(annotation)
    if origin is tuple:
        return (tuple, list)
    if origin is dict or annotation is Summary:
        return (dict,)
    if origin in (typing.Union, types.UnionType):
        accepted: tuple[type, ...] = ()
        for arg in typing.get_args(annotation):
            accepted += (_NoneType,) if arg is _NoneType else _accepts(arg)
        return accepted
    raise TypeError(f"no wire rule for {annotation!r}")


def _element_type(annotation: Any) -> Any:
    if typing.get_origin(annotation) is tuple:
        args = typing.get_args(annotation)
        return args[0]
    return None


class _KindSpec:
    __slots__ = (
        "cls",
        "defaults",
        "exact",
        "field_types",
        "nested",
        "nfields",
        "nrequired",
        "plain",
    )

    def __init__(self, cls: type) -> None:
        hints = typing.get_type_hints(cls, globalns=vars(sys.modules[__name__]))
        annotations = [hints[name] for name in cls._fields]  # type: ignore[attr-defined]
        self.cls = cls
        self.nfields = len(annotations)
        # Fields added later carry defaults: an array from an older source may end before them.
        defaults: dict[str, Any] = getattr(cls, "_field_defaults", {})
        names: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
        self.defaults = tuple(defaults[name] for name in names if name in defaults)
        self.nrequired = self.nfields - len(self.defaults)
        self.field_types = tuple(_accepts(a) for a in annotations)
        # The common case (every value of its first listed type) checks in one compare.
        self.exact = tuple(t[0] for t in self.field_types)
        # (index, element type) of sequence fields, whose elements are checked too.
        self.nested = tuple(
            (i, _element_type(a)) for i, a in enumerate(annotations) if _element_type(a) is not None
        )
        self.plain = not self.nested


_tuple_new = tuple.__new__
_SPECS: dict[int, _KindSpec] = {kind: _KindSpec(cls) for kind, cls in KINDS.items()}
_TENSOR_SPEC = _KindSpec(TensorDesc)


def _elements_are(items: tuple[Any, ...], only: frozenset[type]) -> bool:
    """Every item of ``items`` exactly of the one type in ``only``."""
    return {*map(type, items)} <= only


def _fast_decoder(spec: _KindSpec, kind: int | None) -> Any:
    """A function ``(array) -> event | None`` for one kind, generated from its
    field types: it unpacks the array into locals (a wrong length raises
    ValueError), checks the kind and every field with ``type(x) is T``
    against the field's usual type, the elements of sequence fields too
    (tensors through TensorDesc's own generated decoder), and builds the
    NamedTuple. ``None`` (or an exception) means "not the common case":
    :meth:`EventDecoder.decode` then decides (other accepted types such as
    int for float or None, malformed). ``kind=None``: an array without a
    kind element (a tensor inside an exception).

    Generated code because it is the hot path of every subscriber: one call
    with inline identity checks costs ~40% less than
    ``tuple(map(type, array)) == signature`` plus a slice.
    """
    namespace: dict[str, Any] = {
        "_cls": spec.cls,
        "_new": _tuple_new,
        "_elements_are": _elements_are,
        "_tensors": _fast_tensors,
    }
    params = ["obj", "_type=type", "_int=int", "_tuple=tuple", "_cls=_cls", "_new=_new"]
    checks = []
    for i, accepted in enumerate(spec.exact):
        namespace[f"_t{i}"] = accepted
        params.append(f"_t{i}=_t{i}")
        checks.append(f"_type(f{i}) is _t{i}")
    fields = ", ".join(f"f{i}" for i in range(spec.nfields))
    name = f"decode_{kind}" if kind is not None else f"decode_{spec.cls.__name__}"
    lines = [f"def {name}({', '.join(params)}):"]
    if kind is None:
        # Not behind decode_many's check that the array is a tuple (a dict
        # would unpack into its keys).
        lines += ["    if _type(obj) is not _tuple:", "        return None", f"    {fields}, = obj"]
    else:
        lines.append(f"    kind, {fields}, = obj")
        checks.insert(0, "_type(kind) is _int")
    lines.append(f"    if {' and '.join(checks)}:")
    for i, element in spec.nested:
        if element is TensorDesc:
            lines.append(f"        f{i} = _tensors(f{i})")
            lines.append(f"        if f{i} is None:")
        else:
            namespace[f"_only{i}"] = frozenset({_accepts(element)[0]})
            lines.append(f"        if not _elements_are(f{i}, _only{i}):")
        lines.append("            return None")
    lines.append(f"        return _new(_cls, ({fields},))")
    lines.append("    return None")
    source = "\n".join(lines) + "\n"
    exec(source, namespace)  # our own field names and types only
    return namespace[name]


def _fast_tensors(items: tuple[Any, ...]) -> tuple[TensorDesc, ...] | None:
    """Every item as a TensorDesc through the generated decoder, or None."""
    tensors = tuple(map(_fast_tensor, items))
    return None if None in tensors else tensors


_fast_tensor = _fast_decoder(_TENSOR_SPEC, None)
#: kind -> generated fast decoder (see :func:`_fast_decoder`).
_FAST: dict[int, Any] = {kind: _fast_decoder(spec, kind) for kind, spec in _SPECS.items()}


def _check_fields(spec: _KindSpec, fields: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Validated fields (sequences as tuples, tensors as TensorDesc), or None."""
    if len(fields) != spec.nfields:
        if not spec.nrequired <= len(fields) < spec.nfields:
            return None
        fields = fields + spec.defaults[len(fields) - spec.nrequired :]
    if tuple(map(type, fields)) != spec.exact:
        for value, accepted in zip(fields, spec.field_types, strict=True):
            if not isinstance(value, accepted):
                return None
    if not spec.nested:
        return fields
    out = list(fields)
    for index, element in spec.nested:
        items = fields[index]
        if element is TensorDesc:
            tensors = []
            for item in items:
                if not isinstance(item, (tuple, list)):
                    return None
                checked = _check_fields(_TENSOR_SPEC, tuple(item))
                if checked is None:
                    return None
                tensors.append(_tuple_new(TensorDesc, checked))
            out[index] = tuple(tensors)
        else:
            accepted = _accepts(element)
            for item in items:
                if not isinstance(item, accepted):
                    return None
            out[index] = tuple(items)
    return tuple(out)


class EventDecoder:
    """Turns unpacked msgpack arrays into events, counting what it skips.

    ``malformed`` counts arrays of a known kind whose fields do not match the
    schema; ``unknown`` counts kinds this version does not know (a newer agent).
    Neither ever raises.
    """

    __slots__ = ("malformed", "unknown")

    def __init__(self) -> None:
        self.malformed = 0
        self.unknown = 0

    def decode(self, obj: Any) -> Event | None:
        if type(obj) is not tuple:
            if type(obj) is not list:
                self.malformed += 1
                return None
            obj = tuple(obj)
        if not obj or type(obj[0]) is not int:
            self.malformed += 1
            return None
        spec = _SPECS.get(obj[0])
        if spec is None:
            self.unknown += 1
            return None
        fields = obj[1:]
        # Fast path: every field already of its usual type and nothing nested.
        if spec.plain and len(fields) == spec.nfields and tuple(map(type, fields)) == spec.exact:
            return _tuple_new(spec.cls, fields)  # type: ignore[no-any-return]
        checked = _check_fields(spec, fields)
        if checked is None:
            self.malformed += 1
            return None
        return _tuple_new(spec.cls, checked)  # type: ignore[no-any-return]

    def decode_payload(self, payload: bytes) -> Event | None:
        """Unpack and decode one msgpack payload; garbage counts as malformed."""
        try:
            obj = unpack_payload(payload)
        except Exception:  # msgpack raises many types on garbage; all mean "malformed"
            self.malformed += 1
            return None
        return self.decode(obj)

    def decode_many(self, objs: Iterable[Any]) -> list[Event]:
        """Decode a batch, skipping (and counting) what is not an event.

        The hot path of every subscriber and replay: each array goes to its
        kind's generated decoder (every field type-checked inline, see
        :func:`_fast_decoder`); whatever that does not accept outright
        (unknown kinds, non-arrays, wrong lengths, unusual but valid types,
        nested fields, malformed events) goes through :meth:`decode`, which
        validates fully and counts.
        """
        fast = _FAST
        decode = self.decode
        out: list[Event] = []
        append = out.append
        for obj in objs:
            if type(obj) is tuple:
                try:
                    event = fast[obj[0]](obj)
                except Exception:  # empty, unhashable or unknown kind, wrong length
                    event = None
                if event is not None:
                    append(event)
                    continue
            event = decode(obj)
            if event is not None:
                append(event)
        return out


# ---------------------------------------------------------------- building
class Clock:
    """Per-source sequence numbers and timestamps for new events (thread-safe)."""

    __slots__ = ("_counter",)

    def __init__(self, start: int = 1) -> None:
        # next() on itertools.count is atomic under the GIL: no lock on the hot path.
        self._counter = itertools.count(start)

    def make(self, cls: type, *fields: Any) -> Any:
        """``cls(seq, ts_ns, *fields)`` with the next sequence number and now."""
        return cls(next(self._counter), time.time_ns(), *fields)


def hello_fields(runtime: str, soc_name: str, device_count: int) -> tuple[Any, ...]:
    """The fields of a Hello for this process (after seq and ts_ns)."""
    return (
        SCHEMA_VERSION,
        __version__,
        os.getpid(),
        socket.gethostname(),
        tuple(sys.argv),
        runtime,
        soc_name,
        device_count,
    )


# ---------------------------------------------------------------- JSON
#: JSON keys of fields whose own name would hide the event's ``"kind"``.
JSON_RENAMED_FIELDS: dict[tuple[type, str], str] = {(DumpFileSeen, "kind"): "file_kind"}


def _plain(value: Any) -> Any:
    """Tuples (and TensorDescs) inside values as JSON lists and objects."""
    if isinstance(value, TensorDesc):
        return {name: _plain(v) for name, v in zip(value._fields, value, strict=True)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def to_json(event: Event) -> dict[str, Any]:
    """A JSON-ready dict: ``{"kind": name, field: value, ...}``.

    ``"kind"`` is always the event's kind name (so ``jq 'select(.kind==...)'``
    works for every event); a field that is itself called ``kind``
    (DumpFileSeen) appears under the name in :data:`JSON_RENAMED_FIELDS`.
    """
    cls = type(event)
    out: dict[str, Any] = {"kind": KIND_NAMES[cls]}
    for name, value in zip(event._fields, event, strict=True):
        out[JSON_RENAMED_FIELDS.get((cls, name), name)] = _plain(value)
    return out
