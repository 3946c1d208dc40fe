"""The fleet screen's rows: what each column shows of a rank, the wide and the
narrow column sets, the sorts (ranks with exceptions always first) and the
``/`` filter, which matches what the columns show."""

from __future__ import annotations

from typing import Any

from aclmon.store.fleet import FleetRow, SourceKey
from aclmon.tui import fmt
from aclmon.tui.columns import Column
from aclmon.tui.inert import inert_line

SORTS = ("rank", "host", "exec/s", "exceptions", "util")
#: the columns of a rank's row, wide and narrow (the rest: ``state``)
WIDE_COLUMNS = (
    Column("rank", 5, True), Column("host", 16, cut="middle"), Column("pid", 7, True),
    Column("dev", 7),
    Column("AI Core", 21, True), Column("HBM", 17, True), Column("exec/s", 7, True),
    Column("execs", 8, True), Column("fail", 5, True), Column("exc", 5, True),
    Column("ovf", 4, True), Column("last error", 20, cut="middle"), Column("state", 0),
)  # fmt: skip
NARROW_COLUMNS = (
    Column("rank", 5, True), Column("host", 12, cut="middle"), Column("pid", 7, True),
    Column("util", 4, True), Column("exec/s", 7, True), Column("exc", 4, True),
    Column("last error", 16, cut="middle"),
    Column("state", 0),
)  # fmt: skip


def sort_rows(
    rows: list[FleetRow],
    sort: str,
    first: SourceKey | None,
    text: str = "",
    columns: tuple[Column, ...] = WIDE_COLUMNS,
) -> list[FleetRow]:
    """Rows with exceptions first (earliest first), then by ``sort``; only
    those whose ``columns`` show ``text`` (case-insensitive) when it is given."""
    if text:
        rows = [r for r in rows if text.lower() in row_words(r, columns)]

    def rank_key(r: FleetRow) -> tuple[Any, ...]:
        return (r.rank if r.rank is not None else 1 << 30, r.host, r.pid)

    keys = {
        "rank": rank_key,
        "host": lambda r: (r.host, *rank_key(r)),
        "exec/s": lambda r: (-r.executions_per_s, *rank_key(r)),
        "exceptions": lambda r: (-r.exceptions, *rank_key(r)),
        "util": lambda r: (-r.cube_util, *rank_key(r)),
    }
    alerts = sorted(
        (r for r in rows if r.exceptions), key=lambda r: (r.first_exception_ns or 0, r.key)
    )
    rest = sorted((r for r in rows if not r.exceptions), key=keys[sort])
    if first is not None:
        alerts.sort(key=lambda r: r.key != first)  # stable: the earliest stays on top
    return alerts + rest


def row_cells(r: FleetRow) -> dict[str, str]:
    """What each column (of the wide and the narrow set) shows of a rank."""
    util = "  ?" if r.cube_util < 0 else f"{r.cube_util:>3}%"
    return {
        "rank": "-" if r.rank is None else str(r.rank),
        "host": r.host,
        "pid": str(r.pid),
        "dev": ",".join(map(str, r.devices)) or "-",
        "AI Core": f"{fmt.sparkline(r.cube_history, 16)} {util}",
        "util": util,
        "HBM": fmt.size_pair(r.hbm_used, r.hbm_total) if r.hbm_total else "-",
        "exec/s": f"{r.executions_per_s:.1f}",
        "execs": str(r.executions),
        "fail": str(r.failures),
        "exc": str(r.exceptions),
        "ovf": str(r.overflows),
        "last error": r.last_error,
        "state": r.state if r.health == "OK" else f"{r.state} {inert_line(r.health)}",
    }


def row_words(r: FleetRow, columns: tuple[Column, ...]) -> str:
    """What ``/`` matches a rank's row by: what ``columns`` show of it."""
    cells = row_cells(r)
    return " ".join(cells[c.cell_key] for c in columns).lower()


def row_name(row: FleetRow) -> str:
    return f"Rank {row.rank}" if row.rank is not None else f"PID {row.pid}"
