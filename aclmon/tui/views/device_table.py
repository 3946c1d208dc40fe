"""The Devices view's table: a line per device with its health (and what failed
on it), AI Core, vector and AI CPU use as sparklines of its recent samples, HBM
as a bar, temperature and power, its columns fitted to the width."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.style import Style
from rich.table import Table
from rich.text import Text

from aclmon.store.state import DeviceState, StoreState
from aclmon.tui import fmt

#: the theme's roles the table is drawn in (``aclmon-<role>``; "bad" bold, besides)
TABLE_ROLES = ("dim", "spark", "bar", "bar-empty", "idle")


#: a column: its header, how its cells are justified, its least width
Column = tuple[str, JustifyMethod, int]
#: a cell: plain text, or text with its styles
Cell = str | Text


def device_table(s: StoreState, width: int, styles: dict[str, Style]) -> FittedTable:
    """The table of ``s``'s devices for a view ``width`` wide, in ``styles`` (by role)."""
    columns, rows = table_parts(s, width, styles)
    return FittedTable(columns, rows, styles["dim"] + Style(bold=True))


class FittedTable:
    """A table drawn as wide as it is given: as lines of text when its columns
    fit (:func:`fitted_lines`: the lines rich's table draws, without its layout,
    which cost more than the rest of the Devices view's figures drawn every
    second), else as rich's table, which narrows them."""

    def __init__(self, columns: list[Column], rows: list[list[Cell]], header: Style) -> None:
        self.columns, self.rows, self.header = columns, rows, header

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = fitted_lines(self.columns, self.rows, options.max_width, self.header)
        yield lines or rich_table(self.columns, self.rows, self.header)


def rich_table(columns: list[Column], rows: list[list[Cell]], header: Style) -> Table:
    """``columns`` and ``rows`` as a rich table as wide as it is given (no box,
    a space each side of a cell but at the edges)."""
    table = Table(box=None, expand=True, pad_edge=False, header_style=header)
    for name, justify, min_width in columns:
        table.add_column(name, justify=justify, no_wrap=True, min_width=min_width)
    for row in rows:
        table.add_row(*row)
    return table


def fitted_lines(
    columns: list[Column], rows: list[list[Cell]], width: int, header: Style
) -> Text | None:
    """What :func:`rich_table` draws ``width`` wide, as one line of text a row; None
    when the columns do not fit (rich then narrows them: left to it).

    Each column is as wide as its widest cell (its header too, and at least its
    least width), with a space each side (none at the table's edges); what is
    left of ``width`` is shared among the columns in proportion to their widths,
    the first ones rounded up, as rich shares it."""
    last = len(columns) - 1
    pads = [(0 if i == 0 else 1, 0 if i == last else 1) for i in range(len(columns))]
    widths = []
    for i, (name, _justify, least) in enumerate(columns):
        cells = [row[i] for row in rows if i < len(row)]
        widest = max([least, _cell_len(name), *(_cell_len(cell) for cell in cells)])
        widths.append(widest + sum(pads[i]))
    if sum(widths) > width:
        return None
    widths = [w + extra for w, extra in zip(widths, shares(width - sum(widths), widths),
                                               strict=True)]  # fmt: skip
    out = Text(no_wrap=True, overflow="ellipsis")
    head: list[Cell] = [Text(name, style=header) for name, _j, _w in columns]
    for n, row in enumerate([head, *rows]):
        if n:
            out.append("\n")
        style = header if n == 0 else Style()
        cells = [*row, *([""] * (len(columns) - len(row)))]
        for (_name, justify, _w), (left, right), cell_width, cell in zip(
            columns, pads, widths, cells, strict=True
        ):
            out.append(" " * left, style=style)
            out.append_text(_fit(cell, cell_width - left - right, justify))
            out.append(" " * right, style=style)
    return out


