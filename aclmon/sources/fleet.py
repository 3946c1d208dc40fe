"""The fleet as a viewer reads it: the feeds' protocol, one rank as a
:class:`~aclmon.sources.base.Source`, the feed the command line names, and the
fleet's ``--once``.

A feed (:class:`~aclmon.fleet.local.LocalFeed`, every agent on this host, or
:class:`~aclmon.fleet.nats_source.NatsFeed`) delivers ``(source key, events)``
batches for many agents; :func:`drain` folds them into a
:class:`~aclmon.store.fleet.FleetStore`. :class:`MemberSource` is one of those
agents for the single-agent screens (the drill-down), while the other ranks
keep being folded into the fleet.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import Any, Protocol

from aclmon import events as ev
from aclmon.bus.states import ENDED
from aclmon.errors import AclmonError
from aclmon.sources.base import Source
from aclmon.sources.once import connect, fold_for
from aclmon.store.fleet import EXITED, FleetStore, SourceKey

#: events folded per tick at most (the rest wait in the feed's bounded buffer)
MAX_BATCH = 200_000


class Feed(Protocol):
    """What the fleet screen, its drill-down and ``--once`` read of a feed;
    :class:`~aclmon.fleet.local.LocalFeed` and
    :class:`~aclmon.fleet.nats_source.NatsFeed` both are one."""

    #: what is watched (an address, "every agent on this host")
    description: str
    #: commands are never sent (``--readonly``, or credentials that may not)
    readonly: bool
    #: one of :mod:`aclmon.bus.states`, and why when it is not ``connected``
    state: str
    state_reason: str
    #: set once what the feed had to read first (history, the registry) is read
    caught_up: threading.Event
    #: the sources whose agent went away (their state stays on screen)
    gone: set[SourceKey]

    def start(self) -> None: ...

    def poll(self, max_events: int = ...) -> list[tuple[SourceKey, list[ev.Event]]]: ...

    def send_command(
        self, key: SourceKey, cls: type, *fields: Any, timeout: float = ...
    ) -> ev.Reply: ...

    def decoder_counts(self, key: SourceKey | None = None) -> tuple[int, int]: ...

    def close(self) -> None: ...


def drain(
    feed: Feed,
    fleet: FleetStore,
    max_events: int = MAX_BATCH,
    apply: Callable[[SourceKey, list[ev.Event]], None] | None = None,
) -> int:
    """Fold what the feed has into the fleet (through ``apply`` when given); mark
    the sources that went away; note the relays' heartbeats (liveness, clock
    offsets). Returns how many events were folded."""
    return fleet.take_from(feed, max_events, apply)


def member_title(fleet: FleetStore, key: SourceKey) -> str:
    """How a fleet member is named on its screen: "rank 3", else "pid 4242"."""
    entry = fleet.sources.get(key)
    rank = entry.rank if entry is not None else None
    return f"rank {rank}" if rank is not None else f"pid {key[1]}"


class MemberSource(Source):
    """One rank of the fleet as a single-agent source, for the drill-down.

    Its events go to the single-agent app (which folds them into the rank's
    own store, shared with the fleet); every other rank's events are folded
    into the fleet meanwhile, so coming back shows them current. The feed
    belongs to the fleet screen: closing a member leaves it open.
    """

    def __init__(self, feed: Feed, fleet: FleetStore, key: SourceKey) -> None:
        self.feed = feed
        self.fleet = fleet
        self.key = key
        self.readonly = feed.readonly
        self.title = member_title(fleet, key)
        self.description = f"{self.title} · pid {key[1]} on {key[0]} ({feed.description})"

    @property
    def state(self) -> str:
        return ENDED if self.key in self.feed.gone else self.feed.state

    @property
    def state_reason(self) -> str:
        return self.feed.state_reason

    def poll(self, max_events: int) -> list[ev.Event]:
        mine: list[ev.Event] = []
        for key, events in self.feed.poll(max_events):
            if key == self.key:
                mine.extend(events)
            else:
                self.fleet.apply(key, events)
        return mine

    def send_command(self, cls: type, *fields: Any, timeout: float = 3.0) -> ev.Reply:
        return self.feed.send_command(self.key, cls, *fields, timeout=timeout)

    def decoder_counts(self) -> tuple[int, int]:
        return self.feed.decoder_counts(self.key)


def make_feed(args: argparse.Namespace, targets: list[str]) -> Feed:
    """The fleet feed the arguments name: NATS, or the agents on this host."""
    from aclmon.bus.secrets import NATS_TOKEN_ENV, TOKEN, read_secret
    from aclmon.fleet.commands import credentials_from, parse_duration

    nats_targets = [t for t in targets if t.startswith(("nats://", "tls://"))]
    if nats_targets:
        if len(targets) != 1 or args.all:
            raise AclmonError("a nats:// target goes alone (no PIDs, no --all)")
        from aclmon.fleet.connect import parse_target
        from aclmon.fleet.nats_source import NatsFeed

        url, scope = parse_target(nats_targets[0])
        token = read_secret(args, TOKEN, env=NATS_TOKEN_ENV)
        since = parse_duration(args.since) if args.since else None
        return NatsFeed(
            url,
            scope,
            credentials_from(args, token),
            since_s=since,
            summary_only=args.summary_only,
            readonly=args.readonly or args.once,
        )
    if args.since or args.summary_only:
        raise AclmonError("--since and --summary-only go with a nats:// target")
    from aclmon.fleet.local import LocalFeed

    pids = None
    if targets:
        if args.all:
            raise AclmonError("give PIDs or --all, not both")
        bad = [t for t in targets if not t.isdigit()]
        if bad:
            raise AclmonError(f"several targets must all be PIDs, not {', '.join(bad)}")
        pids = [int(t) for t in targets]
    return LocalFeed(pids, token=read_secret(args, TOKEN), readonly=args.readonly or args.once)


#: how long ``--once`` waits for the fresh snapshots it asked the agents for (a relay
#: that is not there answers at once: "no responders")
FRESH_SNAPSHOT_TIMEOUT_S = 10.0


def fleet_once(feed: Feed, wait: float, *, connect_timeout: float = 10.0) -> dict[str, Any]:
    """Connect, take in history (if any), ask every live agent for its snapshot
    now (NATS: through its relay), take ``wait`` seconds of live events, and
    return the fleet as JSON values: for each source what a direct ``attach PID
    --once --json`` says at the same moment."""
    fleet = FleetStore()
    # A local feed's sources are fresh already (each subscriber got its snapshot).
    request = getattr(feed, "request_snapshots", None)
    merge = FreshSnapshots(fleet, hold=request is not None)

    def fold() -> None:
        drain(feed, fleet, apply=merge.apply)

    connect(feed, fold, connect_timeout=connect_timeout, ready=feed.caught_up.is_set)
    fold()
    if request is not None:
        live = [key for key in merge.sources() if key not in feed.gone]
        merge.asked(request(live, timeout=FRESH_SNAPSHOT_TIMEOUT_S))
    fold_for(fold, wait, pending=merge.waiting, at_most=FRESH_SNAPSHOT_TIMEOUT_S)
    merge.release()
    for key in list(feed.gone):  # gone before it sent anything: still one of the job's ranks
        fleet.mark(key, EXITED)
    data = fleet.to_json()
    malformed, unknown = feed.decoder_counts()
    data["target"] = feed.description
    data["malformed"] = malformed
    data["unknown"] = unknown
    return data


class FreshSnapshots:
    """Folds each source's stored snapshot, its fresh one and its events so that they
    meet by sequence number, never both: a source's events are held from the start
    until the snapshot asked for arrives (the first ``History`` after the request,
    in stream order: it counts every event before it), then its snapshots fold
    first, in order, and its events after them (those a snapshot counts are skipped
    by their numbers, ``History.through_seq``). Sources not asked (exited, or no
    relay answered) fold as their events came."""

    def __init__(self, fleet: FleetStore, *, hold: bool) -> None:
        self.fleet = fleet
        self.hold = hold
        #: source -> its events so far, while held
        self.held: dict[SourceKey, list[ev.Event]] = {}
        #: asked source -> where in its held events the request was sent (None: not yet)
        self.marks: dict[SourceKey, int] | None = None

    def sources(self) -> list[SourceKey]:
        return [*self.held, *(k for k in self.fleet.sources if k not in self.held)]

    def waiting(self) -> bool:
        return bool(self.held)

    def apply(self, key: SourceKey, events: list[ev.Event]) -> None:
        if not self.hold or (self.marks is not None and key not in self.held):
            self.fleet.apply(key, events)  # released, not asked, or new since the request
            return
        held = self.held.setdefault(key, [])
        held.extend(events)
        mark = self.marks.get(key) if self.marks is not None else None
        if mark is not None and any(type(e) is ev.History for e in held[mark:]):
            self._fold(key)

    def asked(self, keys: set[SourceKey]) -> None:
        """The request went to ``keys`` (those that answered): the others fold now."""
        self.marks = {key: len(events) for key, events in self.held.items() if key in keys}
        for key in [k for k in self.held if k not in keys]:
            self._fold(key, in_order=True)

    def release(self) -> None:
        """Fold what is still held (a snapshot that never came), as it came."""
        for key in list(self.held):
            self._fold(key, in_order=True)

    def _fold(self, key: SourceKey, *, in_order: bool = False) -> None:
        held = self.held.pop(key)
        if self.marks is not None:
            self.marks.pop(key, None)
        if in_order:
            self.fleet.apply(key, held)
        else:
            self.fleet.apply(key, [e for e in held if not e.seq] + [e for e in held if e.seq])
