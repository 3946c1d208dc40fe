"""``aclmon attach``, ``aclmon demo`` and ``aclmon replay``.

Imports nothing heavy at module level (this module is imported to build
``aclmon --help``): Textual, the bus and the app load inside the handlers.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aclmon.tui.options import (
    add_once_options,
    add_screen_options,
    add_view_options,
    check_interval,
    check_theme,
    keymap_of,
)

if TYPE_CHECKING:
    from aclmon.sources.golden import GoldenCompare


def configure_attach(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        nargs="*",
        help="PID, socket path, unix:/path or tcp://host:port"
        " (default: the only running agent, or pick one); several PIDs, or"
        " nats://HOST:PORT/JOB[/HOST[/PID]], open the fleet screen",
    )
    parser.add_argument(
        "--all", action="store_true", help="every agent on this host in the fleet screen"
    )
    parser.add_argument(
        "--since",
        metavar="DURATION",
        help="nats:// only: history from JetStream first (30s, 10m, 2h, all), then live",
    )
    parser.add_argument(
        "--summary-only",
        action="store_true",
        help="nats:// only: read the low-rate summary and alert subjects (very large jobs;"
        " no execution counts)",
    )
    from aclmon.bus.secrets import TOKEN, add_secret_option

    add_secret_option(
        parser,
        TOKEN,
        "shared token for an agent that requires one (with a nats:// target, the NATS"
        " token, default $ACLMON_NATS_TOKEN)",
    )
    parser.add_argument(
        "--dump-dir",
        metavar="DIR",
        help="also list the dump and overflow files already in DIR (the agent announces new ones)",
    )
    _add_golden_option(parser, "each dump file the job writes, as it lands")
    add_view_options(parser)
    from aclmon.fleet.commands import add_nats_credentials

    add_nats_credentials(parser)
    add_once_options(parser)
    parser.set_defaults(handler=attach_command)


def configure_demo(parser: argparse.ArgumentParser) -> None:
    add_view_options(parser)
    parser.add_argument("--record", metavar="FILE", help="also record the demo's events to FILE")
    parser.add_argument(
        "--ranks",
        type=int,
        metavar="N",
        help="N simulated ranks (one process each, faults on some) in the fleet screen",
    )
    parser.add_argument(
        "--nats",
        action="store_true",
        help="with --ranks: through a local nats-server and a relay, as across hosts",
    )
    parser.set_defaults(handler=demo_command)


def configure_replay(parser: argparse.ArgumentParser) -> None:
    """``aclmon replay PATH`` (owner: replay; the handler is aclmon.tui.replay.replay_command)."""
    parser.add_argument(
        "path",
        help="a recording, a dump directory, or a directory holding both (searched recursively)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a summary (counts, exceptions, overflows, time span) instead of a screen",
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        metavar="X",
        help="playback speed, 0.25 to 64 (default 1)",
    )
    parser.add_argument(
        "--at",
        metavar="TIME",
        help="open at this time: start, end, +10s, 90 (s from start), 14:03:07 (UTC), ISO",
    )
    parser.add_argument("--play", action="store_true", help="start playing at once")
    _add_golden_option(parser, "the operator dumps under PATH")
    add_screen_options(parser)
    parser.set_defaults(handler=_replay_command)


def _replay_command(args: argparse.Namespace) -> int:
    from aclmon.tui.replay import replay_command

    if not getattr(args, "json", False):
        check_theme(args.theme)  # a usage error, as for attach and demo: one line, exit 1
    return replay_command(args)


def _add_golden_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--golden",
        metavar="DIR",
        help=f"compare {what} with this golden run's dump directory (or .npy files) and"
        " open the Compare view",
    )


# ------------------------------------------------------------------ helpers
def _run_app(
    source: Any,
    args: argparse.Namespace,
    abandon: Callable[[], None] | None = None,
    *,
    sim_host: bool = False,
    token: str | None = None,
    compare: GoldenCompare | None = None,
) -> int:
    """The job's screens, its Host view reading this machine (``sim_host``: the
    simulated one), from which other jobs' screens open (with ``token``)."""
    from aclmon.tui.host_commands import host_feed, host_opener
    from aclmon.tui.lifetime import run_app
    from aclmon.tui.top import run_job_screens

    check_theme(args.theme)
    feed = host_feed(host_opener("auto", sim=sim_host, timeout=5.0, details="rotate"))
    # asked to compare: the Compare view is what the user came for (the job's own
    # screens only: another job's, opened from the Host view, have no golden)
    home: dict[str, Any] = {"compare": compare, "start_view": "compare"} if compare else {}
    # SIGTERM/SIGHUP/SIGINT leave like a quit key, so the terminal is restored
    # and the caller's cleanup (stopping the demo job) runs; `abandon` is that
    # cleanup for when an orderly exit cannot finish (a dead terminal).
    return run_job_screens(
        source, feed, run=lambda app: run_app(app, abandon=abandon), readonly=args.readonly,
        token=token, home_options=home, interval=args.interval, theme=args.theme,
        keymap=keymap_of(args),
    )  # fmt: skip


