"""``aclmon replay PATH``: a recording (with its timeline) or a dump directory
in the same screens as a live session.

What PATH holds, the ``--json`` summary and the recording and dump-directory
sources are headless (:mod:`aclmon.sources.replay_inputs`,
:mod:`aclmon.sources.replay_summary`, :mod:`aclmon.sources.recording`);
here: :mod:`.timeline` the timeline widget and go-to-time prompt, :mod:`.app`
the recording's app.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from aclmon.errors import AclmonError
from aclmon.sources.dumpdir import DumpDirectorySource
from aclmon.sources.recording import LateIndex, RecordingSource
from aclmon.sources.replay_inputs import ReplayInputs, log_lines_beside, msprof_beside
from aclmon.store import Store
from aclmon.store.replay import ReplayEngine
from aclmon.tui.app import AclmonApp
from aclmon.tui.replay.app import SPEEDS, ReplayApp
from aclmon.tui.replay.timeline import SeekTimeScreen

__all__ = [
    "SPEEDS",
    "ReplayApp",
    "SeekTimeScreen",
    "build_app",
    "replay_command",
]


def build_app(
    inputs: ReplayInputs,
    *,
    speed: float = 1.0,
    play: bool = False,
    start_at: str | None = None,
    **kwargs: Any,
) -> AclmonApp:
    """The replay app for what ``find_inputs`` found (not yet running)."""
    if not SPEEDS[0] <= speed <= SPEEDS[-1]:
        raise AclmonError(
            f"--speed must be between {SPEEDS[0]:g} and {SPEEDS[-1]:g}, not {speed:g}"
        )
    recording = inputs.recording
    if recording is None:
        # A dump directory alone: the plain app over its files, grouped, every
        # file kept (the live ring keeps the newest 2000).
        kwargs.setdefault("store", Store(dump_limit=max(2_000, len(inputs.dump_files))))
        only_msprof = inputs.msprof_files and not inputs.dump_files
        kwargs.setdefault("start_view", "profiling" if only_msprof else "dumps")
        return AclmonApp(DumpDirectorySource(inputs), group_dumps=True, **kwargs)
    index = LateIndex(recording)  # a bad header raises here: one clear error, no screen
    # The job's CANN log lines found beside the recording join its timeline at their
    # times (the store keeps one copy of a line the agent had also published).
    logs, others = log_lines_beside(inputs, index.header.source_info.get("pid"))
    # So do the operator timings and msproftx records of msprof's files found there.
    side = [*logs, *msprof_beside(inputs)]
    engine = ReplayEngine(index, recording, side_events=side)
    warnings = []
    if others:
        warnings.append(
            f"{others} CANN log file(s) of other processes under {inputs.root} left out"
        )
    other_recordings = [p for p in inputs.recordings if p != recording]
    if other_recordings:
        warnings.append(
            f"{len(other_recordings)} other recording(s) under {inputs.root}; showing the newest"
        )
    return ReplayApp(
        RecordingSource(engine, f"replay {recording.name}", index, inputs),
        engine=engine,
        inputs=inputs,
        speed=speed,
        play=play,
        start_at=start_at,
        warnings=warnings,
        **kwargs,
    )


def replay_command(args: argparse.Namespace) -> int:
    """``aclmon replay PATH`` (see :func:`aclmon.tui.commands.configure_replay`)."""
    import json

    from aclmon.sources.replay_inputs import find_inputs

    if args.golden and args.json:
        raise AclmonError(
            "--golden opens the Compare view; `aclmon compare -m PATH -g GOLDEN --json` prints it"
        )
    if args.golden:
        from aclmon.sources.golden import check_golden

        check_golden(args.golden)
    inputs = find_inputs(args.path)
    if args.json:
        from aclmon.sources.replay_summary import replay_summary

        text = json.dumps(replay_summary(inputs), indent=2)
        try:
            print(text, flush=True)
        except BrokenPipeError:  # `aclmon replay --json x | head`: the reader left early
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    from aclmon.tui.options import check_interval, keymap_of

    check_interval(args)
    keymap = keymap_of(args)
    screen: dict[str, Any] = {}
    if args.golden:
        from aclmon.sources.golden import DirectoryCompare

        mine = inputs.root if inputs.root.is_dir() else inputs.root.parent
        # asked to compare: the Compare view is what the user came for
        screen = {"compare": DirectoryCompare(str(mine), args.golden), "start_view": "compare"}
    app = build_app(
        inputs,
        speed=args.speed,
        play=args.play,
        start_at=args.at,
        interval=args.interval,
        theme=args.theme,
        keymap=keymap,
        **screen,
    )
    from aclmon.tui.lifetime import run_app

    try:
        return run_app(app)
    finally:
        app.source.close()
