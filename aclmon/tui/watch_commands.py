"""``aclmon watch PID``: the screens of a CANN job that runs no agent.

The job's plog, dump directories and process are read by
:class:`aclmon.sources.watch.WatchSource`; the host's view of its chips comes
from the host feed, as in ``attach``. ``--once`` prints what ``attach --once``
prints. Imported to build ``aclmon --help``: the sources and Textual load
inside the handler.
"""

from __future__ import annotations

import argparse

from aclmon.errors import AclmonError
from aclmon.tui.options import (
    add_once_options,
    add_view_options,
    check_interval,
    check_theme,
    keymap_of,
)


def configure_watch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pid", type=int, help="the process to watch (one of yours)")
    parser.add_argument(
        "--dump",
        metavar="DIR",
        help="its dump directory (default: the dump_path of the acl.json on its command"
        " line or in its working directory, and the exception dumps' extra-info/)",
    )
    parser.add_argument(
        "--profiling",
        metavar="DIR",
        help="its msprof output directory (op_summary_*.csv, msprof_*.json, msprof_tx_*.csv)",
    )
    parser.add_argument(
        "--sim",
        action="store_true",
        help="read the simulated host for the Host and Devices views (automatic for a sim job)",
    )
    add_view_options(parser)
    add_once_options(parser)
    parser.set_defaults(handler=watch_command)


def watch_command(args: argparse.Namespace) -> int:
    from aclmon.sources.watch import DevicesFromHost, WatchSource, find_target

    check_interval(args)
    check_theme(args.theme)
    keymap = keymap_of(args)
    if args.json and not args.once:
        raise AclmonError("--json goes with --once")
    target = find_target(args.pid, dump=args.dump, profiling=args.profiling)
    source = WatchSource(target)
    if args.once:
        from aclmon.sources.once import once_snapshot, print_once
        from aclmon.tui.commands import print_store_text

        return print_once(
            lambda: once_snapshot(source, args.wait), source.close, args.json, print_store_text
        )
    from aclmon.tui.host_commands import host_feed, host_opener
    from aclmon.tui.lifetime import run_app
    from aclmon.tui.top import run_job_screens

    sim = args.sim or _is_sim_job(target.pid)
    feed = host_feed(host_opener("auto", sim=sim, timeout=5.0, details="rotate"))
    return run_job_screens(
        source, feed, run=run_app, readonly=args.readonly,
        around_host=lambda inner: DevicesFromHost(inner, target.pid),
        interval=args.interval, theme=args.theme, keymap=keymap,
    )  # fmt: skip


def _is_sim_job(pid: int) -> bool:
    """The process runs on the simulator (it keeps a driver record, as the sim's jobs do)."""
    from aclmon.sim.driver import read_jobs

    return any(record.pid == pid for record in read_jobs())
