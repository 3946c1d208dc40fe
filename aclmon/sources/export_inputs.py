"""What ``aclmon export`` reads: the recordings given (found in a directory as
``aclmon replay`` finds them, with the dump files beside them), or a live job or
fleet recorded into temporary recordings first (one per source, on disk, so
memory stays flat whatever the length)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from aclmon import events as ev
from aclmon.bus.recording import RecordingWriter, is_recording
from aclmon.bus.secrets import NATS_TOKEN_ENV, TOKEN, read_secret
from aclmon.errors import AclmonError, no_such_file
from aclmon.fleet.commands import credentials_from, parse_duration
from aclmon.sources.replay_inputs import dump_events, find_inputs

#: live sources: events polled per step
_POLL = 50_000
#: the dump files an export shows: overflow records, and the exception dumps that
#: exceptions name
_SHOWN_DUMPS = (ev.OVERFLOW_DUMP, ev.EXCEPTION_DUMP)


@dataclass
class Inputs:
    """The recordings to export (one group each) and what was said about them."""

    recordings: list[Path] = field(default_factory=list)
    #: the overflow and exception dump files found beside them or under --dumps
    dump_files: list[Path] = field(default_factory=list)
    #: the window options apply (a nats --since was spent on the feed)
    since_applies: bool = True
    notes: list[str] = field(default_factory=list)
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    def __enter__(self) -> Inputs:
        return self

    def __exit__(self, *exc: object) -> None:
        for step in self.cleanup:
            step()

    def dump_events(self) -> list[ev.DumpFileSeen]:
        """The dump files as the agent would have announced them, in time order."""
        found = dump_events(self.dump_files)
        return sorted(found, key=lambda e: (e.ts_ns, e.path))


def read_inputs(args: argparse.Namespace, inputs: Inputs) -> None:
    """Fills ``inputs`` from the command line: the recordings given, or a live
    source recorded into temporary ones."""
    from aclmon.fleet.connect import is_nats_target

    sources: list[str] = args.source
    if args.dumps is not None:
        if not os.path.isdir(args.dumps):
            raise AclmonError(f"--dumps {args.dumps}: not a directory")
        _add_dumps(find_inputs(args.dumps).dump_files, inputs)
    if len(sources) == 1 and is_nats_target(sources[0]):
        _spool_fleet(args, sources[0], inputs)
        return
    files = [s for s in sources if not _is_live(s)]
    if files and len(files) != len(sources):
        raise AclmonError("give recordings, or one live source")
    if not files:
        if len(sources) > 1:
            raise AclmonError("one live source at a time (a fleet: nats://SERVER/JOB)")
        _spool_live(args, sources[0] if sources else None, inputs)
        return
    for source in files:
        if not os.path.exists(source):
            raise AclmonError(f"{no_such_file(source)} (a recording, a directory or a job)")
    if args.duration:
        raise AclmonError("--duration goes with a live source")
    for source in files:
        path = Path(source)
        if path.is_dir():
            found = find_inputs(path)
            if found.recording is None and found.msprof_files:
                _spool_msprof(found.msprof_files, inputs)
            elif found.recording is None:
                raise AclmonError(f"{path}: no aclmon recording or msprof export files in it")
            else:
                inputs.recordings.append(found.recording)
                if found.msprof_files:
                    inputs.notes.append(
                        f"{len(found.msprof_files)} msprof file(s) beside the recording"
                        " left out (aclmon replay shows them with it)"
                    )
            if args.dumps is None:
                _add_dumps(found.dump_files, inputs)
        elif is_recording(path):
            inputs.recordings.append(path)
        else:
            raise AclmonError(f"{source} is not an aclmon recording")


def _spool_msprof(files: list[Path], inputs: Inputs) -> None:
    """msprof's exported files as one temporary recording (one group)."""
    from aclmon.sources.msprof_files import msprof_events

    events, problems = msprof_events(files)
    inputs.notes.extend(problems)
    if not events:
        raise AclmonError(f"{files[0].parent}: no operator or msproftx record in its msprof files")
    spool = _Spool(inputs)
    try:
        spool.write("msprof", events)
    finally:
        spool.close()


def _add_dumps(files: list[Path], inputs: Inputs) -> None:
    from aclmon.dump import classify

    inputs.dump_files.extend(f for f in files if classify(f) in _SHOWN_DUMPS)


def _is_live(source: str) -> bool:
    """A job's address (a PID, a socket, unix:… or tcp://…), not a file to read."""
    import stat

    if source.isdigit() or "://" in source or source.startswith("unix:"):
        return True
    try:
        return stat.S_ISSOCK(os.stat(source).st_mode)
    except OSError:
        return source.endswith(".sock")


