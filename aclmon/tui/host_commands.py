"""``aclmon top``: every NPU and every process on this host, without an agent.

Without ``--once`` it is a screen (:mod:`aclmon.tui.top`), refreshed from the
host source on its own thread. ``--once`` reads the host once (DCMI if the
driver's library is here, else npu-smi; ``--sim`` reads the simulated host) and
prints it, as text or with ``--json`` as ``{"source", "state", "devices": [...],
"processes": [...]}`` with ``null`` for every value the back end could not read.
Imported to build ``aclmon --help``: the host and sim packages load inside the
handler. :func:`host_opener` is also how ``attach`` and ``demo`` read the host.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aclmon.errors import AclmonError
from aclmon.tui.options import add_view_options, check_interval, check_theme, keymap_of

if TYPE_CHECKING:
    from aclmon.host.feed import HostFeed
    from aclmon.host.npusmi import Details
    from aclmon.host.source import Backend, Preference

#: ``--once`` waits this long at most for the whole reading (a hung driver cannot hold it).
ONCE_TIMEOUT = 30.0
#: how often ``aclmon top`` reads the host by default (seconds)
TOP_EVERY = 2.0


def configure_top(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--once", action="store_true", help="read every NPU and process once, print, exit"
    )
    parser.add_argument("--json", action="store_true", help="with --once: print it as JSON")
    parser.add_argument(
        "--backend",
        choices=("auto", "dcmi", "npu-smi"),
        default="auto",
        help="how to read the host (default: DCMI when libdcmi.so loads, else npu-smi;"
        " ACLMON_DCMI_LIBRARY and ACLMON_NPU_SMI say where they are)",
    )
    parser.add_argument(
        "--sim",
        action="store_true",
        help="read the simulated host (the sim config and the sim jobs running now)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long one npu-smi run may take before it is killed, and how long a"
        " reading may take before the screen says it stalled (default 5 s)",
    )
    parser.add_argument(
        "--every",
        type=float,
        default=TOP_EVERY,
        metavar="SECONDS",
        help=f"read the host every SECONDS (default {TOP_EVERY:g}, as nvitop; 1 for livelier"
        " sparklines at twice the cost)",
    )
    add_view_options(parser)
    parser.set_defaults(handler=top_command)


def host_opener(
    backend: Preference, *, sim: bool, timeout: float, details: Details
) -> Callable[[], Backend]:
    """How to open the host's back end (called on the host source's thread):
    ``sim`` reads the simulated host, through its DCMI or its npu-smi."""
    from aclmon.host import DcmiBackend, NpuSmiBackend, open_backend

    if sim:
        if backend == "npu-smi":
            command = [sys.executable, "-m", "aclmon.sim.npu_smi"]
            return lambda: NpuSmiBackend(command, timeout=timeout, details=details)

        def simulated() -> Backend:
            from aclmon.sim.dcmi import FakeDcmi

            return DcmiBackend(FakeDcmi(), source="sim", version="simulated DCMI")

        return simulated
    return lambda: open_backend(backend, timeout=timeout, details=details)


def host_feed(
    opener: Callable[[], Backend], *, every: float = 1.0, stall_after: float = 5.0
) -> HostFeed:
    """A host feed for a screen: the agents of this user's registry marked."""
    from aclmon.bus.registry import agent_pids
    from aclmon.host.feed import HostFeed

    return HostFeed(opener, interval=every, stall_after=stall_after, agent_pids=agent_pids)


def top_command(args: argparse.Namespace) -> int:
    if args.json and not args.once:
        raise AclmonError("--json goes with --once")
    if args.every <= 0:
        raise AclmonError(f"--every must be positive, not {args.every}")
    if not args.once:
        return top_screen(args)
    from aclmon.host import collect_once

    opener = host_opener(args.backend, sim=args.sim, timeout=args.timeout, details="all")
    snapshot = collect_once(opener, ONCE_TIMEOUT)
    if args.json:
        print(json.dumps(snapshot.to_plain(), indent=2))
    else:
        print_text(snapshot)
    return 0 if snapshot.state in ("ok", "partial") else 1


def top_screen(args: argparse.Namespace) -> int:
    """The full screen until the user quits (``q``)."""
    from aclmon.tui.lifetime import run_app
    from aclmon.tui.top import run_top

    check_interval(args)
    check_theme(args.theme)
    keymap = keymap_of(args)
    opener = host_opener(args.backend, sim=args.sim, timeout=args.timeout, details="rotate")
    feed = host_feed(opener, every=args.every, stall_after=args.timeout)
    return run_top(
        feed, readonly=args.readonly, theme=args.theme, keymap=keymap,
        interval=args.interval, run=run_app,
    )  # fmt: skip


def _shown(value: Any, unit: str = "") -> str:
    return "-" if value is None else f"{value}{unit}"


def _used(used: Any, total: Any) -> str:
    if used is None and total is None:
        return "-"
    return f"{_shown(used)} / {_shown(total)}"


def print_text(snapshot: Any) -> None:
    """The ``--once`` text: a line of state, one row per chip, one per process."""
    source = snapshot.source or "no back end"
    print(f"{len(snapshot.devices)} NPU chips via {source} ({snapshot.state})")
    if snapshot.message:
        print(f"  {snapshot.message}")
    if snapshot.devices:
        print(
            f"{'NPU':>5} {'CHIP':>4} {'NAME':<11} {'HEALTH':<8} {'POWER':>8} {'TEMP':>5} "
            f"{'AICORE':>6}  {'HBM MB':<15} {'BUS':<12}"
        )
    for device in snapshot.devices:
        hbm = _used(device.hbm_used_mb, device.hbm_total_mb)
        if device.hbm_total_mb is None:
            hbm = _used(device.memory_used_mb, device.memory_total_mb) + " (DDR)"
        print(
            f"{device.npu_id:>5} {device.chip_id:>4} {_shown(device.name):<11} "
            f"{_shown(device.health):<8} {_shown(device.power_w, ' W'):>8} "
            f"{_shown(device.temp_c, ' C'):>5} {_shown(device.aicore_pct, ' %'):>6}  "
            f"{hbm:<15} {_shown(device.bus_id):<12}"
        )
    if snapshot.processes is None:
        if snapshot.devices:
            print("processes: not reported by this back end")
        return
    if not snapshot.processes:
        print("no processes on any NPU")
        return
    print(f"{'NPU':>5} {'CHIP':>4} {'PID':>8} {'USER':<10} {'MB':>7}  COMMAND")
    for process in snapshot.processes:
        command = process.command or process.name or "-"
        print(
            f"{process.npu_id:>5} {process.chip_id:>4} {process.pid:>8} "
            f"{_shown(process.user):<10.10} {_shown(process.memory_mb):>7}  {command[:80]}"
        )
