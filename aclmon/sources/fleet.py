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


#: how long ``--once`` waits for the fresh snapshots it asked the agents for
FRESH_SNAPSHOT_TIMEOUT_S = 5.0


def fleet_once(feed: Feed, wait: float, *, connect_timeout: float = 10.0) -> dict[str, Any]:
    """Connect, take in history (if any), ask every live agent for its snapshot
    now (NATS: through its relay), take ``wait`` seconds of live events, and
    return the fleet as JSON values: for each source what a direct ``attach PID
    --once --json`` says at the same moment."""
    fleet = FleetStore()
    merge = FreshSnapshots(fleet)

    def fold() -> None:
        drain(feed, fleet, apply=merge.apply)

    connect(feed, fold, connect_timeout=connect_timeout, ready=feed.caught_up.is_set)
    fold()
    request = getattr(feed, "request_snapshots", None)  # a local feed's are fresh already
    if request is not None:
        live = [key for key in fleet.sources if key not in feed.gone]
        merge.hold(request(live))
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
    """Holds a source's events back from the moment its fresh snapshot is asked for
    until that snapshot (its ``History``) arrives, then folds the snapshot first:
    the events it already counts are skipped by their numbers
    (``History.through_seq``), the later ones counted. So the snapshot and the
    live events merge by sequence number, never both, and the exceptions keep the
    agent's order."""

    def __init__(self, fleet: FleetStore) -> None:
        self.fleet = fleet
        #: source -> its events since the request, while its snapshot has not come
        self.held: dict[SourceKey, list[ev.Event]] = {}

    def hold(self, keys: set[SourceKey]) -> None:
        for key in keys:
            self.held.setdefault(key, [])

    def waiting(self) -> bool:
        return bool(self.held)

    def apply(self, key: SourceKey, events: list[ev.Event]) -> None:
        held = self.held.get(key)
        if held is None:
            self.fleet.apply(key, events)
            return
        held.extend(events)
        if any(type(e) is ev.History for e in events):
            del self.held[key]
            snapshot = [e for e in held if not e.seq]
            self.fleet.apply(key, snapshot + [e for e in held if e.seq])

    def release(self) -> None:
        """Fold what is held for snapshots that never came (as it arrived)."""
        for key, held in self.held.items():
            self.fleet.apply(key, held)
        self.held.clear()