def _spool_live(args: argparse.Namespace, target: str | None, inputs: Inputs) -> None:
    """Record one live job (until --duration, its end or Ctrl-C) into a temporary file."""
    from aclmon.bus.registry import resolve_target
    from aclmon.bus.states import AUTH_FAILED, DISCONNECTED
    from aclmon.bus.subscriber import Subscriber

    if args.since:
        raise AclmonError("--since goes with a recording or nats:// (a live job: --duration)")
    duration = parse_duration(args.duration) if args.duration else None
    token = read_secret(args, TOKEN)
    spool = _Spool(inputs)
    subscriber = Subscriber(resolve_target(target), token=token, readonly=True).start()
    try:
        if not subscriber.wait_connected(10.0):
            reason = subscriber.state_reason or subscriber.state
            raise AclmonError(f"{subscriber.address}: cannot connect ({reason})")
        deadline = time.monotonic() + duration if duration else None
        print(f"aclmon export: recording {subscriber.address}"
              + (f" for {args.duration}" if duration else " until it ends (Ctrl-C stops)"),
              file=sys.stderr)  # fmt: skip
        ended = False
        with _Interrupted() as interrupted:
            while not interrupted.happened and not ended:
                timeout = (
                    0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
                )
                events = subscriber.poll(_POLL, timeout)
                spool.write("live", events)
                ended = any(type(e) is ev.Goodbye for e in events)
                if deadline is not None and time.monotonic() >= deadline:
                    break
                if subscriber.state in (DISCONNECTED, AUTH_FAILED) and not events:
                    break
        if subscriber.gaps:
            inputs.notes.append(f"{subscriber.gaps} events missed in the sequence")
    finally:
        subscriber.close()
        spool.close()


def _spool_fleet(args: argparse.Namespace, target: str, inputs: Inputs) -> None:
    """Record a fleet over NATS (JetStream from --since, then live for --duration)
    into one temporary recording per source."""
    from aclmon.bus.states import AUTH_FAILED, DISCONNECTED
    from aclmon.fleet.connect import parse_target
    from aclmon.fleet.nats_source import NatsFeed

    if args.since is None and args.duration is None:
        raise AclmonError("a fleet export needs --since (JetStream, e.g. 10m or all) or --duration")
    since = parse_duration(args.since) if args.since is not None else None
    duration = parse_duration(args.duration) if args.duration else None
    url, scope = parse_target(target)
    token = read_secret(args, TOKEN, env=NATS_TOKEN_ENV)
    feed = NatsFeed(url, scope, credentials_from(args, token), since_s=since, readonly=True)
    inputs.since_applies = False
    spool = _Spool(inputs)
    feed.start()
    try:
        deadline = time.monotonic() + duration if duration else None
        quiet_since = time.monotonic()
        with _Interrupted() as interrupted:
            while not interrupted.happened:
                if feed.state in (AUTH_FAILED, DISCONNECTED) and feed.state_reason:
                    raise AclmonError(f"{target}: {feed.state_reason}")
                batches = feed.poll(_POLL)
                for key, events in batches:
                    spool.write(f"{key[0]}-{key[1]}", events)
                now = time.monotonic()
                if batches:
                    quiet_since = now
                if deadline is not None:
                    if now >= deadline:
                        break
                elif feed.caught_up.is_set() and now - quiet_since > 1.0:
                    break  # JetStream replayed up to now
                time.sleep(0.05)
        if feed.lost:
            inputs.notes.append(f"{feed.lost} events lost by the feed")
    finally:
        feed.close()
        spool.close()
    if not inputs.recordings:
        raise AclmonError(f"{target}: no events from any source")


class _Spool:
    """Temporary recordings, one per source key, removed when the export is done."""

    def __init__(self, inputs: Inputs) -> None:
        import shutil
        import tempfile

        self.inputs = inputs
        self.directory = Path(tempfile.mkdtemp(prefix="aclmon-export-"))
        inputs.cleanup.append(lambda: shutil.rmtree(self.directory, ignore_errors=True))
        self.writers: dict[str, RecordingWriter] = {}

    def write(self, key: str, events: list[ev.Event]) -> None:
        if not events:
            return
        writer = self.writers.get(key)
        if writer is None:
            path = self.directory / f"{len(self.writers)}.aclmrec"
            writer = self.writers[key] = RecordingWriter(path, {"tool": "aclmon export"})
            self.inputs.recordings.append(path)
        writer.write_many(events)

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()


class _Interrupted:
    """Ctrl-C or SIGTERM ends the recording of a live source (the export then runs)."""

    def __init__(self) -> None:
        self.happened = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Interrupted:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._note)
        return self

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.happened = True

    def __exit__(self, *exc: object) -> None:
        import signal

        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
