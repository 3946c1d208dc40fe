"""``aclmon relay``: forward this host's agents to NATS (see :mod:`aclmon.fleet.relay`)."""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

_SIZE = re.compile(r"^\s*(\d+)\s*(|k|kib|kb|m|mib|mb)\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(|s|m|h|d)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    from aclmon.errors import AclmonError

    match = _SIZE.match(text)
    if not match:
        raise AclmonError(f"not a size: {text!r} (use bytes, 64KiB or 1MiB)")
    unit = match.group(2).lower()
    scale = 1 << 20 if unit.startswith("m") else 1 << 10 if unit.startswith("k") else 1
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
    parser.add_argument(
        "--token",
        default=os.environ.get("ACLMON_NATS_TOKEN"),
        help="NATS token (default $ACLMON_NATS_TOKEN); off loopback only over TLS",
    )
    parser.add_argument(
        "--agent-token",
        default=os.environ.get("ACLMON_TOKEN"),
        help="the agents' bus token, if they require one (default $ACLMON_TOKEN)",
    )
    add_nats_credentials(parser)
    parser.add_argument(
        "--flush-ms", type=float, default=20.0, help="publish a batch at most this late (20)"
    )
    parser.add_argument(
        "--max-msg", default="64KiB", help="largest batch (64KiB; never above the server's limit)"
    )
    parser.add_argument(
        "--no-setup-streams",
        action="store_true",
        help="do not create the JetStream streams (an operator manages them)",
    )
    parser.set_defaults(handler=relay_command)


def relay_command(args: argparse.Namespace) -> int:
    import asyncio
    import signal
    import sys

    from aclmon.errors import AclmonError
    from aclmon.fleet.relay import Relay

    if args.flush_ms <= 0 or args.flush_ms > 10_000:
        raise AclmonError(f"--flush-ms must be between 0 and 10000, not {args.flush_ms}")

    def note(text: str) -> None:
        print(f"aclmon relay: {text}", file=sys.stderr, flush=True)

    relay = Relay(
        args.nats,
        credentials_from(args, args.token),
        job=args.job,
        host=args.host,
        agent_token=args.agent_token,
        flush_ms=args.flush_ms,
        max_bytes=parse_size(args.max_msg),
        setup_streams=not args.no_setup_streams,
        on_note=note,
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        note(f"relaying this host's agents to {args.nats} (Ctrl-C stops)")
        await relay.run(stop)

    asyncio.run(main())
    totals = relay.totals()
    note(f"stopped; publish errors {relay.publish_errors}, frames dropped {totals['dropped']}")
    return 0
