"""Shared test helpers: the scenario app, a fake agent, real dump files."""

from __future__ import annotations

import asyncio
import io
import struct
from pathlib import Path

import numpy as np
from rich.console import Console
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_PROF_ALREADY_RUN, ACL_FLOAT, ACL_FORMAT_ND
from aclmon.sources.base import ListSource
from aclmon.sources.golden import DirectoryCompare
from aclmon.tui.app import AclmonApp

SIZE = (140, 42)


class FakeAgent:
    """Answers every command; profiling config is refused as if acl.json owned it."""

    def __init__(self) -> None:
        self.commands: list[object] = []

    def __call__(self, command: object) -> ev.Reply:
        self.commands.append(command)
        if isinstance(command, ev.SetProfilingConfig):
            return ev.Reply(
                0, 0, command.request_id, ACL_ERROR_PROF_ALREADY_RUN,
                "profiling is owned by acl.json", {},
            )  # fmt: skip
        return ev.Reply(0, 0, command.request_id, 0, "", {})


def over_the_wire(events: list[ev.Event]) -> list[ev.Event]:
    """The events as a subscriber sees them: encoded, unpacked and decoded
    (sequences inside summaries become tuples, as on the real bus)."""
    decoder = ev.EventDecoder()
    out = [decoder.decode(ev.unpack_payload(ev.encode(e))) for e in events]
    assert decoder.malformed == 0 and None not in out
    return out  # type: ignore[return-value]


def make_app(
    *, theme: str = "aclmon-dark", events=None, agent=None, readonly=False, **kwargs
) -> AclmonApp:
    source = ListSource(
        over_the_wire(build_events() if events is None else events),
        description="scenario",
        agent=agent if agent is not None else FakeAgent(),
        readonly=readonly,
    )
    kwargs.setdefault("clock", lambda: 0.0)
    return AclmonApp(source, theme=theme, **kwargs)


def golden_app(directory: Path, **kwargs) -> AclmonApp:
    """The scenario app as ``--golden`` opens it, so with every view (Compare too):
    for what lists the views and their keys, not for rows (it compares an empty
    ``directory`` with itself)."""
    return make_app(compare=DirectoryCompare(str(directory), str(directory)), **kwargs)


def compare_app(pair: tuple[Path, Path], **kwargs) -> tuple[AclmonApp, DirectoryCompare]:
    """The scenario app with the Compare view of a golden pair (the ``pair``
    fixture) shown first, and its compare."""
    mine, golden = pair
    compare = DirectoryCompare(str(mine), str(golden))
    return make_app(compare=compare, start_view="compare", **kwargs), compare


def write_overflow_pair(
    directory: Path, task_id: int = 2001, stream_id: int = 6
) -> tuple[Path, Path]:
    """A real overflow file and the operator dump it points at (with a NaN and an Inf)."""
    from aclmon.sim import dumpfile  # the simulator's dump writer (protobuf): only when needed

    x = np.array([[1.0, 2.0, np.nan, 4.0], [5.0, np.inf, -1.0, 0.0]], dtype=np.float32)
    y = np.array([3.0, 65504.0, np.inf, 0.5], dtype=np.float32)
    inputs = [dumpfile.DumpTensor(ACL_FLOAT, ACL_FORMAT_ND, x.shape, x.shape, x.tobytes())]
    outputs = [dumpfile.DumpTensor(ACL_FLOAT, ACL_FORMAT_ND, y.shape, y.shape, y.tobytes())]
    op_path = directory / dumpfile.dump_file_name(
        "MatMulV2", "resnet50/fc/MatMulV2", task_id, stream_id, 1764669648123456
    )
    op_path.write_bytes(
        dumpfile.encode_dump("resnet50/fc/MatMulV2", 1764669648123456, inputs, outputs)
    )
    info = dumpfile.OverflowInfo(
        model_id=1, stream_id=stream_id, task_id=task_id, pc_start=0x12C000A0,
        para_base=0x12C001F0, block_idx=3, core_id=5, status=0x20, cube=True,
    )  # fmt: skip
    record = dumpfile.old_overflow_record(info)
    over_path = directory / f"Opdebug.Node_OpDebug.{task_id + 1}.{stream_id}.1764669648123999"
    over_path.write_bytes(dumpfile.encode_overflow_file(record, 1764669648123999))
    assert struct.unpack_from("<Q", over_path.read_bytes())[0] > 0
    return over_path, op_path


def overflow_pair_app(directory: Path) -> tuple[AclmonApp, Path, Path]:
    """The app over the scenario's start and a real operator dump and overflow
    file (in that order): (app, overflow file, operator dump)."""
    over_path, op_path = write_overflow_pair(directory)
    events = [
        *build_events()[:5],
        ev.DumpFileSeen(900, T0 + 10**9, str(op_path), "op-dump", op_path.stat().st_size, {}),
        ev.DumpFileSeen(
            901, T0 + 10**9 + 1, str(over_path), "overflow", over_path.stat().st_size, {}
        ),
    ]
    return make_app(events=events), over_path, op_path


def static_text(app: AclmonApp, selector: str) -> str:
    """The plain text of a Static's content, rendered at the widget's width."""
    widget = app.screen.query_one(selector)
    console = Console(width=max(widget.size.width, 40), file=io.StringIO(), record=True)
    console.print(widget.content)
    return console.export_text()


def screen_text(app: AclmonApp) -> str:
    """What the terminal shows now, as plain text (the lines a snapshot draws)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


async def replay_to_the_end(app, pilot, view_key: str) -> None:
    """A replay app, once indexed, at the end of its recording, in a view."""
    while not (app.engine.index.indexed and app.engine.ready):
        await asyncio.sleep(0.02)
    await pilot.press(view_key, "E")
    while app.engine.position < len(app.engine):
        await asyncio.sleep(0.02)
    app.tick()
    await pilot.pause()


async def wait_for(pilot, predicate, timeout: float = 3.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached")
        await pilot.pause(0.02)
