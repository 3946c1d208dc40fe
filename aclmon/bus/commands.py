"""``aclmon record`` and ``aclmon events``: the bus from the command line.

Imported to build ``aclmon --help``, so everything heavy is imported inside
the handlers.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aclmon.events import Event


def _add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    from aclmon.bus.secrets import TOKEN, add_secret_option

    add_secret_option(parser, TOKEN, "shared token for an agent that requires one")
    parser.add_argument(
        "--count", type=int, default=0, metavar="N", help="stop after N events (0 = no limit)"
    )


def _add_target(parser: argparse.ArgumentParser, name: str, also: str = "") -> None:
    """The agent to read (``also``: what else the argument may name, before it)."""
    parser.add_argument(
        name,
        nargs="?",
        help=f"{also}PID, socket path or tcp://host:port (default: the only running agent)",
    )


def configure_record(parser: argparse.ArgumentParser) -> None:
    _add_target(parser, "target")
    parser.add_argument("file", help="recording to write (overwritten)")
    _add_connection_arguments(parser)
    parser.epilog = "Records until interrupted (Ctrl-C or SIGTERM), then prints the count."
    parser.set_defaults(handler=run_record)


def configure_events(parser: argparse.ArgumentParser) -> None:
    _add_target(parser, "source", "a recording file, or a ")
    parser.add_argument("--json", action="store_true", help="one JSON object per line (for jq)")
    parser.add_argument(
        "--follow", action="store_true", help="keep reading a recording that is still growing"
    )
    _add_connection_arguments(parser)
    parser.set_defaults(handler=run_events)


# ---------------------------------------------------------------- helpers
class _StopFlag:
    """Set by SIGINT/SIGTERM; the previous handlers come back on exit."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.event.set()

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def __bool__(self) -> bool:
        return self.event.is_set()


def _connect(target: str | None, token: str | None) -> Any:
    from aclmon.bus.registry import resolve_target
    from aclmon.bus.states import AUTH_FAILED, CONNECTED, DISCONNECTED
    from aclmon.bus.subscriber import Subscriber

    address = resolve_target(target)
    holder: list[Any] = []
    last_message = ""

    def report(state: str) -> None:
        # Retries repeat the same failure every backoff: say each one once.
        nonlocal last_message
        if state == CONNECTED:
            last_message = ""
        elif state in (DISCONNECTED, AUTH_FAILED) and holder:
            message = f"{state}: {holder[0].state_reason}" if holder[0].state_reason else state
            if message != last_message:
                print(f"aclmon: {address}: {message}", file=sys.stderr)
                last_message = message

    subscriber = Subscriber(address, token=token, readonly=True, on_state=report)
    holder.append(subscriber)
    return subscriber.start()


def _looks_like_a_file(source: str) -> bool:
    """A path that names no agent: not a PID, not an address, not an existing socket."""
    if source.isdigit() or "://" in source or source.startswith("unix:"):
        return False
    return not os.path.exists(source) and not source.endswith(".sock")


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)


# ---------------------------------------------------------------- record
def run_record(args: argparse.Namespace, also: Callable[[], Sequence[Event]] | None = None) -> int:
    """Record the target's events until stopped; ``also`` gives events of the
    recorder's own to write beside them (``--host``: this machine's NPUs)."""
    import socket
    import time

    from aclmon.bus.recording import RecordingWriter
    from aclmon.bus.secrets import TOKEN, read_secret

    subscriber = _connect(args.target, read_secret(args, TOKEN))
    written = 0
    with _StopFlag() as stop:
        try:
            writer = RecordingWriter(
                args.file,
                {
                    "tool": "aclmon record",
                    "target": str(subscriber.address),
                    "host": socket.gethostname(),
                    "started_ns": time.time_ns(),
                },
            )
        except OSError as exc:
            subscriber.close()
            from aclmon.errors import AclmonError

            raise AclmonError(f"cannot write {args.file}: {exc.strerror}") from None
        try:
            while not stop:
                events = subscriber.poll(50_000, 0.2)
                if also is not None:
                    events = [*also(), *events]
                if args.count:
                    events = events[: args.count - written]
                if events:
                    writer.write_many(events)
                    writer.flush()
                    written += len(events)
                if args.count and written >= args.count:
                    break
        finally:
            writer.close()
            subscriber.close()
    gaps = f", {subscriber.gaps} missed in the sequence" if subscriber.gaps else ""
    print(f"recorded {written} events to {args.file}{gaps}")
    return 0


# ---------------------------------------------------------------- events
def _recording_events(path: str, follow: bool, stop: _StopFlag) -> Iterator[Any]:
    from aclmon.bus.recording import RecordingReader

    with RecordingReader(path, background=False) as reader:
        if reader.schema_warning:
            print(f"aclmon events: warning: {reader.schema_warning}", file=sys.stderr)
        done = 0
        while True:
            yield from reader.iter_events(done)
            done = len(reader)
            if not follow or stop:
                break
            if not reader.refresh():
                stop.event.wait(0.2)
        if reader.cut is not None and not follow:
            print(f"aclmon events: {path}: {reader.cut}", file=sys.stderr)


def _live_events(target: str | None, token: str | None, stop: _StopFlag) -> Iterator[Any]:
    subscriber = _connect(target, token)
    try:
        while not stop:
            yield from subscriber.poll(10_000, 0.2)
    finally:
        subscriber.close()
        skipped = [
            f"{count} {what}"
            for count, what in (
                (subscriber.malformed, "malformed frames skipped"),
                (subscriber.unknown, "events of unknown kinds skipped"),
                (subscriber.gaps, "events missed in the sequence"),
            )
            if count
        ]
        if skipped:
            print(f"aclmon events: {subscriber.address}: {', '.join(skipped)}", file=sys.stderr)


def run_events(args: argparse.Namespace) -> int:
    import json

    from aclmon.bus.recording import is_recording
    from aclmon.bus.secrets import TOKEN, read_secret
    from aclmon.events import kind_name, to_json

    token = read_secret(args, TOKEN)
    count = 0
    with _StopFlag() as stop:
        if args.source and os.path.isfile(args.source) and is_recording(args.source):
            events = _recording_events(args.source, args.follow, stop)
        elif args.source and os.path.isfile(args.source):
            from aclmon.errors import AclmonError

            raise AclmonError(f"{args.source} is not an aclmon recording")
        elif args.source and _looks_like_a_file(args.source):
            from aclmon.errors import AclmonError, no_such_file

            raise AclmonError(
                f"{no_such_file(args.source)} (give a recording, a PID, a socket or tcp://)"
            )
        else:
            events = _live_events(args.source, token, stop)
        out = sys.stdout
        try:
            for event in events:
                if args.json:
                    line = json.dumps(to_json(event), separators=(",", ":"), default=_json_default)
                else:
                    names = event._fields[2:]
                    fields = " ".join(f"{n}={v!r}" for n, v in zip(names, event[2:], strict=True))
                    line = f"{event.seq:>8} {event.ts_ns} {kind_name(event)} {fields}"
                out.write(line + "\n")
                count += 1
                if args.count and count >= args.count:
                    break
            out.flush()
        except BrokenPipeError:
            # `| head` closed the pipe: not an error; keep Python from complaining at exit.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
    return 0
