"""Operator names cut to a width so that the names of one list stay told apart.

Real operator names are paths (``bert/encoder/layer_11/attention/self/query/MatMul``)
and the names of one model share most of them, so a cut in the middle
(``bert/enc…query/MatMul``) hides exactly what tells two of them apart.
:class:`NameFitter` cuts by path segments instead: it keeps the last segment
(what the operator is), then, of the segments that differ from the other names
of the list ending the same way (``layer_11`` against ``layer_1``, ``query``
against ``key``), those that fit and tell it from most of them, then as many of
the rest as fit, nearest the end first; every run of dropped segments becomes
one ``…``:
``…/layer_11/…/query/MatMul``.

Every view that shows operator names uses it (the Exceptions, Dumps and
Profiling lists, the fleet screen, and the views to come), so one name reads
the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from aclmon.tui.style import middle

SEPARATOR = "/"
ELLIPSIS = "…"
#: names compared against one name at most (the cost of a fit stays bounded)
MAX_RIVALS = 512
#: segments weighed against each other at most (all their combinations are tried)
MAX_DIFFERING = 6
#: fitted names remembered, per fitter
CACHE_SIZE = 4_096


class NameFitter:
    """Fits the names of one list (built from all of them; cheap to rebuild
    when the set changes). :meth:`fit` is what a column's cell shows."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names = frozenset(names)
        #: last segment -> the names ending with it, split into segments
        self._by_last: dict[str, list[tuple[str, ...]]] = {}
        for name in self.names:
            parts = tuple(name.split(SEPARATOR))
            self._by_last.setdefault(parts[-1], []).append(parts)
        self._cache: dict[tuple[str, int], str] = {}

    def updated(self, names: Iterable[str]) -> NameFitter:
        """The fitter of ``names``: this one (and what it fitted) when they are the
        same names, else a new one. A list keeps its fitter across redraws so."""
        wanted = frozenset(names)
        return self if wanted == self.names else NameFitter(wanted)

    def fit(self, name: str, width: int) -> str:
        """``name`` in at most ``width`` characters (whole when it fits)."""
        if len(name) <= width:
            return name
        key = (name, width)
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            found = self._cache[key] = self._fit(name, width)
        return found

    def _fit(self, name: str, width: int) -> str:
        parts = tuple(name.split(SEPARATOR))
        if len(parts) == 1 or width <= 0:
            return middle(name, width)
        last = len(parts) - 1
        if len(render(parts, {last})) > width:  # the last segment alone is too long
            lead = ELLIPSIS + SEPARATOR
            return (
                lead + middle(parts[last], width - len(lead)) if width > 4 else middle(name, width)
            )
        kept = {last, *self.telling(parts, width)}
        for index in range(last - 1, -1, -1):  # then what fits, nearest the end first
            if index not in kept and len(render(parts, kept | {index})) <= width:
                kept.add(index)
        return render(parts, kept)

    def telling(self, parts: tuple[str, ...], width: int) -> tuple[int, ...]:
        """The segments (indices) to keep so that this name, cut to ``width``, tells
        itself from as many of the others ending the same way as it can: of the
        sets of segments that differ from them and fit, the one that tells it from
        most names (one that differs in a single segment counting most), then the
        one with most segments, then the one nearer the end."""
        name = SEPARATOR.join(parts)
        alike = [p for p in self._by_last.get(parts[-1], ()) if p != parts][:MAX_RIVALS]
        if not alike and name not in self.names:
            # a name the fitter was not built with: compare against every name
            alike = [tuple(n.split(SEPARATOR)) for n in self.names][:MAX_RIVALS]
        last = len(parts) - 1
        differing = [i for i in range(last) if any(differs(parts, o, i) for o in alike)]
        differing = differing[-MAX_DIFFERING:]  # the nearest the end, when very many
        # each other name as the set (bits over ``differing``) of segments it differs in
        masks = [sum(1 << b for b, i in enumerate(differing) if differs(parts, o, i))
                 for o in alike]  # fmt: skip
        # a name that differs in one segment only is told apart by that one or not at
        # all: it weighs more than one that differs in several (its own cut differs)
        weights = [1 / mask.bit_count() for mask in masks]
        best: tuple[tuple[float, int, int], tuple[int, ...]] = ((-1.0, 0, 0), ())
        for chosen in range(1 << len(differing)):
            indices = tuple(i for b, i in enumerate(differing) if chosen >> b & 1)
            if len(render(parts, {last, *indices})) > width:
                continue
            told = sum(w for mask, w in zip(masks, weights, strict=True) if mask & chosen)
            score = (told, len(indices), sum(indices))
            if score > best[0]:
                best = (score, indices)
        return best[1]


def differs(parts: tuple[str, ...], other: tuple[str, ...], index: int) -> bool:
    """Segment ``index`` of ``parts`` tells it from ``other``: another segment in that
    place (names of the same depth), else one ``other`` does not have at all."""
    if len(parts) == len(other):
        return parts[index] != other[index]
    return parts[index] not in other


def render(parts: tuple[str, ...], kept: set[int]) -> str:
    """The kept segments in order, each run of the others as one ``…``."""
    out: list[str] = []
    for index, part in enumerate(parts):
        if index in kept:
            out.append(part)
        elif not out or out[-1] != ELLIPSIS:
            out.append(ELLIPSIS)
    return SEPARATOR.join(out)


def fit_name(name: str, width: int) -> str:
    """One name on its own (no list to tell it from): the last segments that fit."""
    return NameFitter((name,)).fit(name, width)
