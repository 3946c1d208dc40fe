"""Many sources at once: one :class:`~aclmon.store.Store` per agent, plus
what the fleet screen needs across them.

A source is ``(host, pid)``. Each has its own store, so a Hello from one
agent never restarts another's state (the single store treats a Hello from
another process as a restart behind the same address). Aggregates are
computed on demand from the per-source states: a row per source (rank,
devices, utilization, HBM, executions per second, exceptions, overflows,
last error, state) and the earliest exception of the job, which is the
usual root cause when ranks fail one after another.

A source is what it says only if its Hello agrees with where it came from:
a Hello whose host or pid differs from the source's key (for NATS, the host
and pid of the subject, which the server's permissions tie to one relay's
credentials) marks the source *refused*; none of its events are folded, and
it appears only in ``refused`` (``to_json``) so that the attempt is seen.

Liveness does not trust the last event's numbers: a source nothing was heard
from for ``STALE_AFTER_S`` (by the viewer's clock), or whose host's relay
stopped its heartbeat for ``RELAY_SILENT_AFTER_S``, is *stale*, and stale or
exited sources have no executions per second.

Timestamps come from each host's clock: within a source events keep their
sequence order; across sources they are compared on one clock, the NATS
server's: each host's relay measures its offset to it and sends it in every
source's stream (:class:`~aclmon.events.ClockOffset`, kept in JetStream with
the events, so a viewer that joins late orders them the same), and a source's
times are taken as ``host time + offset`` (:meth:`FleetSource.server_ns`; as
they are when no offset was measured). So a host whose clock is behind does not
take the "first exception" slot, and :meth:`FleetStore.first_anomaly` is the
first exception, overflow or NaN/Inf of the job on that one clock: where a
failure that spreads from rank to rank (an overflow all-reduced into every
rank's gradients) began. Heartbeats tell only whether a relay is alive.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aclmon import events as ev
from aclmon.events.names import short_host
from aclmon.store.fold import Store
from aclmon.store.state import StoreState, triage_of

SourceKey = tuple[str, int]

LIVE = "live"
EXITED = "exited"
STALE = "stale"

#: event time over which executions per second are measured
RATE_WINDOW_NS = 5_000_000_000
#: a live source nothing was heard from for this long is stale (agents sample
#: every second by default, so a live one is never this quiet)
STALE_AFTER_S = 10.0
#: a relay heartbeats every second; this long without one, its sources are stale
RELAY_SILENT_AFTER_S = 3.5


@dataclass
class FleetSource:
    key: SourceKey
    store: Store = field(default_factory=Store)
    state: str = LIVE
    #: why its events are refused ("" = accepted)
    refused: str = ""
    #: the viewer's monotonic clock when its last events arrived (0 = never)
    heard: float = 0.0
    #: (newest event time, executions so far) after each applied batch
    rate_points: collections.deque[tuple[int, int]] = field(
        default_factory=lambda: collections.deque(maxlen=64)
    )

    @property
    def hello(self) -> ev.Hello | None:
        return self.store.state.hello

    def server_ns(self, ts_ns: int) -> int:
        """A time of this source's host on the NATS server's clock, by the offset
        its relay measured (the host's time as it is when none was)."""
        clock = self.store.state.clock_offset
        return ts_ns + clock.offset_ns if clock is not None else ts_ns

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


#: kinds of anomaly, as ``first_anomaly`` names them
EXCEPTION = "exception"
OVERFLOW = "overflow"
NAN_INF = "nan_inf"
#: runtime codes that report an overflow rather than a fault
OVERFLOW_CODES = (207003, 207016)


@dataclass(frozen=True)
class Anomaly:
    """Something went numerically or physically wrong on one source, at one time."""

    key: SourceKey
    rank: int | None
    kind: str  # EXCEPTION, OVERFLOW or NAN_INF
    device_id: int | None
    op_type: str
    op_name: str
    host_ns: int  # on the source host's clock
    offset_ns: int | None  # that host's clock to the NATS server's (None: not measured)
    uncertainty_ns: int = 0
    detail: str = ""
    #: what it is in the source's state: the AclException, the DumpFileSeen or the
    #: CallFailure (a viewer goes to it)
    item: Any = field(default=None, compare=False, repr=False)

    @property
    def server_ns(self) -> int:
        """The time on the server's clock (the host's, when no offset is known)."""
        return self.host_ns + (self.offset_ns or 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.key[0],
            "pid": self.key[1],
            "rank": self.rank,
            "kind": self.kind,
            "device_id": self.device_id,
            "op_type": self.op_type,
            "op_name": self.op_name,
            "operator": f"{self.op_type} {self.op_name}".strip(),
            "time_ns": self.server_ns,
            "host_time_ns": self.host_ns,
            "clock_offset_ns": self.offset_ns,
            "clock_uncertainty_ns": self.uncertainty_ns if self.offset_ns is not None else None,
            "detail": self.detail,
        }


def source_anomalies(key: SourceKey, rank: int | None, s: StoreState) -> list[Anomaly]:
    """The anomalies one source's state shows: each exception (NaN/Inf when its
    triage found NaN/Inf inputs, overflow for an overflow code), each overflow dump
    file (at the time in its name), each failed call that reported an overflow."""
    clock = s.clock_offset
    offset = clock.offset_ns if clock is not None else None
    uncertainty = clock.uncertainty_ns if clock is not None else 0
    devices = sorted(s.devices)
    only_device = devices[0] if len(devices) == 1 else None
    found: list[Anomaly] = []

    def add(
        kind: str, device: int | None, op_type: str, op_name: str, ns: int, detail: str,
        item: Any,
    ) -> None:  # fmt: skip
        found.append(
            Anomaly(
                key, rank, kind, device, op_type, op_name, ns, offset, uncertainty, detail, item
            )
        )

    for e in s.exceptions:
        triage = triage_of(s, e) or {}
        kind = EXCEPTION
        if e.error_code in OVERFLOW_CODES:
            kind = OVERFLOW
        elif triage.get("nan_inf_inputs"):
            kind = NAN_INF
        detail = str(triage.get("verdict") or f"error {e.error_code}")
        add(kind, e.device_id, e.op_type, e.op_name, e.ts_ns, detail, e)
    for d in s.dumps:
        if d.kind != OVERFLOW or not isinstance(d.summary, dict):
            continue
        stamp = d.summary.get("timestamp")
        ns = stamp * 1000 if isinstance(stamp, int) and stamp > 0 else d.ts_ns
        add(OVERFLOW, only_device, str(d.summary.get("op_type") or ""),
            str(d.summary.get("op_name") or ""), ns, d.path, d)  # fmt: skip
    for failure in s.call_failures:
        if failure.event.ret in OVERFLOW_CODES:
            device = failure.device_id if failure.device_id >= 0 else only_device
            add(OVERFLOW, device, "", "", failure.event.ts_ns, failure.event.api, failure)
    return found


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
    first_exception_ns: int | None  # on the server's clock (FleetSource.server_ns)
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
        #: host -> the viewer's monotonic clock at that host relay's last heartbeat
        self.relay_heard: dict[str, float] = {}
        #: events not folded because their source was refused
        self.refused_events = 0
        #: each source's first anomaly, at the version of its store it was found at
        self._firsts: dict[SourceKey, tuple[int, Anomaly | None]] = {}
        #: each source's row, with the store, its version and the liveness it was made from
        self._rows: dict[SourceKey, tuple[Store, int, str, FleetRow]] = {}

    def source(self, key: SourceKey) -> FleetSource:
        entry = self.sources.get(key)
        if entry is None:
            entry = self.sources[key] = FleetSource(key)
            self.version += 1
        return entry

    def apply(self, key: SourceKey, events: list[ev.Event], now: float | None = None) -> None:
        entry = self.source(key)
        if not events:
            return
        if entry.refused:
            self.refused_events += len(events)
            return
        for event in events:
            if isinstance(event, ev.Hello) and not _hello_names(key, event):
                entry.refused = (
                    f"published as host {key[0]} pid {key[1]}, but its Hello says host"
                    f" {event.host!r} pid {event.pid}"
                )
                entry.store = Store()  # nothing it sent is shown
                self._rows.pop(key, None)
                entry.rate_points.clear()
                self.refused_events += len(events)
                self.version += 1
                return
        entry.store.apply_many(events)
        entry.heard = time.monotonic() if now is None else now
        newest = entry.store.state.newest_ts_ns
        if newest:
            entry.rate_points.append((newest, entry.executions()))
        self.version += 1

    def mark(self, key: SourceKey, state: str) -> None:
        entry = self.source(key)
        if entry.state != state:
            entry.state = state
            self.version += 1

    def heard_relay(self, host: str, now: float | None = None) -> None:
        """A heartbeat of ``host``'s relay: it is alive (at ``now``, the viewer's
        monotonic clock)."""
        self.relay_heard[host] = time.monotonic() if now is None else now

    def take_from(
        self,
        feed: Any,
        max_events: int = 200_000,
        apply: Callable[[SourceKey, list[ev.Event]], None] | None = None,
    ) -> int:
        """Fold what a feed has (``poll``; through ``apply`` when given: ``--once``
        holds a source's events until its fresh snapshot), mark the sources it saw
        go (``gone``), and note its relays' heartbeats (``take_heartbeats``, NATS
        feeds only); returns how many events were folded."""
        fold = apply if apply is not None else self.apply
        taken = 0
        for key, events in feed.poll(max_events):
            fold(key, events)
            taken += len(events)
        for key in list(feed.gone):
            if key in self.sources and self.sources[key].state != EXITED:
                self.mark(key, EXITED)
        take_heartbeats = getattr(feed, "take_heartbeats", None)
        if take_heartbeats is not None:
            for host, at in take_heartbeats():
                self.heard_relay(host, at)
        return taken

    def state_of(self, entry: FleetSource, now: float | None = None) -> str:
        """``exited``, ``stale`` (nothing heard for a while, or its relay is
        silent) or ``live``."""
        if entry.state != LIVE:
            return entry.state
        now = time.monotonic() if now is None else now
        if entry.heard and now - entry.heard > STALE_AFTER_S:
            return STALE
        relay = self.relay_heard.get(entry.key[0])
        if relay is not None and now - relay > RELAY_SILENT_AFTER_S:
            return STALE
        return LIVE

    def accepted(self) -> list[FleetSource]:
        return [entry for entry in self.sources.values() if not entry.refused]

    # ------------------------------------------------------------ aggregates
    def earliest_exception(self) -> tuple[SourceKey, ev.AclException] | None:
        """The first exception of the whole job on the server's clock."""
        best: tuple[SourceKey, ev.AclException] | None = None
        best_ns = 0
        for entry in self.accepted():
            exceptions = entry.store.state.exceptions
            if not exceptions:
                continue
            at = entry.server_ns(exceptions[0].ts_ns)
            if best is None or at < best_ns:
                best, best_ns = (entry.key, exceptions[0]), at
        return best

    def anomaly_order(self) -> list[Anomaly]:
        """Each source's first anomaly, the earliest first, by the server's clock (each
        host's times corrected by its measured offset): the order the ranks went bad."""
        firsts = []
        for entry in self.accepted():
            key = entry.key
            version = entry.store.version
            cached = self._firsts.get(key)
            if cached is None or cached[0] != version:
                found = source_anomalies(key, entry.rank, entry.store.state)
                first = min(found, key=lambda a: a.server_ns) if found else None
                cached = self._firsts[key] = (version, first)
            if cached[1] is not None:
                firsts.append(cached[1])
        return sorted(firsts, key=lambda a: (a.server_ns, a.key))

    def first_anomaly(self) -> Anomaly | None:
        """The first exception, overflow or NaN/Inf of the whole job (see
        :meth:`anomaly_order`)."""
        order = self.anomaly_order()
        return order[0] if order else None

    def clock_offsets(self) -> dict[str, dict[str, int]]:
        """host -> its measured offset to the server's clock and the uncertainty (the
        host of the sources' subjects, which only that host's relay may publish on)."""
        out: dict[str, dict[str, int]] = {}
        for entry in sorted(self.accepted(), key=lambda e: e.key):
            clock = entry.store.state.clock_offset
            if clock is not None:
                out[entry.key[0]] = {
                    "offset_ns": clock.offset_ns,
                    "uncertainty_ns": clock.uncertainty_ns,
                }
        return out

    def row(self, entry: FleetSource, now: float | None = None, state: str = "") -> FleetRow:
        """The source as the fleet screen shows it (``state``: its liveness, when
        the caller has it)."""
        s = entry.store.state
        state = state or self.state_of(entry, now)
        hello = s.hello
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
        overflows = sum(1 for d in s.dumps if d.kind == ev.OVERFLOW_DUMP)
        devices = tuple(sorted(s.devices))
        if not devices and hello is not None and hello.device_id >= 0:
            devices = (hello.device_id,)
        return FleetRow(
            key=entry.key,
            host=hello.host if hello else entry.key[0],
            pid=entry.key[1],
            rank=entry.rank,
            job=hello.job if hello else "",
            devices=devices,
            cube_util=round(sum(utils) / len(utils)) if utils else -1,
            cube_history=history,
            hbm_used=sum(x.hbm_used for x in samples),
            hbm_total=sum(x.hbm_total for x in samples),
            executions=entry.executions(),
            executions_per_s=entry.executions_per_s() if state == LIVE else 0.0,
            failures=entry.failures(),
            exceptions=s.exceptions_total,
            overflows=overflows,
            first_exception_ns=(entry.server_ns(s.exceptions[0].ts_ns) if s.exceptions else None),
            last_error=last_error,
            health=health,
            state=state,
            gaps=s.counters.gaps,
            dropped=s.counters.agent_dropped,
        )

    def rows(self) -> list[FleetRow]:
        """One row per accepted source. A row is made again only when its source's
        store changed (its version) or its liveness did: a screen of 1,024 ranks
        that refreshes four times a second rebuilds the rows of the ranks that
        sent something, not all of them."""
        now = time.monotonic()
        cache = self._rows
        out = []
        for entry in self.accepted():
            state = self.state_of(entry, now)
            store = entry.store
            cached = cache.get(entry.key)
            if (
                cached is None
                or cached[0] is not store
                or cached[1] != store.version
                or cached[2] != state
            ):
                row = self.row(entry, now, state)
                cache[entry.key] = (store, store.version, state, row)
            else:
                row = cached[3]
            out.append(row)
        return out

    def to_json(self) -> dict[str, Any]:
        """The fleet as plain JSON values (``aclmon attach --all --once --json``)."""
        sources = []
        now = time.monotonic()
        for key in sorted(self.sources, key=_order):
            entry = self.sources[key]
            if entry.refused:
                continue
            s = entry.store.state
            hello = s.hello
            sources.append(
                {
                    "host": hello.host if hello else key[0],
                    "pid": key[1],
                    "rank": entry.rank,
                    "identity": entry.identity,
                    "state": self.state_of(entry, now),
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
                    # (ts_ns, device, stream id, task id) of the newest, oldest first
                    "exceptions": [
                        [e.ts_ns, e.device_id, e.stream_id, e.task_id]
                        for e in list(s.exceptions)[-20:]
                    ],
                    "events": s.counters.events,
                    "gaps": s.counters.gaps,
                    "dropped": s.counters.agent_dropped,
                    "drops": dict(sorted(s.counters.agent_drops.items())),
                }
            )
        earliest = self.earliest_exception()
        order = self.anomaly_order()
        return {
            "sources": sources,
            "refused": [
                {"host": e.key[0], "pid": e.key[1], "why": e.refused}
                for e in self.sources.values()
                if e.refused
            ],
            "executions": sum(x["executions"] for x in sources),
            "exceptions_total": sum(x["exceptions_total"] for x in sources),
            "earliest_exception": (
                {"host": earliest[0][0], "pid": earliest[0][1], **ev.to_json(earliest[1])}
                if earliest
                else None
            ),
            "first_anomaly": order[0].to_json() if order else None,
            "anomaly_order": [anomaly.to_json() for anomaly in order],
            "clock_offsets": self.clock_offsets(),
        }


def _order(key: SourceKey) -> tuple[str, int]:
    return (key[0], key[1])


def _hello_names(key: SourceKey, hello: ev.Hello) -> bool:
    """Whether a Hello agrees with the source it came from (host token and pid)."""
    return hello.pid == key[1] and short_host(hello.host) == key[0]


def mean_history(histories: list[Any]) -> tuple[int, ...]:
    """The devices' utilization histories averaged point by point over their common
    (newest) length; a point no device could measure stays -1 ("not supported"), and
    an unmeasured device never pulls the mean of the others down."""
    if not histories:
        return ()
    if len(histories) == 1:  # one device (a rank's usual case): its own points
        return tuple(v if v >= 0 else -1 for v in histories[0])
    length = min(len(h) for h in histories)
    out = []
    for i in range(length):
        known = [v for h in histories if (v := h[len(h) - length + i]) >= 0]
        out.append(sum(known) // len(known) if known else -1)
    return tuple(out)
