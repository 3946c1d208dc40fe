"""Every value that passes validation can be shown: the screens never raise."""

from __future__ import annotations

import math

from tui_helpers import SIZE, FakeAgent
from tui_scenario import build_events

from aclmon import events as ev
from aclmon.sources.base import ListSource
from aclmon.tui.app import AclmonApp

BIG = 2**64 - 1


def _hostile_arrays() -> list[tuple]:
    """Raw arrays as a hostile agent could send them (before decoding)."""
    return [
        (ev.HostSample.KIND, 900, 1, math.nan, BIG, -5),
        (ev.HostSample.KIND, 901, 2, 1e308, -1, BIG),
        (ev.HostSample.KIND, 902, 3, -1e308, 0, 0),
        (
            ev.DeviceSample.KIND,
            903,
            4,
            0,
            BIG,
            -BIG // 2,
            10**18,
            BIG,
            0,
            "\x1b[2J",
            math.inf,
            math.nan,
        ),
        (ev.DeviceSample.KIND, 904, 5, 1, -1, -1, -1, -7, -9, "", -1e308, 1e308),
        (ev.LogLine.KIND, 905, 6, "\x1b]0;x\x07", "\x00" * 1000),
    ]


def _events() -> list[ev.Event]:
    decoder = ev.EventDecoder()
    hostile = decoder.decode_many(_hostile_arrays())
    assert len(hostile) >= 4  # most pass, made harmless by validation
    return [*build_events(), *hostile]


async def test_screens_show_hostile_but_valid_values_without_raising() -> None:
    source = ListSource(_events(), description="hostile", agent=FakeAgent())
    app = AclmonApp(source, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        for key in ("1", "2", "3", "4", "1"):
            await pilot.press(key)
            await pilot.pause(0.3)
    assert app.return_code in (0, None)
