"""Write the screenshots of docs/usage.md from a real run, as ``aclmon demo`` shows it:
the demo job (the simulated runtime under the agent, in its own process) and the
real app attached to it over the real bus, driven with Pilot. Each view is saved
at 160×48 (``NAME.svg``) and 80×24 (``NAME-80x24.svg``).

usage: PYTHONPATH=. python tests/tui/make_screenshots.py [OUT_DIR]   (default docs/usage)

It takes a minute or two: it waits until the job has raised AI Core exceptions and
an overflow, and until live operator timings have come in.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aclmon.sources.demo import DemoJob
from aclmon.sources.live import LiveSource
from aclmon.tui.app import AclmonApp

WIDE = (160, 48)
NARROW = (80, 24)
#: how long to wait for what the screenshots need before giving up
PATIENCE_S = 240.0


async def until(pilot: Any, what: str, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"make_screenshots: gave up waiting for {what}")
        await pilot.pause(0.25)


async def settle(pilot: Any, app: AclmonApp) -> None:
    """Let refreshes and decoding workers finish before a screenshot."""
    await pilot.pause(0.6)
    await app.workers.wait_for_complete()
    await pilot.pause(0.6)


async def shoot(pilot: Any, app: AclmonApp, out: Path, name: str, *keys: str) -> None:
    """Press ``keys``, then save the screen at both sizes."""
    for key in keys:
        await pilot.press(key)
    for size, suffix in ((WIDE, ""), (NARROW, "-80x24")):
        await pilot.resize_terminal(*size)
        await settle(pilot, app)
        app.save_screenshot(str(out / f"{name}{suffix}.svg"))
    await pilot.resize_terminal(*WIDE)
    print(f"wrote {name}.svg and {name}-80x24.svg", flush=True)


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with DemoJob() as job:
        source = LiveSource(str(job.socket_path), description="aclmon demo")
        app = AclmonApp(source, theme="aclmon-dark")
        async with app.run_test(size=WIDE) as pilot:
            s = app.store.state
            await until(pilot, "the job's devices", lambda: len(s.devices) >= 4)
            await pilot.press("3", "t")  # live operator timings, as a user would start them
            await until(
                pilot,
                "four AI Core exceptions and an overflow",
                lambda: s.exceptions_total >= 4 and any(d.kind == "overflow" for d in s.dumps),
            )
            await until(pilot, "operator timings", lambda: len(s.ops) >= 10)

            await shoot(pilot, app, out, "devices", "1")
            app.theme = "aclmon-light"
            await shoot(pilot, app, out, "devices-light")
            app.theme = "aclmon-dark"
            await shoot(pilot, app, out, "exceptions", "2")
            await shoot(pilot, app, out, "exception-detail", "enter")
            await pilot.press("escape")
            await shoot(pilot, app, out, "profiling", "3")
            app.theme = "aclmon-light"
            await shoot(pilot, app, out, "profiling-light")
            app.theme = "aclmon-dark"
            await shoot(pilot, app, out, "dumps", "4", "home")
            # an overflow record decoded: only overflow files, the newest selected
            await shoot(pilot, app, out, "dumps-decoded", "o", "end", "enter")
            await pilot.press("o")
            await shoot(pilot, app, out, "help", "question_mark")
            await pilot.press("escape")
        source.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/usage")))
