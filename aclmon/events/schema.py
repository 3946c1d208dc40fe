"""The event and command schema: the one place every kind is declared.

Every event is a typed ``NamedTuple`` whose first two fields are ``seq`` (a
per-source sequence number, so gaps are visible) and ``ts_ns`` (wall-clock
nanoseconds). A kind's wire number and its JSON/doc name are declared once,
by :func:`register` on the class; :data:`KINDS`, :data:`KIND_NAMES`,
:data:`COMMAND_KINDS`, the ``Event`` union and the decoders in
:mod:`aclmon.events.codec` all derive from that.

On the wire an event is one msgpack array, positional::

    [kind, seq, ts_ns, field3, field4, ...]

Positional arrays were chosen over maps by measurement (docs/events.md): they
are about half the bytes and faster to pack and unpack on our event shapes.
Sequence fields are tuples (msgpack arrays decoded with ``use_list=False``).

Commands (viewer -> agent) and replies (agent -> viewer) are events too, so the
same framing, recording and decoding serve both directions.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeAlias, TypeGuard

from aclmon.events import commands as cmd
from aclmon.events.registry import KIND_NAMES, declared_commands, register

#: bump when a field is added, removed or changes meaning.
#: 2: LogLine gained module, pid, process, logged_ns, location, log_file.
#: 3: Hello gained job, rank, rank_size, local_rank, device_id, rank_env.
#: 4: AclException gained model_name and execution; History and Goodbye.
#: 5: OpTiming gained device_id and metrics.
#: 6: HostNpuSample (every NPU and process of the host, from the host source);
#:    AclException gained launch_site; Triage and ClockOffset;
#:    TxMark and TxRange gained the threads that made them.
#: 7: OpTiming gained stream_id, task_id and task_type (msprof's exported files).
SCHEMA_VERSION = 7

Summary = dict[str, Any]


#: ``stream`` of the StreamSyncBegin / StreamSynchronized of ``synchronize_device``:
#: every stream of the thread's current device (docs/agent.md).
DEVICE_SYNC = -1
#: the agent announces ExecuteBegin and StreamSyncBegin only for a call still
#: running after this long, with the call's start time as ``ts_ns`` (docs/agent.md).
SLOW_CALL_NS = 50_000_000


class TensorDesc(NamedTuple):
    """One input or output tensor of an operator (from the exception op desc)."""

    dtype: int  # aclDataType
    format: int  # aclFormat
    dims: tuple[int, ...]
    address: int
    size: int
    name: str


# ---------------------------------------------------------------- lifecycle
@register(1, "hello")
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
    # Schema 3: where the process sits in a multi-process job, from the launcher's
    # environment (RANK_ID/RANK, RANK_SIZE/WORLD_SIZE, LOCAL_RANK, DEVICE_ID); an
    # older array decodes with these defaults. -1 = not set.
    job: str = ""  # --job / $ACLMON_JOB, else the rank table's or the script's name
    rank: int = -1
    rank_size: int = -1
    local_rank: int = -1
    device_id: int = -1  # the NPU the launcher gave this rank
    rank_env: Summary = {}  # noqa: RUF012 (never mutated) the launcher variables found


@register(2, "device_sample")
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


@register(3, "host_sample")
class HostSample(NamedTuple):
    """One sample of the job's host process."""

    seq: int
    ts_ns: int
    cpu_percent: float
    rss: int  # bytes
    threads: int


@register(28, "host_npu_sample")
class HostNpuSample(NamedTuple):
    """One refresh of every NPU and NPU process on a host, by whoever runs the host
    source (``aclmon top``, a viewer's Host view, ``aclmon record --host``), never
    by the agent. Not to be confused with :class:`HostSample`, the job's own process.

    ``snapshot`` is ``aclmon.events.host.HostSnapshot.to_plain()`` (the
    ``aclmon top --once --json`` object); ``agent_pids`` are the processes in it
    that run aclmon's agent (the registry of the user who ran the host source).
    """

    seq: int
    ts_ns: int
    host: str  # the machine's name (socket.gethostname())
    snapshot: Summary
    agent_pids: tuple[int, ...]


@register(4, "device_set")
class DeviceSet(NamedTuple):
    seq: int
    ts_ns: int
    device_id: int
    ret: int


@register(5, "device_reset")
class DeviceReset(NamedTuple):
    seq: int
    ts_ns: int
    device_id: int
    ret: int


@register(6, "context_created")
class ContextCreated(NamedTuple):
    seq: int
    ts_ns: int
    device_id: int
    context: int  # handle
    is_default: bool  # the implicit context of set_device


@register(7, "context_destroyed")
class ContextDestroyed(NamedTuple):
    seq: int
    ts_ns: int
    context: int
    ret: int


@register(8, "context_current")
class ContextCurrent(NamedTuple):
    """A thread made ``context`` its current context."""

    seq: int
    ts_ns: int
    context: int
    thread_id: int


