"""Operator names cut to a width so that the names of one list stay told apart.

Real operator names are paths (``bert/encoder/layer_11/attention/self/query/MatMul``)
and the names of one model share most of them, so a cut in the middle
(``bert/enc…query/MatMul``) hides exactly what tells two of them apart.
:class:`NameFitter` cuts by path segments instead: it keeps the last segment
(what the operator is), then the segments that tell this name from the other
names of the list ending the same way (``layer_11`` against ``layer_1``,
``query`` against ``key``), most telling first, then the other segments that
differ from those names, then as many of the rest as fit, nearest the end
first; every run of dropped segments becomes one ``…``:
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
        kept = {last}
        if len(render(parts, kept)) > width:  # the last segment alone is too long
            lead = ELLIPSIS + SEPARATOR
            return (
                lead + middle(parts[last], width - len(lead)) if width > 4 else middle(name, width)
            )
        for index in [*self.telling(parts), *range(last - 1, -1, -1)]:
            if index not in kept and len(render(parts, kept | {index})) <= width:
                kept.add(index)
        return render(parts, kept)

    def telling(self, parts: tuple[str, ...]) -> list[int]:
        """The segments (indices) that differ from the other names ending the same
        way, the most telling first: each time the one that sets this name apart
        from most of those still alike, until none is alike; then the other
        differing ones (the layer of a name the part alone told apart), those that
        differ from most names first."""
        name = SEPARATOR.join(parts)
        alike = [p for p in self._by_last.get(parts[-1], ()) if p != parts][:MAX_RIVALS]
        if not alike and name not in self.names:
            # a name the fitter was not built with: compare against every name
            alike = [tuple(n.split(SEPARATOR)) for n in self.names][:MAX_RIVALS]
        candidates = range(len(parts) - 1)
        differing = {i: sum(1 for other in alike if differs(parts, other, i)) for i in candidates}
        chosen: list[int] = []
        while alike:
            counts = {i: sum(1 for other in alike if differs(parts, other, i))
                      for i in candidates if i not in chosen}  # fmt: skip
            # ties: the segment nearer the end (it says more about the operator)
            best = max(counts, key=lambda i: (counts[i], i), default=None)
            if best is None or counts[best] == 0:
                break
            chosen.append(best)
            alike = [other for other in alike if not differs(parts, other, best)]
        rest = sorted((i for i in candidates if differing[i] and i not in chosen),
                      key=lambda i: (differing[i], i), reverse=True)  # fmt: skip
        return [*chosen, *rest]


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
