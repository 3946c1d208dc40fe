"""Many sources at once: one :class:`~aclmon.store.Store` per agent, plus
what the fleet screen needs across them.

A source is ``(host, pid)``. Each has its own store, so a Hello from one
agent never restarts another's state (the single store treats a Hello from
another process as a restart behind the same address). Aggregates are
computed on demand from the per-source states: a row per source (rank,
devices, utilization, HBM, executions per second, exceptions, overflows,
last error, state) and the earliest exception of the job, which is the
usual root cause when ranks fail one after another.

Timestamps come from each host's clock: within a source events keep their
sequence order; across sources only the times are compared.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from aclmon import events as ev
from aclmon.store.fold import Store

SourceKey = tuple[str, int]

LIVE = "live"
EXITED = "exited"

#: event time over which executions per second are measured
RATE_WINDOW_NS = 5_000_000_000


@dataclass
class FleetSource:
    key: SourceKey
    store: Store = field(default_factory=Store)
    state: str = LIVE
    #: (newest event time, executions so far) after each applied batch
    rate_points: collections.deque[tuple[int, int]] = field(
        default_factory=lambda: collections.deque(maxlen=64)
    )

    @property
    def hello(self) -> ev.Hello | None:
        return self.store.state.hello

    @property
    def identity(self) -> dict[str, Any]:
        """Job, rank, size, local rank, device and launcher variables from the Hello."""
        hello = self.hello
        if hello is None:
            return {}
        return {
            "job": hello.job,
            "rank": hello.rank if hello.rank >= 0 else None,
            "rank_size": hello.rank_size if hello.rank_size >= 0 else None,
            "local_rank": hello.local_rank if hello.local_rank >= 0 else None,
            "device_id": hello.device_id if hello.device_id >= 0 else None,
            "rank_env": dict(hello.rank_env),
        }

    @property
    def rank(self) -> int | None:
        hello = self.hello
        return hello.rank if hello is not None and hello.rank >= 0 else None

    def executions(self) -> int:
        return sum(m.executions for m in self.store.state.models.values())

    def failures(self) -> int:
        return sum(m.failures for m in self.store.state.models.values())

    def executions_per_s(self) -> float:
        points = self.rate_points
        if len(points) < 2:
            return 0.0
        newest_ts, newest_count = points[-1]
        for ts, count in points:
            if newest_ts - ts <= RATE_WINDOW_NS:
                span = newest_ts - ts
                return (newest_count - count) * 1e9 / span if span > 0 else 0.0
        return 0.0


@dataclass(frozen=True)
class FleetRow:
    """One source as the fleet screen shows it."""

    key: SourceKey
    host: str
    pid: int
    rank: int | None
    job: str
    devices: tuple[int, ...]
    cube_util: int  # mean over the source's devices, -1 = unknown
    cube_history: tuple[int, ...]
    hbm_used: int
    hbm_total: int
    executions: int
    executions_per_s: float
    failures: int
    exceptions: int
    overflows: int
    first_exception_ns: int | None
    last_error: str
    health: str
    state: str
    gaps: int
    dropped: int


class FleetStore:
    """See the module docstring. ``version`` goes up with every change."""

    def __init__(self) -> None:
        self.sources: dict[SourceKey, FleetSource] = {}
        self.version = 0

    def source(self, key: SourceKey) -> FleetSource:
        entry = self.sources.get(key)
        if entry is None:
            entry = self.sources[key] = FleetSource(key)
            self.version += 1
        return entry

    def apply(self, key: SourceKey, events: list[ev.Event]) -> None:
        entry = self.source(key)
        if not events:
            return
        entry.store.apply_many(events)
        newest = entry.store.state.newest_ts_ns
        if newest:
            entry.rate_points.append((newest, entry.executions()))
        self.version += 1

    def mark(self, key: SourceKey, state: str) -> None:
        entry = self.source(key)
        if entry.state != state:
            entry.state = state
            self.version += 1

    # ------------------------------------------------------------ aggregates
    def earliest_exception(self) -> tuple[SourceKey, ev.AclException] | None:
        """The first exception of the whole job (by each host's clock)."""
        best: tuple[SourceKey, ev.AclException] | None = None
        for key, entry in self.sources.items():
            exceptions = entry.store.state.exceptions
            if exceptions and (best is None or exceptions[0].ts_ns < best[1].ts_ns):
                best = (key, exceptions[0])
        return best

    def row(self, entry: FleetSource) -> FleetRow:
        s = entry.store.state
        hello = s.hello
        identity = entry.identity
        samples = [d.sample for d in s.devices.values() if d.sample is not None]
        utils = [x.cube_util for x in samples if x.cube_util >= 0]
        histories = [d.cube_history for d in s.devices.values() if d.cube_history]
        history = mean_history(histories)
        health = "OK"
        for sample in samples:
            if sample.health != "OK":
                health = sample.health
        last_error = ""
        if s.exceptions:
            last = s.exceptions[-1]
            last_error = f"{last.error_code} {last.op_type or last.op_name}".strip()
        overflows = sum(1 for d in s.dumps if d.kind == "overflow")
        devices = tuple(sorted(s.devices))
        if not devices and isinstance(identity.get("device_id"), int):
            devices = (identity["device_id"],)
        return FleetRow(
            key=entry.key,
            host=hello.host if hello else entry.key[0],
            pid=entry.key[1],
            rank=entry.rank,
            job=str(identity.get("job", "")),
            devices=devices,
            cube_util=round(sum(utils) / len(utils)) if utils else -1,
            cube_history=history,
            hbm_used=sum(x.hbm_used for x in samples),
            hbm_total=sum(x.hbm_total for x in samples),
            executions=entry.executions(),
            executions_per_s=entry.executions_per_s(),
            failures=entry.failures(),
            exceptions=s.exceptions_total,
            overflows=overflows,
            first_exception_ns=s.exceptions[0].ts_ns if s.exceptions else None,
            last_error=last_error,
            health=health,
            state=entry.state,
            gaps=s.counters.gaps,
            dropped=s.counters.agent_dropped,
        )

    def rows(self) -> list[FleetRow]:
        return [self.row(entry) for entry in self.sources.values()]

    def to_json(self) -> dict[str, Any]:
        """The fleet as plain JSON values (``aclmon attach --all --once --json``)."""
        sources = []
        for key in sorted(self.sources, key=_order):
            entry = self.sources[key]
            s = entry.store.state
            hello = s.hello
            sources.append(
                {
                    "host": hello.host if hello else key[0],
                    "pid": key[1],
                    "rank": entry.rank,
                    "identity": entry.identity,
                    "state": entry.state,
                    "devices": sorted(s.devices),
                    "models": [
                        {
                            "model_id": m.model_id,
                            "name": m.name,
                            "device_id": m.device_id,
                            "executions": m.executions,
                            "failures": m.failures,
                        }
                        for m in s.models.values()
                    ],
                    "executions": entry.executions(),
                    "failures": entry.failures(),
                    "exceptions_total": s.exceptions_total,
                    "events": s.counters.events,
                    "gaps": s.counters.gaps,
                    "dropped": s.counters.agent_dropped,
                    "drops": dict(sorted(s.counters.agent_drops.items())),
                }
            )
        earliest = self.earliest_exception()
        return {
            "sources": sources,
            "executions": sum(x["executions"] for x in sources),
            "exceptions_total": sum(x["exceptions_total"] for x in sources),
            "earliest_exception": (
                {"host": earliest[0][0], "pid": earliest[0][1], **ev.to_json(earliest[1])}
                if earliest
                else None
            ),
        }


def _order(key: SourceKey) -> tuple[str, int]:
    return (key[0], key[1])


def mean_history(histories: list[Any]) -> tuple[int, ...]:
    """The devices' utilization histories averaged point by point over their common
    (newest) length; a point no device could measure stays -1 ("not supported"), and
    an unmeasured device never pulls the mean of the others down."""
    if not histories:
        return ()
    length = min(len(h) for h in histories)
    out = []
    for i in range(length):
        known = [v for h in histories if (v := h[len(h) - length + i]) >= 0]
        out.append(sum(known) // len(known) if known else -1)
    return tuple(out)