@register(9, "stream_created")
class StreamCreated(NamedTuple):
    seq: int
    ts_ns: int
    device_id: int
    context: int
    stream: int  # handle (0 = the default stream of the context)
    stream_id: int  # the id seen in exception info (acl.rt.stream_get_id)
    priority: int
    flags: int


@register(10, "stream_destroyed")
class StreamDestroyed(NamedTuple):
    seq: int
    ts_ns: int
    stream: int
    ret: int


@register(11, "stream_sync_begin")
class StreamSyncBegin(NamedTuple):
    seq: int
    ts_ns: int
    stream: int
    thread_id: int


@register(12, "stream_synchronized")
class StreamSynchronized(NamedTuple):
    seq: int
    ts_ns: int
    stream: int
    duration_ns: int
    ret: int
    timeout_ms: int  # -1 = no timeout


@register(13, "model_loaded")
class ModelLoaded(NamedTuple):
    seq: int
    ts_ns: int
    model_id: int
    device_id: int
    name: str
    op_count: int


@register(14, "model_unloaded")
class ModelUnloaded(NamedTuple):
    seq: int
    ts_ns: int
    model_id: int
    ret: int


@register(15, "execute_begin")
class ExecuteBegin(NamedTuple):
    seq: int
    ts_ns: int
    model_id: int
    stream: int  # 0 = synchronous execute
    device_id: int


@register(16, "execute_end")
class ExecuteEnd(NamedTuple):
    seq: int
    ts_ns: int
    model_id: int
    stream: int
    duration_ns: int
    ret: int


@register(17, "exception")
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
    # Added in schema version 3 (older arrays decode with these defaults):
    model_name: str = ""  # the model whose execution raised it ("" when not known)
    execution: int = 0  # which execution of that model, counted from 1 (0: not known)
    # Schema 6: where the job launched the work whose task failed, "path/file.py:LINE
    # function" ("" when not known); the launches around it come with the Triage.
    # (The last field an exception can have and stay a msgpack fixarray of at most 15
    # items, which recordings and replay read fast.)
    launch_site: str = ""


@register(29, "triage")
class Triage(NamedTuple):
    """Why an exception happened, found after it (aclmon.dump.triage, docs/triage.md):
    the exception it explains is the AclException with this ``exception_ts_ns``,
    device, stream id and task id."""

    seq: int
    ts_ns: int
    device_id: int
    stream_id: int
    task_id: int
    exception_ts_ns: int
    triage: Summary  # verdict, cause, error_bits, address_findings, nan_inf_inputs, repro, ...


@register(30, "clock_offset")
class ClockOffset(NamedTuple):
    """A relay's measure of its host's clock against the NATS server's (docs/fleet.md):
    add ``offset_ns`` to a time of this host to get the server's time; the error is
    at most ``uncertainty_ns`` (half the round trip of the best probe)."""

    seq: int
    ts_ns: int
    host: str
    offset_ns: int
    uncertainty_ns: int


@register(26, "history")
class History(NamedTuple):
    """What happened since the agent started, for a viewer that connects late.

    Sent last in the snapshot a new subscriber gets, after the most recent
    exceptions, failed calls and dump files (re-sent with ``seq = 0``). The per-object figures
    are flat tuples of ints, read in groups: ``models`` (model_id, executions,
    failures), ``streams`` (stream handle, synchronizes, failed synchronizes and
    executes, last error code) and ``stream_exceptions`` (device_id, stream_id,
    exceptions), for the models and streams the snapshot lists.
    """

    seq: int
    ts_ns: int
    since_ns: int  # when the agent started counting
    models: tuple[int, ...]
    streams: tuple[int, ...]
    stream_exceptions: tuple[int, ...]
    exceptions_total: int
    dumps_total: int
    # Added after the first schema-4 agents (an array that ends before it decodes with 0):
    call_failures_total: int = 0  # failed hooked calls since start
    # Added later still (an array that ends before them decodes with these):
    #: flat (device_id, errors, exceptions, streams with errors) quads: failed
    #: synchronizes and executes on the device's streams (destroyed ones too),
    #: exceptions on it, streams that ever failed one
    devices: tuple[int, ...] = ()
    #: the sequence number of the last event these figures count (0: not known): an
    #: event numbered up to it is in them already, one after it is not
    through_seq: int = 0


@register(27, "goodbye")
class Goodbye(NamedTuple):
    """The job is ending: the last event its agent sends."""

    seq: int
    ts_ns: int
    exit_status: int  # as a shell sees it (128 + N: killed by signal N); see status_known
    status_known: bool  # False: the agent stopped without learning the job's status
    reason: str  # "exit", "signal SIGTERM", "agent stopped", ...


# ---------------------------------------------------------------- profiling
@register(18, "profiling_state")
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


