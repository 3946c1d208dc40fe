"""Text formatting shared by the views: sizes, durations, times, sparklines, bars.

Times are shown in UTC from event timestamps, or relative to the newest event,
never relative to "now": the screen then depends only on the events, which
keeps snapshots and replays stable.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

SPARK_CHARS = " ▁▂▃▄▅▆▇█"


def sparkline(values: Iterable[float], width: int, top: float = 100.0) -> str:
    """The last ``width`` values as block characters scaled to ``top`` (left-padded)."""
    points = list(values)[-width:] if width > 0 else []
    out = []
    steps = len(SPARK_CHARS) - 1
    for value in points:
        if value < 0:  # "not supported"
            out.append("·")
            continue
        level = round(min(value, top) / top * steps) if top > 0 else 0
        # Any activity at all shows at least the lowest block.
        out.append(SPARK_CHARS[max(level, 1 if value > 0 else 0)])
    return " " * (width - len(out)) + "".join(out)


def bar(fraction: float, width: int) -> tuple[str, str]:
    """A horizontal bar split into (filled, empty) parts, in eighth-cell steps."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    filled = "█" * full + ("" if part == 0 else "▏▎▍▌▋▊▉"[part - 1])
    return filled, " " * (width - len(filled))


def size(n: int) -> str:
    """Bytes in binary units: ``512 B``, ``1.5 KiB``, ``31.2 GiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover (loop always returns)


def size_pair(used: int, total: int) -> str:
    """``12.0/64.0 GiB``: both in the unit of the total, so they compare at a glance."""
    value = float(total)
    unit = "B"
    for candidate in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value /= 1024
        unit = candidate
    scale = total / value if value else 1
    if unit == "B":
        return f"{used}/{total} B"
    return f"{used / scale:.1f}/{value:.1f} {unit}"


#: (size, suffix, format) of each unit, smallest first; format "d" floors
Units = tuple[tuple[float, str, str], ...]
DURATION_UNITS: Units = (
    (1, " ns", ".0f"),
    (1e3, " µs", ".1f"),
    (1e6, " ms", ".1f"),
    (1e9, " s", ".2f"),
)
AGE_UNITS: Units = ((1, "s", "d"), (60, "m", "d"), (3600, "h", "d"))
COUNT_UNITS: Units = ((1, "", ".0f"), (1e3, "k", ".1f"), (1e6, "M", ".1f"))


def in_units(value: float, units: Units) -> str:
    """``value`` in the largest of ``units`` it reaches (the smallest below that)."""
    size, suffix, spec = units[0]
    for unit in units:
        if value >= unit[0]:
            size, suffix, spec = unit
    scaled = int(value // size) if spec == "d" else value / size
    return f"{scaled:{spec}}{suffix}"


def duration_ns(ns: int | None) -> str:
    return "–" if ns is None else in_units(ns, DURATION_UNITS)


def duration_us(us: float) -> str:
    return duration_ns(int(us * 1000))


def utc_time(ts_ns: int, with_ms: bool = True) -> str:
    """``HH:MM:SS.mmm`` in UTC."""
    secs, rem = divmod(ts_ns, 1_000_000_000)
    text = time.strftime("%H:%M:%S", time.gmtime(secs))
    return f"{text}.{rem // 1_000_000:03d}" if with_ms else text


def age(ts_ns: int, newest_ns: int) -> str:
    """How long before the newest event: ``now``, ``4s``, ``3m``, ``2h``."""
    delta = max(0, newest_ns - ts_ns) // 1_000_000_000
    return "now" if delta == 0 else in_units(delta, AGE_UNITS)


def count(n: float) -> str:
    """Compact counts: ``950``, ``12.3k``, ``4.1M``."""
    return in_units(n, COUNT_UNITS)


def shape(dims: Iterable[int]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def model_execution(model_name: str, execution: int) -> str:
    """ "model resnet50 · execution 25" (the execution left out when not known,
    "model –" when neither is)."""
    text = f"model {model_name or '–'}"
    return f"{text} · execution {execution}" if execution > 0 and model_name else text


def model_run(model_name: str, execution: int) -> str:
    """ "resnet50 run 25" for a list's row ("" without a model, no run when not known)."""
    if not model_name:
        return ""
    return f"{model_name} run {execution}" if execution else model_name


def job_end_text(goodbye: Any) -> str:
    """How a job ended, from its agent's Goodbye: "job exited (status 3)"."""
    if not goodbye.status_known:
        return "job ended"
    if goodbye.reason.startswith("signal "):
        return f"job killed by {goodbye.reason[len('signal ') :]} (status {goodbye.exit_status})"
    return f"job exited (status {goodbye.exit_status})"


#: a runtime message's opening that says nothing yet ("EZ9999: Inner Error!")
_BARE_HEADLINE = re.compile(r"^[A-Z]{2}[0-9A-Z]{4}: Inner Error!?$")
#: the "[PID: n] <time> " (or "EZ9999[PID: n] <time> (EZ9999): ") prefix of a message line
_MESSAGE_PREFIX = re.compile(r"^(?:[A-Z]{2}[0-9A-Z]{4})?\[PID: \d+\] \S+ (?:\([0-9A-Z]{6}\):)?\s*")


def runtime_headline(message: str) -> str:
    """The line of a runtime message (``acl.get_recent_err_msg``) that says what
    went wrong, without its pid and time prefix: the first line that is more
    than ``EZ9999: Inner Error!``. "" for an empty message."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if not _BARE_HEADLINE.match(line):
            return _MESSAGE_PREFIX.sub("", line) or line
    return lines[0] if lines else ""
