"""Every list's headings stand over their values, at 80, 100 and 160 columns.

Read off the screen as a user sees it: for each column of the list's layout,
the heading starts where the column starts (ends where it ends, for numbers),
and in every row shown the value sits in the same place: a left-aligned value
starts at the column's first character, a right-aligned one ends at its last,
with the gap before each column blank (nothing spills over from its left).
"""

from __future__ import annotations

import pytest
from textual.geometry import Region
from tui_helpers import make_app, screen_text
from tui_scenario import BERT, T0, bert_events, build_events

from aclmon import events as ev
from aclmon.store.fleet import FleetStore
from aclmon.tui.columns import Layout
from aclmon.tui.fleet import FleetApp

SIZES = [(80, 24), (100, 30), (160, 48)]
IDS = ["80x24", "100x30", "160x48"]


def problems(layout: Layout, lines: list[str], header: Region, rows: Region) -> list[str]:
    """What is out of place: ``header`` and ``rows`` are where the header's text
    and the list's rows are on screen."""
    found = []
    hx, hy = header.x, header.y
    rx, ry = rows.x, rows.y
    head = lines[hy]
    for column, (start, end) in zip(layout.columns, layout.spans, strict=True):
        label = column.label[: column.width] if column.width else column.label
        if not label:
            continue
        at = hx + (end - len(label) if column.right else start)
        if head[at : at + len(label)] != label:
            found.append(f"heading {label!r} not at {at}: {head!r}")
    for line in lines[ry : ry + rows.height]:
        row = line[rx : rx + rows.width]
        for column, (start, end) in zip(layout.columns, layout.spans, strict=True):
            cell = row[start:end]
            if not cell.strip():
                continue
            gap = row[max(0, start - layout.gap) : start]
            if gap.strip():
                found.append(f"{column.label}: no gap before it in {row!r}")
            if cell[-1 if column.right else 0] == " ":
                found.append(f"{column.label}: value not aligned with its heading in {row!r}")
    return found


@pytest.mark.parametrize("size", SIZES, ids=IDS)
@pytest.mark.parametrize("view", ["exceptions", "dumps", "logs"])
async def test_every_list_puts_its_values_under_their_headings(view, size):
    app = make_app(events=bert_events())
    async with app.run_test(size=size) as pilot:
        await pilot.press({"exceptions": "2", "dumps": "4", "logs": "5"}[view])
        await pilot.pause()
        shown = app.views[view]
        layout = shown.column_layout(shown.list_width)
        header = app.screen.query_one(f"#{view}-header")
        vlist = shown.vlist
        lines = screen_text(app).split("\n")
        assert len(layout.columns) >= 4
        found = problems(layout, lines, header.content_region, vlist.content_region)
        assert not found, "\n".join(found)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_operator_table_puts_its_values_under_their_headings(size):
    events = build_events()
    seq = max(e.seq for e in events)
    for n, name in enumerate(BERT):
        events.append(
            ev.OpTiming(seq + n + 1, T0 + 10**11 + n, 1, name, "MatMul", 0, 90 + n, 90 + n)
        )
    app = make_app(events=events)
    async with app.run_test(size=size) as pilot:
        await pilot.press("3", "tab")
        await pilot.pause()
        table = app.profiling_view.query_one("#prof-table")
        header = app.screen.query_one("#ops-header")
        oplist = table.oplist
        lines = screen_text(app).split("\n")
        found = problems(table.column_layout, lines, header.content_region, oplist.content_region)
        assert not found, "\n".join(found)


class _Quiet:
    """A fleet feed with nothing more to say (the fleet store is filled beforehand)."""

    description = "fixed"
    state = "connected"
    state_reason = ""
    readonly = True
    gone: frozenset[object] = frozenset()

    def start(self) -> None: ...

    def poll(self, max_events: int = 0) -> list[object]:
        return []

    def close(self) -> None: ...


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_fleet_list_puts_its_values_under_their_headings(size):
    fleet = FleetStore()
    for rank in range(12):
        pid = 1000 + rank
        hello = ev.Hello(1, 1_000, 1, "0.1.0", pid, f"node{rank // 8:02}", ("train.py",), "sim",
                         "Ascend910B1", 1, "train", rank, 12, rank % 8, rank % 8, {})  # fmt: skip
        sample = ev.DeviceSample(2, 2_000, rank % 8, 17 * rank % 100, 0, 0, 1 << 30, 64 << 30,
                                 "OK", None, None)  # fmt: skip
        fleet.apply(
            ("node", pid), [hello, sample, ev.ModelLoaded(3, 3_000, 1, rank % 8, "bert", 9)]
        )
    app = FleetApp(_Quiet(), fleet, interval=30.0)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        lines = screen_text(app).split("\n")
        found = problems(
            app.column_layout(), lines, app.colhead.content_region, app.vlist.content_region
        )
        assert not found, "\n".join(found)