def _pick_agent() -> str:
    """The address of the only running agent, or of the one the user picks."""
    from aclmon.bus import registry
    from aclmon.errors import AclmonError

    agents = registry.list_agents()
    if not agents:
        raise AclmonError(
            "no running agent found; start a job with `aclmon run script.py`, or try `aclmon demo`"
        )
    if len(agents) == 1:
        return agents[0].address
    from aclmon.tui.screens import PickerApp

    chosen = PickerApp(agents).run()
    if chosen is None:
        raise KeyboardInterrupt
    return str(chosen.address)


def _percent(value: Any) -> str:
    """A utilization as text: a device that cannot measure it (null in the JSON) says so."""
    return f"{value}%" if isinstance(value, int) else "n/a"


def print_store_text(data: dict[str, Any]) -> None:
    """``attach --once`` without ``--json``: the store's JSON as a few lines of text."""
    from aclmon import events as ev
    from aclmon.acl_constants import error_name
    from aclmon.dump.summary import summary_operator
    from aclmon.tui.fmt import model_execution, runtime_headline

    target = data.get("target") or {}
    print(
        f"target {target.get('host', '?')}:{target.get('pid', '?')}"
        f" runtime {target.get('runtime', '?')} soc {target.get('soc_name') or '?'}"
    )
    for device in data["devices"]:
        sample = device.get("sample")
        line = f"device {device['device_id']}:"
        if sample:
            line += (
                f" health {sample.get('health', '?')} aicore {_percent(sample.get('cube_util'))}"
                f" vector {_percent(sample.get('vector_util'))}"
                f" aicpu {_percent(sample.get('aicpu_util'))}"
                f" hbm {sample.get('hbm_used', 0) // 2**20}/{sample.get('hbm_total', 0) // 2**20} MiB"
            )
        else:
            line += " no sample yet"
        print(
            line + f" contexts {len(device['contexts'])}"
            f" streams {sum(len(c['streams']) for c in device['contexts'])}"
        )
    for model in data.get("models", []):
        print(
            f"model {model['model_id']} {model['name'] or '(unnamed)'}"
            f" executions {model['executions']} failures {model['failures']}"
            + ("" if model["loaded"] else " (unloaded)")
        )
    exceptions = data["exceptions"]
    print(
        f"exceptions {exceptions['total']} since start ({len(exceptions['recent'])} recent shown)"
    )
    for e in exceptions["recent"][-5:]:
        where = "  " + model_execution(e.get("model_name") or "", e.get("execution") or 0)
        print(f"  dev {e['device_id']} stream {e['stream_id']} task {e['task_id']}"
              f" {error_name(e['error_code'])} {e['op_type'] or 'type unknown'} {e['op_name'] or '?'}{where}")  # fmt: skip
        if e.get("runtime_message"):
            print(f"    runtime: {runtime_headline(e['runtime_message'])}")
    failures = data.get("call_failures") or {}
    if failures.get("total"):
        print(f"failed calls {failures['total']} since start")
        for f in failures.get("recent", [])[-5:]:
            said = runtime_headline(f["message"]) if f.get("message") else "(no message)"
            print(f"  acl.{f['api']} {error_name(f['ret'])}: {said}")
    dumps = data.get("dumps") or {}
    if dumps.get("total"):
        print(f"dump files {dumps['total']} since start")
        for d in dumps.get("recent", [])[-5:]:
            line = f"  {d['file_kind']} {os.path.basename(d['path'])}"
            if d["file_kind"] == ev.OVERFLOW_DUMP:  # its file name is the debug task's
                line += f" → {summary_operator(d.get('summary')) or 'operator not named'}"
            print(line)
    goodbye = data.get("goodbye")
    if goodbye:
        status = f"status {goodbye['exit_status']}" if goodbye["status_known"] else "status unknown"
        print(f"job ended: {goodbye['reason']} ({status})")
    counters = data["counters"]
    print(
        f"events {counters['events']} gaps {counters['gaps']} dropped {counters['agent_dropped']}"
    )


