"""``aclmon relay``: forward this host's agents to NATS (see :mod:`aclmon.fleet.relay`)."""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

_SIZE = re.compile(r"^\s*(\d+)\s*(|k|kib|kb|m|mib|mb|g|gib|gb)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(|s|m|h|d)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    from aclmon.errors import AclmonError

    match = _SIZE.match(text)
    if not match:
        raise AclmonError(f"not a size: {text!r} (use bytes, 64KiB, 1MiB or 8GiB)")
    unit = match.group(2).lower()[:1]
    scale = {"g": 1 << 30, "m": 1 << 20, "k": 1 << 10}.get(unit, 1)
    return int(match.group(1)) * scale


def parse_duration(text: str) -> float:
    """``90``, ``30s``, ``10m``, ``2h``, ``1d`` as seconds; ``all`` is 0 (everything kept)."""
    from aclmon.errors import AclmonError

    if text.strip().lower() == "all":
        return 0.0
    match = _DURATION.match(text)
    if not match:
        raise AclmonError(f"not a duration: {text!r} (use 30s, 10m, 2h, 1d or all)")
    scale = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2).lower()]
    return float(match.group(1)) * scale


def add_nats_credentials(parser: argparse.ArgumentParser) -> None:
    """--creds/--nkey/--tls-* for NATS (the token option is the command's own)."""
    group = parser.add_argument_group("NATS credentials")
    group.add_argument("--creds", metavar="FILE", help="NATS user credentials (.creds, JWT)")
    group.add_argument("--nkey", metavar="FILE", help="NATS nkey seed file (mode 0600)")
    group.add_argument("--tls-ca", metavar="FILE", help="CA that signed the server's certificate")
    group.add_argument("--tls-cert", metavar="FILE", help="client certificate (mutual TLS)")
    group.add_argument("--tls-key", metavar="FILE", help="client key (mutual TLS)")


def credentials_from(args: argparse.Namespace, token: str | None) -> Any:
    from aclmon.fleet.connect import Credentials

    credentials = Credentials(
        token=token or None,
        creds=args.creds,
        nkey=args.nkey,
        tls_ca=args.tls_ca,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
    )
    credentials.check()
    return credentials


