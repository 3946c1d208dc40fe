"""Write the screenshots of docs/usage.md (SVG, exported by Textual) from the fixed scenario.

usage: python tests/tui/make_screenshots.py [OUT_DIR]   (default docs/usage)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from tui_helpers import SIZE, make_app, write_overflow_pair
from tui_scenario import T0, build_events

from aclmon import events as ev

SHOTS = [
    ("devices", "aclmon-dark", ["1"]),
    ("devices-light", "aclmon-light", ["1"]),
    ("exceptions", "aclmon-dark", ["2", "up"]),
    ("exception-detail", "aclmon-dark", ["2", "up", "enter"]),
    ("profiling", "aclmon-dark", ["3", "d"]),
    ("profiling-light", "aclmon-light", ["3"]),
    ("dumps", "aclmon-dark", ["4", "up"]),
    ("help", "aclmon-dark", ["question_mark"]),
]


async def shoot(out: Path, name: str, theme: str, keys: list[str], events=None) -> None:
    app = make_app(theme=theme, events=events)
    async with app.run_test(size=SIZE) as pilot:
        for key in keys:
            await pilot.press(key)
        await pilot.pause(0.3)
        await app.workers.wait_for_complete()
        await pilot.pause(0.3)
        app.save_screenshot(str(out / f"{name}.svg"))


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, theme, keys in SHOTS:
        await shoot(out, name, theme, keys)
    # The overflow decoded: real files written by the simulator's dump writer.
    with tempfile.TemporaryDirectory(prefix="aclmon-shot-") as tmp:
        over, op = write_overflow_pair(Path(tmp))
        events = build_events()
        n = len(events)
        events += [
            ev.DumpFileSeen(n + 1, T0 + 10**11, str(op), "op-dump", op.stat().st_size, {}),
            ev.DumpFileSeen(n + 2, T0 + 10**11 + 1, str(over), "overflow", over.stat().st_size, {}),
        ]
        await shoot(out, "dumps-decoded", "aclmon-dark", ["4", "enter"], events)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/usage")))