def print_fleet_text(data: dict[str, Any]) -> None:
    """The fleet's ``--once`` without ``--json``: one line per source."""
    print(f"{data['target']}: {len(data['sources'])} sources, executions {data['executions']},"
          f" exceptions {data['exceptions_total']}")  # fmt: skip
    for s in data["sources"]:
        rank = "-" if s["rank"] is None else s["rank"]
        print(f"  {s['host']} pid {s['pid']} rank {rank} devices {s['devices']} {s['state']}:"
              f" executions {s['executions']} failures {s['failures']}"
              f" exceptions {s['exceptions_total']}")  # fmt: skip
    first = data.get("earliest_exception")
    if first:
        print(f"earliest exception: {first['host']} pid {first['pid']} {first['error_code']}"
              f" {first['op_type']} {first['op_name']}")  # fmt: skip


# ------------------------------------------------------------------ handlers
def attach_command(args: argparse.Namespace) -> int:
    from aclmon.bus import registry
    from aclmon.errors import AclmonError
    from aclmon.sources.live import LiveSource

    check_interval(args)
    check_theme(args.theme)
    keymap_of(args)  # a bad keymap file is reported before connecting
    if args.json and not args.once:
        raise AclmonError("--json goes with --once")
    targets = list(args.target)
    from aclmon.bus.secrets import NATS_TOKEN_ENV, TOKEN, read_secret

    # An argv token is refused before anything starts.
    nats = any(t.startswith(("nats://", "tls://")) for t in targets)
    read_secret(args, TOKEN, env=NATS_TOKEN_ENV if nats else None)
    fleet = args.all or len(targets) > 1 or nats
    if args.golden and (args.once or fleet):
        raise AclmonError("--golden goes with the screen of one job (`aclmon compare` for files)")
    if args.golden:
        from aclmon.sources.golden import check_golden

        check_golden(args.golden)
    if fleet:
        return fleet_attach(args, targets)
    if args.since or args.summary_only:
        raise AclmonError("--since and --summary-only go with a nats:// target")
    args.target = targets[0] if targets else None
    if args.once and args.target is None:
        agents = registry.list_agents()
        if len(agents) > 1:
            listing = "; ".join(f"pid {a.pid} ({a.address})" for a in agents)
            raise AclmonError(f"several agents are running, name one: {listing}")
    address = registry.resolve_target(args.target) if args.target or args.once else _pick_agent()
    token = read_secret(args, TOKEN)
    source: Any = LiveSource(address, token=token, readonly=args.readonly or args.once)
    if args.dump_dir:
        from aclmon.sources.dumpdir import WithDumpDirectory

        source = WithDumpDirectory(source, args.dump_dir)
    if args.once:
        from aclmon.sources.once import once_snapshot, print_once

        return print_once(
            lambda: once_snapshot(source, args.wait), source.close, args.json, print_store_text
        )
    compare = None
    if args.golden:
        from aclmon.sources.golden import LiveCompare

        compare = LiveCompare(args.golden, resolve=source.resolve_path)
    return _run_app(source, args, token=token, compare=compare)


