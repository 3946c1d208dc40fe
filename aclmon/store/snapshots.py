"""Snapshots of the replay's store: the states a seek starts from.

The replay's builder thread folds the whole recording once and keeps a
snapshot every ``spacing`` frames (:class:`Snapshots`); a seek restores the
nearest one at or before its target. A snapshot is cheap: the store's rings are
places in journals shared by every snapshot (:class:`RingJournal`), the rest is
a compressed pickle (:class:`Snapshot`), and the exceptions the rings keep hold
their repeated parts once (:class:`SharedParts`). Their count is bounded: past
``max_snapshots`` the spacing grows instead.
"""

from __future__ import annotations

import bisect
import itertools
import math
import pickle
import zlib
from collections import deque
from typing import Any, NamedTuple, TypeVar, cast

from aclmon import events as ev
from aclmon.store.fold import Store
from aclmon.store.state import StoreState

#: frames between two snapshots, at least: bounds the fold work of any seek
#: (1,250 frames are ~12 ms on a 2-core machine, a third of a paint).
DEFAULT_SNAPSHOT_EVERY = 1_250
#: snapshots kept at most (besides the empty one at position 0). Each costs
#: ~42 KiB on the 1M-event bench (its rings are places in shared journals, the
#: rest is compressed; 801 of them ~33 MiB), so past this many the spacing
#: grows instead (1M frames: one every 1,250; 4M frames: one every ~3,900).
DEFAULT_MAX_SNAPSHOTS = 1024
#: a seek's fold leaves a snapshot every this many frames before its target, at
#: most: going back a little from where a seek landed folds no more than this
NEAR_EVERY = 500
#: those snapshots kept at most (the newest)
NEAR_LIMIT = 16


_T = TypeVar("_T")


class Snapshots:
    """The snapshots taken so far, by position (0: the empty store).

    The builder thread adds; any thread reads. The replay engine holds its lock
    around every call but :meth:`take` and :meth:`restore` (which touch only the
    builder's store or the caller's).
    """

    def __init__(self, empty: StoreState, spacing: int, max_snapshots: int) -> None:
        self.max_snapshots = max_snapshots
        #: the builder's current spacing: ``snapshot_every`` or more for long recordings
        self.spacing = spacing
        self.journals = {name: RingJournal() for name in RINGS}
        #: sorted snapshot positions, and their snapshots
        self.at: list[int] = [0]
        self.states: dict[int, Snapshot] = {0: self.take(empty)}

    def nearest(self, position: int) -> tuple[int, Snapshot]:
        """The last snapshot at or before ``position``, and where it is."""
        at = self.at[bisect.bisect_right(self.at, position) - 1]
        return at, self.states[at]

    def next_position(self) -> int:
        """Where the builder takes its next snapshot."""
        return self.at[-1] + self.spacing

    def spread_over(self, length: int) -> None:
        """The recording's length is final: spread the snapshots still allowed evenly
        over the frames left (never closer than before). One stays reserved for the
        end itself ("E" is the commonest seek)."""
        while len(self.at) >= max(3, self.max_snapshots):
            self.thin()
        left = max(1, self.max_snapshots - len(self.at))
        self.spacing = max(self.spacing, math.ceil((length - self.at[-1]) / left))

    def add(self, position: int, snapshot: Snapshot) -> None:
        self.at.append(position)
        self.states[position] = snapshot
        if len(self.at) > self.max_snapshots + 1:
            self.thin()

    def thin(self) -> None:
        """Drop every other snapshot and double the spacing.

        Only for a recording still growing while it is built (its final length
        unknown): the snapshots stay evenly spaced and their count bounded.
        Position 0 (the empty store) and the newest snapshot are kept.
        """
        keep = self.at[::2]
        if keep[-1] != self.at[-1]:
            keep.append(self.at[-1])
        for at in set(self.at).difference(keep):
            del self.states[at]
        self.at = keep
        self.spacing *= 2

    def take(self, state: StoreState) -> Snapshot:
        """A snapshot of ``state`` (the builder's own store): its rings as places in the
        journals, everything else serialised and compressed."""
        rings = tuple(
            self.journals[name].record(getattr(state, name), getattr(state, f"{name}_dropped"))
            for name in RINGS
        )
        return Snapshot(_rest(state), rings)

    def restore(self, store: Store, snapshot: Snapshot) -> None:
        """Make ``store`` continue from ``snapshot`` (which stays unchanged)."""
        store.replace(_unpickled(snapshot.rest))
        for name, (end, length) in zip(RINGS, snapshot.rings, strict=True):
            setattr(store.state, name, self.journals[name].ring(end, length))