@register(19, "op_timing")
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
    # Schema 5 (an older array decodes with these defaults): the device the model
    # runs on (-1: not known), and the AI Core metric values the profiling data
    # carried for this run of the operator, by msprof's op_summary column name
    # (empty: none; live timings from model subscription never carry any).
    device_id: int = -1
    metrics: Summary = {}  # noqa: RUF012 (never mutated)
    # Schema 7 (an older array decodes with these defaults): the physical stream
    # and task the operator ran as, and its task type (``AI_CORE``, ``AI_CPU`` …),
    # as msprof's exported files name them (-1 / "": not known; model
    # subscription never knows them).
    stream_id: int = -1
    task_id: int = -1
    task_type: str = ""


@register(20, "tx_mark")
class TxMark(NamedTuple):
    """An msproftx instant mark."""

    seq: int
    ts_ns: int
    message: str
    # Schema 6 (an older array decodes with this default): the host thread that
    # marked (its native id, ``threading.get_native_id()``, as StreamSyncBegin's;
    # 0: not known).
    thread_id: int = 0


@register(21, "tx_range")
class TxRange(NamedTuple):
    """An msproftx range (push/pop or range_start/range_stop), sent when it ends."""

    seq: int
    ts_ns: int
    message: str
    start_ns: int
    end_ns: int
    # Schema 6 (an older array decodes with these defaults; 0: not known): the
    # thread that opened the range and the one that closed it. A push/pop range
    # opens and closes on one thread; a range_start/range_stop range may not.
    thread_id: int = 0
    end_thread_id: int = 0


# ---------------------------------------------------------------- dumps, logs
#: what a :class:`DumpFileSeen` says its file is (``aclmon.dump.classify`` tells them apart)
OP_DUMP = "op-dump"  # an operator's inputs and outputs (acl.json dump)
EXCEPTION_DUMP = "exception-dump"  # the failing operator's, written at an AI Core exception
OVERFLOW_DUMP = "overflow"  # an Opdebug file: overflow records of the operators that overflowed
NANO_DUMP = "nano"  # a compact dump of a nano SoC
STATS_DUMP = "stats"  # a statistics CSV (dump_data "stats")
DUMP_KINDS = (OP_DUMP, EXCEPTION_DUMP, OVERFLOW_DUMP, NANO_DUMP, STATS_DUMP)


@register(22, "dump_file")
class DumpFileSeen(NamedTuple):
    seq: int
    ts_ns: int
    path: str
    kind: str  # one of DUMP_KINDS
    size: int
    summary: Summary  # decoded header / overflow status in plain values


@register(23, "log")
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


@register(24, "drops")
class Drops(NamedTuple):
    """Events lost on purpose: ``total`` dropped so far at ``where``, and why."""

    seq: int
    ts_ns: int
    total: int
    where: str
    why: str


@register(25, "call_failed")
class CallFailed(NamedTuple):
    """A hooked pyACL call returned an error code; ``message`` is what the runtime said
    about it (``acl.get_recent_err_msg()`` on the calling thread, "" when it says nothing)."""

    seq: int
    ts_ns: int
    api: str  # "rt.synchronize_stream", "mdl.load_from_file", ...
    ret: int
    message: str
    thread_id: int
    stream: int  # the stream handle the call was about (-1: none)


#: every event class, for annotations: a static union, so a type checker knows each
#: member (tests/test_events.py checks it names exactly the registered kinds).
Event: TypeAlias = (
    Hello
    | DeviceSample
    | HostSample
    | HostNpuSample
    | DeviceSet
    | DeviceReset
    | ContextCreated
    | ContextDestroyed
    | ContextCurrent
    | StreamCreated
    | StreamDestroyed
    | StreamSyncBegin
    | StreamSynchronized
    | ModelLoaded
    | ModelUnloaded
    | ExecuteBegin
    | ExecuteEnd
    | AclException
    | Triage
    | History
    | Goodbye
    | ProfilingState
    | OpTiming
    | TxMark
    | TxRange
    | DumpFileSeen
    | LogLine
    | Drops
    | CallFailed
    | cmd.SetProfilingConfig
    | cmd.StartProfiling
    | cmd.StopProfiling
    | cmd.RequestSnapshot
    | cmd.Ping
    | cmd.Reply
    | ClockOffset
)


#: every command (viewer -> agent), the registrations with ``command=True``
#: (tests/test_events.py checks it against COMMAND_KINDS).
Command: TypeAlias = (
    cmd.SetProfilingConfig | cmd.StartProfiling | cmd.StopProfiling | cmd.RequestSnapshot | cmd.Ping
)


#: kinds a viewer may send to an agent: every registration above with ``command=True``.
COMMAND_KINDS: frozenset[type[Any]] = declared_commands()


def is_command(event: Event) -> TypeGuard[Command]:
    """Whether ``event`` is a command a viewer may send (it then has a ``request_id``)."""
    return type(event) in COMMAND_KINDS


def kind_name(event: Event) -> str:
    """The snake_case name of an event's kind (``"stream_created"``)."""
    return KIND_NAMES[type(event)]
