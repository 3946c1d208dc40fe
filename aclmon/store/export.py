"""The state as plain JSON values: ``aclmon attach --once --json`` and friends."""

from __future__ import annotations

from typing import Any

from aclmon import events as ev
from aclmon.acl_constants import error_name
from aclmon.store.ops import top_ops
from aclmon.store.state import StoreState, StreamState, runtime_message, triage_of


def state_to_json(s: StoreState) -> dict[str, Any]:
    """The state as plain JSON values (``aclmon attach --once --json``)."""
    c = s.counters
    return {
        "target": ev.to_json(s.hello) if s.hello else None,
        "newest_ts_ns": s.newest_ts_ns,
        "host": ev.to_json(s.host) if s.host else None,
        "host_npus": _host_npus_json(s),
        "devices": [
            {
                "device_id": d.device_id,
                "sample": ev.to_json(d.sample) if d.sample else None,
                "set_ret": d.set_ret,
                "reset": d.reset,
                "device_syncs": d.syncs,
                "last_device_sync_ns": d.last_sync_ns,
                "last_device_sync_ret": d.last_sync_ret,
                "device_sync_errors": d.sync_errors,
                "device_synchronizing": d.synchronizing,
                # what failed on it, destroyed streams included (the HEALTH column)
                "errors": d.errors,
                "exceptions": d.exceptions,
                "failed_streams": d.failed_streams,
                "contexts": [
                    {
                        "context": ctx.context,
                        "is_default": ctx.is_default,
                        "destroyed": ctx.destroyed,
                        "streams": [
                            _stream_json(s.streams[(ctx.context, h)])
                            for h in ctx.streams
                            if (ctx.context, h) in s.streams
                        ],
                    }
                    for ctx in s.contexts.values()
                    if ctx.device_id == d.device_id
                ],
            }
            for d in (s.devices[i] for i in sorted(s.devices))
        ],
        "models": [
            {
                "model_id": m.model_id,
                "device_id": m.device_id,
                "name": m.name,
                "op_count": m.op_count,
                "loaded": m.loaded,
                "running": m.running,
                "executions": m.executions,
                "failures": m.failures,
                "last_duration_ns": m.last_duration_ns,
            }
            for m in s.models.values()
        ],
        "since_ns": s.history_since_ns,
        "goodbye": ev.to_json(s.goodbye) if s.goodbye else None,
        "exceptions": {
            "total": s.exceptions_total,
            "dropped": s.exceptions_dropped,
            "recent": [
                {
                    **ev.to_json(e),
                    "runtime_message": runtime_message(s, e),
                    "triage": triage_of(s, e),
                }
                for e in list(s.exceptions)[-20:]
            ],
        },
        "call_failures": {
            "total": s.call_failures_total,
            "recent": [ev.to_json(f.event) for f in list(s.call_failures)[-20:]],
        },
        "profiling": ev.to_json(s.profiling) if s.profiling else None,
        "last_reply": ev.to_json(s.last_reply) if s.last_reply else None,
        "ops": [
            {
                "op_name": o.op_name,
                "op_type": o.op_type,
                "device_id": o.device_id if o.device_id >= 0 else None,  # -1: not known
                "model_id": o.model_id,
                "model_name": o.model_name,
                "count": o.count,
                "total_us": o.total_us,
                "mean_us": round(o.mean_us, 3),
                "min_us": o.min_us,
                "max_us": o.max_us,
                "metrics": {name: round(o.metric(name) or 0.0, 4) for name in o.metric_sums},
            }
            for o in top_ops(s, 50)
        ],
        "dumps": {
            "total": s.dumps_total,
            "dropped": s.dumps_dropped,
            "recent": [ev.to_json(d) for d in list(s.dumps)[-20:]],
        },
        "counters": {
            "events": c.events,
            "per_kind": dict(sorted(c.per_kind.items())),
            "gaps": c.gaps,
            "agent_dropped": c.agent_dropped,
            "agent_drops": dict(sorted(c.agent_drops.items())),
            "malformed": c.malformed,
            "unknown": c.unknown,
            "streams_forgotten": s.stream_history.forgotten,
            "contexts_forgotten": s.context_history.forgotten,
            "models_forgotten": s.model_history.forgotten,
        },
    }


#: the StreamState fields a stream's JSON carries as they are, in this order.
_STREAM_FIELDS = (
    "stream", "stream_id", "priority", "flags", "state", "last_sync_ns", "syncs", "errors",
    "exceptions",
)  # fmt: skip


def _stream_json(stream: StreamState) -> dict[str, Any]:
    out = {name: getattr(stream, name) for name in _STREAM_FIELDS}
    out["last_error"] = error_name(stream.last_error) if stream.last_error else None
    out["last_error_message"] = stream.last_error_message or None
    return out


def _host_npus_json(s: StoreState) -> dict[str, Any] | None:
    """The machine's NPUs as its host source last read them (None: no HostNpuSample)."""
    npus = s.host_npus
    if not npus.samples and not npus.refused:
        return None
    latest = npus.latest
    return {
        "host": npus.host,
        "state": latest.state if latest else None,
        "message": latest.message if latest else npus.refused_reason or None,
        "snapshot": npus.snapshot.to_plain() if npus.snapshot else None,
        "agent_pids": sorted(npus.agent_pids),
        "samples": npus.samples,
        "refused": npus.refused,
    }
