"""The rows a Compare view shows, headless: execution order, filter, sort, pages, and
the first divergent operator.

A :class:`CompareTable` holds the rows of a finished compare (``set_rows``) or
of a live one (``update`` replaces an operator's rows when a newer dump of it
was compared). It is safe to use from two threads: the live comparer's worker
writes, the UI thread reads ``version`` on its timer and, when it moved, asks
for a :class:`TableView` (an immutable snapshot, filtered and sorted) that it
pages through. Nothing here reads a file.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from aclmon.dump.compare.divergence import Divergence, first_divergent
from aclmon.dump.compare.metrics import ALGORITHMS
from aclmon.dump.compare.rows import CompareRow, order_key
from aclmon.dump.compare.thresholds import FAIL, PASS, SKIP, Thresholds

#: sort keys besides the metric columns
ORDER = "order"  # execution order (the default)
OP = "op"
TYPE = "type"
STATUS = "status"
TENSOR = "tensor"
_STATUS_RANK = {FAIL: 0, PASS: 1, SKIP: 2}


@dataclass(frozen=True)
class TableView:
    """One snapshot of the table, filtered and sorted: what a view pages through."""

    rows: tuple[CompareRow, ...]
    version: int
    total: int  # rows before the filter
    first_divergent: Divergence | None
    counts: dict[str, int]

    def __len__(self) -> int:
        return len(self.rows)

    def page(self, start: int, count: int) -> tuple[CompareRow, ...]:
        start = max(0, start)
        return self.rows[start : start + max(0, count)]

    def position(self, row: CompareRow) -> int | None:
        """Where a row (same operator and tensor) is in this view, if it is."""
        key = (row.npu_dump, row.role, row.tensor)
        for position, candidate in enumerate(self.rows):
            if (candidate.npu_dump, candidate.role, candidate.tensor) == key:
                return position
        return None

    @property
    def divergent_position(self) -> int | None:
        """The row of the first divergent operator's failing output in this view (the
        view's "jump to the first divergent operator")."""
        if self.first_divergent is None:
            return None
        return self.position(self.first_divergent.row)


def _metric_key(name: str) -> Callable[[CompareRow], tuple[bool, float]]:
    def key(row: CompareRow) -> tuple[bool, float]:
        number = row.number(name)
        return (math.isnan(number), 0.0 if math.isnan(number) else number)

    return key


class CompareTable:
    def __init__(
        self,
        algorithms: Sequence[str] = ALGORITHMS,
        thresholds: Thresholds | None = None,
        limit: int = 200_000,
    ) -> None:
        self.algorithms = tuple(algorithms)
        self.thresholds = thresholds or Thresholds()
        self.limit = limit
        self._lock = threading.Lock()
        self._rows: list[CompareRow] = []  # in execution order
        self._keys: list[tuple[tuple[int, int], int, int, int]] = []
        self._version = 0
        self._divergence: tuple[int, Divergence | None] = (-1, None)
        #: rows let go because the table was full (the earliest operators go first)
        self.dropped = 0

    @property
    def version(self) -> int:
        """Bumped by every change: a view redraws when it moved."""
        return self._version

    @property
    def sort_keys(self) -> tuple[str, ...]:
        return (ORDER, OP, TYPE, TENSOR, STATUS, *self.algorithms)

    def __len__(self) -> int:
        return len(self._rows)

    def set_rows(self, rows: Iterable[CompareRow]) -> None:
        ordered = sorted(rows, key=order_key)
        with self._lock:
            self._rows = ordered
            self._keys = [order_key(r) for r in ordered]
            self._trim()
            self._version += 1

    def update(self, rows: Sequence[CompareRow]) -> bool:
        """Add one operator's rows, replacing the rows it had when these come from a
        newer dump of it (files may be announced out of order: an older dump is
        ignored). Whether the table changed."""
        if not rows:
            return False
        names = {row.npu_dump for row in rows}
        newest = max(row.order for row in rows)
        with self._lock:
            held = [r.order for r in self._rows if r.npu_dump in names]
            if held and max(held) > newest:
                return False
            if held:
                kept = [r for r in self._rows if r.npu_dump not in names]
                self._rows = kept
                self._keys = [order_key(r) for r in kept]
            for row in rows:
                key = order_key(row)
                at = bisect.bisect_right(self._keys, key)
                self._keys.insert(at, key)
                self._rows.insert(at, row)
            self._trim()
            self._version += 1
        return True

    def _trim(self) -> None:
        excess = len(self._rows) - self.limit
        if excess > 0:
            del self._rows[:excess]
            del self._keys[:excess]
            self.dropped += excess

    def rows(self) -> list[CompareRow]:
        """The rows in execution order (a copy)."""
        with self._lock:
            return list(self._rows)

    def first_divergent(self) -> Divergence | None:
        with self._lock:
            version, rows = self._version, list(self._rows)
            cached_version, cached = self._divergence
        if cached_version == version:
            return cached
        found = first_divergent(rows, self.thresholds)
        with self._lock:
            if self._version == version:
                self._divergence = (version, found)
        return found

    def query(
        self,
        text: str = "",
        statuses: Iterable[str] | None = None,
        sort: str = ORDER,
        reverse: bool = False,
    ) -> TableView:
        """The rows whose operator, type, tensor or reason contain ``text`` (any case)
        and whose status is in ``statuses``, sorted by ``sort`` (a metric column sorts
        by its number, rows without one last in either direction)."""
        with self._lock:
            version, rows = self._version, list(self._rows)
        divergence = self.first_divergent()
        counts = {FAIL: 0, PASS: 0, SKIP: 0}
        for row in rows:
            counts[row.status] = counts.get(row.status, 0) + 1
        needle = text.strip().lower()
        wanted = set(statuses) if statuses is not None else None
        chosen = [
            r
            for r in rows
            if (wanted is None or r.status in wanted)
            and (
                not needle
                or any(
                    needle in field.lower()
                    for field in (r.op_name, r.npu_dump, r.op_type, r.tensor_index, r.reason)
                )
            )
        ]
        chosen = sort_rows(chosen, sort, reverse)
        return TableView(tuple(chosen), version, len(rows), divergence, counts)


def sort_rows(rows: Iterable[CompareRow], sort: str, reverse: bool = False) -> list[CompareRow]:
    """``rows`` (in execution order) sorted by ``sort``: one of a table's ``sort_keys``;
    a metric column sorts by its number, the rows without one last in either direction."""
    chosen = list(rows)
    if sort == ORDER:
        if reverse:
            chosen.reverse()
        return chosen
    key = row_sort_key(sort)
    if sort in ALGORITHMS:
        numbered = [r for r in chosen if not math.isnan(r.number(sort))]
        blank = [r for r in chosen if math.isnan(r.number(sort))]
        numbered.sort(key=key, reverse=reverse)
        return numbered + blank
    chosen.sort(key=key, reverse=reverse)
    return chosen


def row_sort_key(sort: str) -> Callable[[CompareRow], tuple[object, ...]]:
    """The key of one sort (ascending; :func:`sort_rows` keeps number-less rows last)."""
    if sort == ORDER:
        return order_key
    if sort in ALGORITHMS:
        return _metric_key(sort)
    if sort == OP:
        return lambda r: (r.op_name.lower(), order_key(r))
    if sort == TYPE:
        return lambda r: (r.op_type.lower(), order_key(r))
    if sort == TENSOR:
        return lambda r: (r.tensor_index.lower(), order_key(r))
    if sort == STATUS:
        return lambda r: (_STATUS_RANK.get(r.status, 3), order_key(r))
    raise ValueError(f"unknown sort key {sort!r}")