def configure_relay(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nats", required=True, metavar="URL", help="nats://HOST:PORT or tls://…")
    parser.add_argument(
        "--job",
        default=os.environ.get("ACLMON_JOB"),
        help="job name in the subjects (default $ACLMON_JOB, else each agent's own job name)",
    )
    parser.add_argument("--host", help="host name in the subjects (default: this host's)")
    from aclmon.bus.secrets import AGENT_TOKEN, NATS_TOKEN, add_secret_option

    add_secret_option(parser, NATS_TOKEN, "NATS token (off loopback only over TLS)")
    add_secret_option(parser, AGENT_TOKEN, "the agents' bus token, if they require one")
    add_nats_credentials(parser)
    parser.add_argument(
        "--flush-ms", type=float, default=20.0, help="publish a batch at most this late (20)"
    )
    parser.add_argument(
        "--max-msg", default="64KiB", help="largest batch (64KiB; never above the server's limit)"
    )
    parser.add_argument(
        "--stream-limit",
        action="append",
        default=[],
        metavar="CLASS=AGE:SIZE",
        help="limits of a stream the relay creates, e.g. events=10m:8GiB"
        " (classes: events, summary, alerts, state; default events=10m:1GiB,"
        " summary=6h:1GiB, alerts=7d:256MiB, state=24h:64MiB)",
    )
    parser.add_argument(
        "--allow-anonymous-commands",
        action="store_true",
        help="forward commands even from a NATS server that requires no authentication"
        " (anyone who can reach it could then command this host's agents)",
    )
    parser.add_argument(
        "--no-setup-streams",
        action="store_true",
        help="do not create the JetStream streams (an operator manages them)",
    )
    parser.set_defaults(handler=relay_command)


def parse_stream_limits(items: list[str]) -> Any:
    """``CLASS=AGE:SIZE`` options over the default stream limits."""
    from dataclasses import replace

    from aclmon.errors import AclmonError
    from aclmon.fleet.streams import DEFAULT_STREAM_LIMITS

    limits = dict(DEFAULT_STREAM_LIMITS)
    for item in items:
        cls, _, value = item.partition("=")
        age, _, size = value.partition(":")
        if cls not in limits or not age or not size:
            raise AclmonError(
                f"--stream-limit {item!r}: expected CLASS=AGE:SIZE with CLASS one of"
                f" {', '.join(limits)} (e.g. events=10m:8GiB)"
            )
        seconds = parse_duration(age)
        if seconds <= 0:
            raise AclmonError(f"--stream-limit {item!r}: the age must be more than 0")
        limits[cls] = replace(limits[cls], max_age_s=seconds, max_bytes=parse_size(size))
    return limits


def relay_command(args: argparse.Namespace) -> int:
    import asyncio
    import signal
    import sys

    from aclmon.bus.secrets import AGENT_TOKEN, NATS_TOKEN, read_secret
    from aclmon.errors import AclmonError
    from aclmon.fleet.relay import Relay

    nats_token = read_secret(args, NATS_TOKEN)
    agent_token = read_secret(args, AGENT_TOKEN)
    if args.flush_ms <= 0 or args.flush_ms > 10_000:
        raise AclmonError(f"--flush-ms must be between 0 and 10000, not {args.flush_ms}")

    def note(text: str) -> None:
        print(f"aclmon relay: {text}", file=sys.stderr, flush=True)

    from aclmon.fleet.hostrelay import hold_relay_lock

    held: list[Any] = []  # `aclmon run --relay` sees this host has a relay once connected
    relay = Relay(
        args.nats,
        credentials_from(args, nats_token),
        job=args.job,
        host=args.host,
        agent_token=agent_token,
        flush_ms=args.flush_ms,
        max_bytes=parse_size(args.max_msg),
        setup_streams=not args.no_setup_streams,
        stream_limits=parse_stream_limits(args.stream_limit),
        on_note=note,
        allow_anonymous_commands=args.allow_anonymous_commands,
        on_connected=lambda: held.append(hold_relay_lock(args.nats)),
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        note(f"relaying this host's agents to {args.nats} (Ctrl-C stops)")
        await relay.run(stop)

    try:
        asyncio.run(main())
    finally:
        for lock in held:
            lock.close()
    totals = relay.totals()
    note(
        f"stopped after {totals['agents']} agents: {totals['frames_in']} frames read,"
        f" {totals['dropped']} dropped, {relay.publish_errors} failed publishes"
    )
    return 0


# ------------------------------------------------------------------ record nats://
def configure_record(parser: argparse.ArgumentParser) -> None:
    """``aclmon record``: the bus command, plus one source of a fleet over NATS."""
    from aclmon.bus.commands import configure_record as configure_bus_record

    configure_bus_record(parser)
    parser.add_argument(
        "--host",
        action="store_true",
        help="also record this machine's NPUs and their processes once a second (DCMI or"
        " npu-smi, as aclmon top reads them), for the Host view of the replay",
    )
    parser.add_argument(
        "--since",
        metavar="DURATION",
        help="nats:// only: start this far back in JetStream (30s, 10m, all); default: live",
    )
    add_nats_credentials(parser)
    parser.set_defaults(handler=record_command)
    parser.epilog = (
        "Records until interrupted (Ctrl-C or SIGTERM), then prints the count. A target"
        " nats://SERVER/JOB/HOST/PID records that agent's events as forwarded by its relay."
    )


def record_command(args: argparse.Namespace) -> int:
    from aclmon.bus.commands import run_record
    from aclmon.fleet.connect import is_nats_target

    if not is_nats_target(args.target):
        if args.since:
            from aclmon.errors import AclmonError

            raise AclmonError("--since goes with a nats:// target")
        if args.host:
            return record_with_host(args)
        return int(run_record(args))
    if args.host:
        from aclmon.errors import AclmonError

        raise AclmonError("--host records this machine: not with a nats:// target")
    return record_nats(args)


def record_with_host(args: argparse.Namespace) -> int:
    """A local agent's events and this machine's NPUs (``HostNpuSample``) in one file."""
    from aclmon.bus.commands import run_record
    from aclmon.bus.registry import agent_pids
    from aclmon.host import open_backend
    from aclmon.host.feed import HostFeed

    feed = HostFeed(lambda: open_backend("auto", details="rotate"), agent_pids=agent_pids)
    feed.start()
    try:
        return int(run_record(args, also=feed.reader().take))
    finally:
        feed.close()


def record_nats(args: argparse.Namespace) -> int:
    """One source's ``events`` subject into today's recording format."""
    import signal
    import time

    from aclmon.bus.recording import RecordingWriter
    from aclmon.bus.states import AUTH_FAILED, DISCONNECTED
    from aclmon.errors import AclmonError
    from aclmon.fleet.connect import parse_target
    from aclmon.fleet.nats_source import NatsFeed

    url, scope = parse_target(args.target)
    if scope.pid == "*":
        raise AclmonError(
            f"{args.target}: a recording holds one source; name it as nats://SERVER/JOB/HOST/PID"
        )
    from aclmon.bus.secrets import NATS_TOKEN_ENV, TOKEN, read_secret

    token = read_secret(args, TOKEN, env=NATS_TOKEN_ENV)
    since = parse_duration(args.since) if args.since else None
    feed = NatsFeed(url, scope, credentials_from(args, token), since_s=since, readonly=True)
    stopping = []
    previous = {
        sig: signal.signal(sig, lambda *_: stopping.append(1))
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    written = 0
    try:
        try:
            writer = RecordingWriter(
                args.file,
                {"tool": "aclmon record", "target": args.target, "started_ns": time.time_ns()},
            )
        except OSError as exc:
            raise AclmonError(f"cannot write {args.file}: {exc.strerror}") from None
        feed.start()
        try:
            while not stopping:
                if feed.state in (AUTH_FAILED, DISCONNECTED) and feed.state_reason:
                    raise AclmonError(f"{args.target}: {feed.state_reason}")
                for _key, events in feed.poll(50_000):
                    if args.count:
                        events = events[: args.count - written]
                    if events:
                        writer.write_many(events)
                        written += len(events)
                writer.flush()
                if args.count and written >= args.count:
                    break
                time.sleep(0.05)
        finally:
            writer.close()
    finally:
        feed.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"recorded {written} events to {args.file}")
    return 0