def _unpickled(rest: bytes) -> StoreState:
    """A snapshot's rest as a new state: its own objects, shared with nothing,
    so the store adopts it as it is (a copy would cost a quarter of a seek)."""
    state: StoreState = pickle.loads(zlib.decompress(rest))
    return state


def _rest(state: StoreState) -> bytes:
    """``state`` but its rings (saved empty), pickled and compressed."""
    held = [getattr(state, name) for name in RINGS]
    try:
        for name in RINGS:
            setattr(state, name, deque())
        return zlib.compress(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), 1)
    finally:
        for name, ring in zip(RINGS, held, strict=True):
            setattr(state, name, ring)


class NearSnapshot(NamedTuple):
    """A state a seek left behind: the rest as in :class:`Snapshot`, each ring as
    its items (references: mostly the journals' own items)."""

    rest: bytes
    rings: tuple[tuple[object, ...], ...]

    @classmethod
    def take(cls, state: StoreState) -> NearSnapshot:
        return cls(_rest(state), tuple(tuple(getattr(state, name)) for name in RINGS))

    def restore(self, store: Store) -> None:
        store.replace(_unpickled(self.rest))
        for name, items in zip(RINGS, self.rings, strict=True):
            setattr(store.state, name, deque(items))


class NearSnapshots:
    """Snapshots finer than the builder's, where the user has been.

    A seek that restores a snapshot and folds on keeps the state at the last
    multiple of ``spacing`` before its target (:meth:`where`), so going back a
    little from there (``,``, ``<``, a seek just before) folds at most
    ``spacing`` frames instead of up to the builder's spacing. Only the newest
    ``limit`` are kept (~20 KiB each plus their rings' references). The engine
    holds its lock around every call but :meth:`NearSnapshot.take`.
    """

    def __init__(self, spacing: int = NEAR_EVERY, limit: int = NEAR_LIMIT) -> None:
        self.spacing = spacing
        self.limit = limit
        #: by position, oldest first
        self.states: dict[int, NearSnapshot] = {}

    def nearest(self, position: int) -> tuple[int, NearSnapshot] | None:
        """The last one at or before ``position``, and where it is."""
        at = max((p for p in self.states if p <= position), default=None)
        return None if at is None else (at, self.states[at])

    def where(self, start: int, target: int) -> int | None:
        """Where a fold from ``start`` to ``target`` should leave one (None: nowhere
        closer to ``target`` than ``start`` by a spacing, or one is there already)."""
        at = target - target % self.spacing
        return at if at - start >= self.spacing and at not in self.states else None

    def add(self, position: int, snapshot: NearSnapshot) -> None:
        self.states[position] = snapshot
        while len(self.states) > self.limit:
            del self.states[next(iter(self.states))]


#: the store's rings (deques it appends to and drops from the left), each with a
#: ``{name}_dropped`` count: snapshots hold them as places in a :class:`RingJournal`.
RINGS = ("exceptions", "dumps", "logs")


