"""Pass lines: when a tensor's metrics say its values went wrong.

The defaults are the "normal precision" lines of Ascend's offline-model
compare (``IsPrecisionError``): a tensor fails when CosineSimilarity < 0.99,
RelativeEuclideanDistance > 0.05, KullbackLeiblerDivergence > 0.005,
RootMeanSquareError > 1 or MeanRelativeError > 1. Each can be overridden
(``--threshold cos=0.999``). Only the metrics that were computed are judged; a
metric that is not a number (``NaN``, ``nan``) fails no line by itself, but a
tensor whose own values hold NaN or Inf where the golden's do not fails too
(an overflow is a divergence even when no metric can say by how much).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from aclmon.dump.compare import metrics as m
from aclmon.errors import AclmonError

#: metric -> (default line, True when a value *below* the line fails)
DEFAULT_LINES: dict[str, tuple[float, bool]] = {
    m.COSINE: (0.99, True),
    m.EUCLID: (0.05, False),
    m.KL: (0.005, False),
    m.RMSE: (1.0, False),
    m.MEAN_REL: (1.0, False),
}
#: short names accepted by ``--threshold`` (the column names are accepted too).
ALIASES = {"cos": m.COSINE, "red": m.EUCLID, "kl": m.KL, "rmse": m.RMSE, "mre": m.MEAN_REL}
#: stats-only compare: a relative difference of a statistic above this fails (msprobe's 50 %).
STATS_KEY = "stats"
DEFAULT_STATS_LINE = 0.5

PASS = "pass"
FAIL = "fail"
#: no metric could be judged (no golden, unreadable, shapes that do not match ...)
SKIP = "skip"


@dataclass(frozen=True)
class Thresholds:
    lines: Mapping[str, float] = field(
        default_factory=lambda: {name: line for name, (line, _) in DEFAULT_LINES.items()}
    )
    stats_line: float = DEFAULT_STATS_LINE

    def with_overrides(self, items: Iterable[str]) -> Thresholds:
        """``NAME=VALUE`` items (``cos``, ``red``, ``kl``, ``rmse``, ``mre``, ``stats`` or
        a column name), as ``--threshold`` gives them; raises :class:`AclmonError`."""
        lines = dict(self.lines)
        stats_line = self.stats_line
        for item in items:
            for part in item.split(","):
                if not part.strip():
                    continue
                name, sep, text = part.partition("=")
                key = name.strip()
                try:
                    value = float(text)
                except ValueError:
                    value = math.nan
                if not sep or not math.isfinite(value):
                    raise AclmonError(f"--threshold {part.strip()!r}: expected NAME=NUMBER")
                if key.lower() == STATS_KEY:
                    stats_line = value
                    continue
                metric = ALIASES.get(key.lower()) or next(
                    (c for c in DEFAULT_LINES if c.lower() == key.lower()), None
                )
                if metric is None:
                    names = ", ".join([*ALIASES, STATS_KEY, *DEFAULT_LINES])
                    raise AclmonError(f"--threshold {key!r}: unknown metric; known: {names}")
                lines[metric] = value
        return replace(self, lines=lines, stats_line=stats_line)

    def failing(self, values: Mapping[str, str]) -> tuple[str, ...]:
        """The metrics among ``values`` (column -> printed text) that cross their line."""
        out = []
        for name, text in values.items():
            if name not in self.lines:
                continue
            number = m.metric_number(text)
            if math.isnan(number):
                continue
            below = DEFAULT_LINES[name][1]
            line = self.lines[name]
            if (number < line) if below else (number > line):
                out.append(name)
        return tuple(out)

    def describe(self, name: str, text: str) -> str:
        """``CosineSimilarity 0.912345 < 0.99`` (how a failing metric crosses its line)."""
        below = DEFAULT_LINES[name][1]
        return f"{name} {text} {'<' if below else '>'} {self.lines[name]:g}"

    def judged(self, values: Mapping[str, str]) -> bool:
        """Whether any metric with a line has a number to judge."""
        return any(
            name in self.lines and not math.isnan(m.metric_number(text))
            for name, text in values.items()
        )