def demo_command(args: argparse.Namespace) -> int:
    from aclmon.sources.demo import DemoJob
    from aclmon.sources.live import LiveSource

    check_interval(args)
    check_theme(args.theme)
    keymap_of(args)  # a bad keymap file is reported before the job starts
    if args.ranks is not None or args.nats:
        from aclmon.errors import AclmonError

        if args.ranks is None:
            raise AclmonError("--nats goes with --ranks N")
        if args.record:
            raise AclmonError("--record records one job; use `aclmon record` per rank")
        return demo_ranks_command(args)
    with DemoJob(record=args.record) as job:
        source = LiveSource(str(job.socket_path), readonly=args.readonly, description="aclmon demo")
        source.recording = bool(args.record)
        # On the hard path the process exits within ABANDON_BOUND_S: kill sooner.
        return _run_app(source, args, abandon=lambda: job.stop(grace=1.0), sim_host=True)


def fleet_attach(args: argparse.Namespace, targets: list[str]) -> int:
    from aclmon.sources.fleet import fleet_once, make_feed
    from aclmon.sources.once import print_once

    feed = make_feed(args, targets)
    if args.once:
        return print_once(
            lambda: fleet_once(feed, args.wait), feed.close, args.json, print_fleet_text
        )
    from aclmon.tui.fleet import run_fleet_app

    check_theme(args.theme)
    return run_fleet_app(feed, interval=args.interval, theme=args.theme, keymap=keymap_of(args))


def demo_ranks_command(args: argparse.Namespace) -> int:
    """``aclmon demo --ranks N [--nats]``: N simulated ranks in the fleet screen."""
    import subprocess
    import sys

    from aclmon.sources.demo import RankedDemo
    from aclmon.tui.fleet import run_fleet_app

    check_theme(args.theme)
    keymap = keymap_of(args)
    with RankedDemo(args.ranks, job=f"demo-{os.getpid()}") as demo:
        if not args.nats:
            from aclmon.fleet.local import LocalFeed

            feed: Any = LocalFeed(demo.pids(), readonly=args.readonly)
            return run_fleet_app(feed, interval=args.interval, theme=args.theme, keymap=keymap,
                                 abandon=demo.stop)  # fmt: skip
        from aclmon.children import dies_with_me
        from aclmon.fleet.nats_source import NatsFeed
        from aclmon.fleet.server import LocalNatsServer
        from aclmon.fleet.subjects import Scope
        from aclmon.locations import runtime_dir

        # Its files beside the demo's own: a later demo removes them if this one was
        # killed before it could.
        with LocalNatsServer(scratch=runtime_dir()) as server:
            log_path = runtime_dir() / f"demo-{os.getpid()}-relay.log"
            with open(log_path, "wb") as log:
                relay = subprocess.Popen(
                    # No --job: each agent's Hello names its job, so other agents
                    # of this user on the host stay out of the demo's subjects.
                    [sys.executable, "-m", "aclmon", "relay", "--nats", server.url],
                    # The server's token, never on a command line.
                    env=dict(os.environ, ACLMON_NATS_TOKEN=server.token or ""),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, preexec_fn=dies_with_me(),
                )  # fmt: skip
            try:
                feed = NatsFeed(server.url, Scope(demo.job), server.credentials, since_s=0.0,
                                readonly=args.readonly)  # fmt: skip
                return run_fleet_app(feed, interval=args.interval, theme=args.theme,
                                     keymap=keymap, abandon=demo.stop)  # fmt: skip
            finally:
                relay.terminate()
                try:
                    relay.wait(10)
                except subprocess.TimeoutExpired:
                    relay.kill()
                    relay.wait()