class Snapshot(NamedTuple):
    """The state at a position: everything but the rings as a zlib-compressed
    pickle (``rest``, its rings empty), and each ring as ``(end, length)`` in
    its journal.

    Pickled because the rest is mostly numbers in many small objects (operator
    table, streams with their pending calls, device histories): ~280 KiB as
    objects on the 1M-event bench, ~12 KiB as bytes, and unpickling it is
    about as fast as copying the objects (~1.5 ms). Only this process's own
    states are unpickled, never bytes from a file."""

    rest: bytes
    rings: tuple[tuple[int, int], ...]


class RingJournal:
    """The items of one store ring, each once, in the order the builder's store
    appended them (as far as snapshots need them).

    A ring at any snapshot is the last ``length`` items appended before it, so a
    snapshot needs only where it ends in this journal and its length: the items
    are shared by every snapshot instead of each snapshot copying the whole
    ring (10,000 exceptions are ~80 KiB of references per copy, for every
    snapshot). Items that came and went between two snapshots are never
    recorded. Appended by the builder thread; read by any (list slices only).
    """

    def __init__(self) -> None:
        self.items: list[object] = []
        self._appended = 0  # items the ring had received when last recorded

    def record(self, ring: deque[Any], dropped: int) -> tuple[int, int]:
        """Note the items ``ring`` (which has dropped ``dropped`` from its left in
        all) got since the last call; returns ``(end, length)`` for it now."""
        appended = dropped + len(ring)
        new = min(appended - self._appended, len(ring))
        if new > 0:
            self.items.extend(itertools.islice(ring, len(ring) - new, None))
        self._appended = appended
        return len(self.items), len(ring)

    def ring(self, end: int, length: int) -> deque[Any]:
        return deque(self.items[end - length : end])


class SharedParts:
    """Holds equal immutable parts of exceptions (and dump records' words) once.

    The snapshots keep up to ``exception_limit`` exceptions alive, and each
    decoded exception has its own strings and tensor descriptions although a
    job's exceptions mostly repeat a few operators and shapes: sharing them
    halves what the kept exceptions cost (~1.3 KiB -> ~0.5 KiB each). The
    events stay equal to the decoded ones, so the fold is unchanged. At most
    ``limit`` distinct parts are remembered (a hostile file of all-different
    tensors only stops the sharing).
    """

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._parts: dict[tuple[int, object], object] = {}

    def _one(self, tag: int, value: _T) -> _T:
        key = (tag, value)
        try:
            found = self._parts.get(key)
        except TypeError:  # unhashable: the decoder should not let one through
            return value
        if found is not None:
            # stored under (tag, value) by this method: equal to value, so of its type
            return cast(_T, found)
        if len(self._parts) < self.limit:
            self._parts[key] = value
        return value

    def share(self, events: list[ev.Event]) -> list[ev.Event]:
        """``events`` with the parts of each exception replaced by equal shared ones."""
        one = self._one
        for i, e in enumerate(events):
            if type(e) is ev.AclException:
                events[i] = e._replace(
                    op_name=one(0, e.op_name),
                    op_type=one(0, e.op_type),
                    inputs=one(2, tuple(one(1, t) for t in e.inputs)),
                    outputs=one(2, tuple(one(1, t) for t in e.outputs)),
                )
            elif type(e) is ev.DumpFileSeen:
                events[i] = e._replace(kind=one(0, e.kind), summary=self._summary(e.summary))
        return events

    def _summary(self, summary: ev.Summary) -> ev.Summary:
        """A dump summary with its repeated words held once (its kind, the explained
        status words of overflow records): ~1.4 MiB less for 12,000 dump files."""
        shared = dict(summary)
        if isinstance(shared.get("kind"), str):
            shared["kind"] = self._one(0, shared["kind"])
        records = shared.get("records")
        if isinstance(records, tuple):
            shared["records"] = tuple(self._record(r) for r in records)
        return shared

    def _record(self, record: object) -> object:
        if isinstance(record, dict) and isinstance(record.get("explained"), tuple):
            record = dict(record)
            record["explained"] = self._one(3, record["explained"])
        return record
