"""The Devices view's table: a line per device with its health (and what failed
on it), AI Core, vector and AI CPU use as sparklines of its recent samples, HBM
as a bar, temperature and power, its columns fitted to the width."""

from __future__ import annotations

from typing import Any

from rich.console import JustifyMethod
from rich.style import Style
from rich.table import Table
from rich.text import Text

from aclmon.store.state import DeviceState, StoreState
from aclmon.tui import fmt

#: the theme's roles the table is drawn in (``aclmon-<role>``; "bad" bold, besides)
TABLE_ROLES = ("dim", "spark", "bar", "bar-empty", "idle")


def device_table(s: StoreState, width: int, styles: dict[str, Style]) -> Table:
    """The table of ``s``'s devices, ``width`` wide, in ``styles`` (by role)."""
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
    table = Table(box=None, expand=True, pad_edge=False, header_style=dim + Style(bold=True))
    columns: list[tuple[str, JustifyMethod, int]] = [
        ("DEV", "right", 3), ("SoC", "left", soc_width), ("HEALTH", "left", health_width),
        ("AI CORE", "left", spark_width + 5), ("VECTOR", "left", spark_width + 5),
        ("AI CPU", "left", spark_width + 5), ("HBM used / total", "left", 24),
        ("TEMP", "right", 4), ("POWER", "right", 5),
    ]  # fmt: skip
    if not show_soc:
        del columns[1]
    for name, justify, min_width in columns:
        table.add_column(name, justify=justify, no_wrap=True, min_width=min_width)
    soc = [soc_name] if show_soc else []
    if not s.devices:
        table.add_row("", Text("waiting for the first device sample…", style=dim))

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
            table.add_row(str(device_id), *soc, Text(state, style=dim) + failures(d, narrow, bad))
            continue
        health = Text(sample.health, style=good if sample.health == "OK" else bad)
        health.append_text(failures(d, narrow, bad))
        filled, rest = fmt.bar(sample.hbm_used / sample.hbm_total if sample.hbm_total else 0, 10)
        hbm = Text(filled, style=styles["bar"])
        hbm.append(rest.replace(" ", "░"), style=styles["bar-empty"])
        hbm.append(f" {fmt.size_pair(sample.hbm_used, sample.hbm_total)}")
        table.add_row(
            str(device_id),
            *soc,
            health,
            util(d.cube_history, sample.cube_util),
            util(d.vector_history, sample.vector_util),
            util(d.aicpu_history, sample.aicpu_util),
            hbm,
            "–" if sample.temperature_c is None else f"{sample.temperature_c:.0f}°C",
            "–" if sample.power_w is None else f"{sample.power_w:.0f} W",
        )
    return table


def failures(d: DeviceState, narrow: bool, bad: Style) -> Text:
    """What failed on the device so far (destroyed streams too): a job that fails
    never looks clean, whatever the hardware's health says."""
    if not d.errors and not d.exceptions:
        return Text()
    count, what = (d.errors, "error") if d.errors else (d.exceptions, "exception")
    plural = "s" if count != 1 else ""
    # narrow: the column keeps its room
    return Text(f" {count} {what[:3]}" if narrow else f" · {count} {what}{plural}", style=bad)
