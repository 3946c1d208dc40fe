"""The sections of the folded state, and which event kinds move which.

A viewer redraws what changed: each view names the sections it draws, and
:class:`aclmon.store.Store` keeps a version per section that goes up when a
batch held an event of a kind that can change it (:data:`KIND_SECTIONS`). So a
view whose sections did not move has nothing to do, whatever else arrived.

The table errs on the side of moving too much: a kind moves every section its
handler may write (a failed synchronize counts on its device too), and a kind
it does not know, a Hello (another process: the state starts afresh), a
History (totals restated) or a restored snapshot move them all.
"""

from __future__ import annotations

from aclmon import events as ev

#: the job itself: its Hello, goodbye, process usage (HostSample), clock offset
JOB = "job"
#: devices: samples, set/reset, what failed on each
DEVICES = "devices"
#: contexts and streams: states, syncs, errors, threads
STREAMS = "streams"
MODELS = "models"
EXCEPTIONS = "exceptions"
#: failed hooked calls
FAILURES = "failures"
#: operator timings and msproftx records
OPS = "ops"
#: the agent's profiling state and its replies to commands
PROFILING = "profiling"
DUMPS = "dumps"
LOGS = "logs"
#: the machine's NPUs and processes (HostNpuSample)
HOST = "host"
#: event counts, gaps, drops, the decoder's skipped input (the header's figures)
COUNTERS = "counters"

SECTIONS: tuple[str, ...] = (
    JOB, DEVICES, STREAMS, MODELS, EXCEPTIONS, FAILURES, OPS, PROFILING, DUMPS, LOGS, HOST,
    COUNTERS,
)  # fmt: skip
ALL_SECTIONS: frozenset[str] = frozenset(SECTIONS)

_SYNC = frozenset({STREAMS, DEVICES})
KIND_SECTIONS: dict[type, frozenset[str]] = {
    ev.Hello: ALL_SECTIONS,
    ev.History: ALL_SECTIONS,
    ev.DeviceSample: frozenset({DEVICES}),
    ev.HostSample: frozenset({JOB}),
    ev.HostNpuSample: frozenset({HOST}),
    ev.DeviceSet: frozenset({DEVICES}),
    ev.DeviceReset: frozenset({DEVICES}),
    ev.ContextCreated: frozenset({STREAMS}),
    ev.ContextDestroyed: frozenset({STREAMS}),
    ev.ContextCurrent: frozenset({STREAMS}),
    ev.StreamCreated: frozenset({STREAMS}),
    ev.StreamDestroyed: frozenset({STREAMS}),
    ev.StreamSyncBegin: _SYNC,
    ev.StreamSynchronized: _SYNC,
    ev.ModelLoaded: frozenset({MODELS}),
    ev.ModelUnloaded: frozenset({MODELS}),
    ev.ExecuteBegin: frozenset({MODELS, STREAMS}),
    # a synchronous execute's End that names the model of exceptions waiting for
    # one moves the exceptions section too: the Store adds it then, not here
    ev.ExecuteEnd: frozenset({MODELS, STREAMS, DEVICES}),
    ev.AclException: frozenset({EXCEPTIONS, DEVICES, STREAMS, MODELS}),
    ev.Triage: frozenset({EXCEPTIONS}),
    ev.ProfilingState: frozenset({PROFILING}),
    ev.Reply: frozenset({PROFILING}),
    ev.OpTiming: frozenset({OPS}),
    ev.TxMark: frozenset({OPS}),
    ev.TxRange: frozenset({OPS}),
    ev.DumpFileSeen: frozenset({DUMPS}),
    ev.LogLine: frozenset({LOGS}),
    # the stream's last message, shown in its line of the Devices view
    ev.CallFailed: frozenset({FAILURES, STREAMS}),
    ev.Drops: frozenset({COUNTERS}),
    ev.Goodbye: frozenset({JOB}),
    ev.ClockOffset: frozenset({JOB}),
    # commands, folded into nothing (their replies are what counts)
    **dict.fromkeys(ev.COMMAND_KINDS, frozenset()),
}


#: kinds that come on a clock whether the job does anything or not
PERIODIC_KINDS: frozenset[type] = frozenset(
    {ev.DeviceSample, ev.HostSample, ev.HostNpuSample, ev.Drops}
)


def sections_of(kinds: set[type]) -> frozenset[str]:
    """The sections a batch holding events of ``kinds`` may have changed."""
    moved: set[str] = {COUNTERS}
    for kind in kinds:
        moved |= KIND_SECTIONS.get(kind, ALL_SECTIONS)
    return frozenset(moved)