def shares(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights``, each part rounded up in turn
    (so the first parts take the rounding, and the parts sum to ``total``)."""
    left, weight_left = total, sum(weights)
    out = []
    for weight in weights:
        part = -(-weight * left // weight_left) if weight_left > 0 else left
        out.append(part)
        left -= part
        weight_left -= weight
    return out


def _cell_len(cell: Cell) -> int:
    return max((cell_len(line) for line in str(cell).split("\n")), default=0)


def _fit(cell: Cell, width: int, justify: JustifyMethod) -> Text:
    """``cell`` on one line ``width`` wide, justified, cut with an ellipsis."""
    text = cell.copy() if isinstance(cell, Text) else Text(cell)
    text.rstrip_end(width)
    if justify == "right":
        text.rstrip()
        text.truncate(width, overflow="ellipsis")
        text.pad_left(width - text.cell_len)
    else:
        text.truncate(width, overflow="ellipsis", pad=True)
    return text


def table_parts(
    s: StoreState, width: int, styles: dict[str, Style]
) -> tuple[list[Column], list[list[Cell]]]:
    """The columns of the table of ``s``'s devices ``width`` wide, and its rows."""
    dim, spark, bad, good = styles["dim"], styles["spark"], styles["bad"], styles["idle"]
    narrow = width < 120
    # Fit the width: the SoC column only when wide (the header names it too),
    # sparklines take what is left (4..24 samples).
    show_soc = width >= 140
    soc_name = s.hello.soc_name if s.hello else "?"
    # HEALTH is as wide as its longest cell (a device that had errors says so)
    health_width = max(
        [6, *(len(d.sample.health) + len(failures(d, narrow, bad)) for d in s.devices.values()
              if d.sample)]
    )  # fmt: skip
    soc_width = max(10, len(soc_name))
    fixed = 75 + (soc_width + 4 if show_soc else 0) + health_width - 6
    spark_width = max(4, min(24, (width - fixed) // 3))
    columns: list[Column] = [
        ("DEV", "right", 3), ("SoC", "left", soc_width), ("HEALTH", "left", health_width),
        ("AI CORE", "left", spark_width + 5), ("VECTOR", "left", spark_width + 5),
        ("AI CPU", "left", spark_width + 5), ("HBM used / total", "left", 24),
        ("TEMP", "right", 4), ("POWER", "right", 5),
    ]  # fmt: skip
    if not show_soc:
        del columns[1]
    soc = [soc_name] if show_soc else []
    rows: list[list[Cell]] = []
    if not s.devices:
        rows.append(["", Text("waiting for the first device sample…", style=dim)])

    def util(history: Any, latest: int) -> Text:
        if latest < 0:
            return Text("n/a", style=dim)
        text = Text(fmt.sparkline(history, spark_width), style=spark)
        text.append(f" {latest:3d}%")
        return text

    for device_id in sorted(s.devices):
        d = s.devices[device_id]
        sample = d.sample
        if sample is None:
            state = "reset" if d.reset else ("set" if d.set_ret == 0 else "no sample yet")
            rows.append([str(device_id), *soc, Text(state, style=dim) + failures(d, narrow, bad)])
            continue
        health = Text(sample.health, style=good if sample.health == "OK" else bad)
        health.append_text(failures(d, narrow, bad))
        filled, rest = fmt.bar(sample.hbm_used / sample.hbm_total if sample.hbm_total else 0, 10)
        hbm = Text(filled, style=styles["bar"])
        hbm.append(rest.replace(" ", "░"), style=styles["bar-empty"])
        hbm.append(f" {fmt.size_pair(sample.hbm_used, sample.hbm_total)}")
        rows.append([
            str(device_id),
            *soc,
            health,
            util(d.cube_history, sample.cube_util),
            util(d.vector_history, sample.vector_util),
            util(d.aicpu_history, sample.aicpu_util),
            hbm,
            "–" if sample.temperature_c is None else f"{sample.temperature_c:.0f}°C",
            "–" if sample.power_w is None else f"{sample.power_w:.0f} W",
        ])  # fmt: skip
    return columns, rows


def failures(d: DeviceState, narrow: bool, bad: Style) -> Text:
    """What failed on the device so far (destroyed streams too): a job that fails
    never looks clean, whatever the hardware's health says."""
    if not d.errors and not d.exceptions:
        return Text()
    count, what = (d.errors, "error") if d.errors else (d.exceptions, "exception")
    plural = "s" if count != 1 else ""
    # narrow: the column keeps its room
    return Text(f" {count} {what[:3]}" if narrow else f" · {count} {what}{plural}", style=bad)
