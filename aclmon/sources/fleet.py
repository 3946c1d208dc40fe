"""``aclmon attach --all``, ``attach PID PID …`` and ``attach nats://…``: the fleet.

Imports nothing heavy at module level; Textual and NATS load in the handlers.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from aclmon.errors import AclmonError


def make_feed(args: argparse.Namespace, targets: list[str]) -> Any:
    """The fleet feed the arguments name: NATS, or the agents on this host."""
    from aclmon.fleet.commands import credentials_from, parse_duration

    nats_targets = [t for t in targets if t.startswith(("nats://", "tls://"))]
    if nats_targets:
        if len(targets) != 1 or args.all:
            raise AclmonError("a nats:// target goes alone (no PIDs, no --all)")
        from aclmon.fleet.connect import parse_target
        from aclmon.fleet.nats_source import NatsFeed

        url, scope = parse_target(nats_targets[0])
        token = os.environ.get("ACLMON_NATS_TOKEN") or args.token
        since = parse_duration(args.since) if args.since else None
        return NatsFeed(
            url,
            scope,
            credentials_from(args, token),
            since_s=since,
            summary_only=args.summary_only,
            readonly=args.readonly or args.once,
        )
    if args.since or args.summary_only:
        raise AclmonError("--since and --summary-only go with a nats:// target")
    from aclmon.fleet.local import LocalFeed

    pids = None
    if targets:
        if args.all:
            raise AclmonError("give PIDs or --all, not both")
        bad = [t for t in targets if not t.isdigit()]
        if bad:
            raise AclmonError(f"several targets must all be PIDs, not {', '.join(bad)}")
        pids = [int(t) for t in targets]
    return LocalFeed(pids, token=args.token, readonly=args.readonly or args.once)


def fleet_once(feed: Any, wait: float, *, connect_timeout: float = 10.0) -> dict[str, Any]:
    """Connect, take in history (if any) and ``wait`` seconds of live events,
    return the fleet as JSON values."""
    from aclmon.store.fleet import EXITED, FleetStore

    fleet = FleetStore()
    feed.start()
    deadline = time.monotonic() + connect_timeout
    while not feed.caught_up.is_set():
        if feed.state in ("auth-failed", "disconnected", "closed") or time.monotonic() > deadline:
            break
        _drain(feed, fleet)
        time.sleep(0.02)
    if feed.state != "connected":
        reason = getattr(feed, "state_reason", "")
        raise AclmonError(
            f"could not connect to {feed.description} ({feed.state}"
            + (f": {reason})" if reason else ")")
        )
    end = time.monotonic() + wait
    while time.monotonic() < end:
        _drain(feed, fleet)
        time.sleep(0.02)
    _drain(feed, fleet)
    for key in feed.gone:
        fleet.mark(key, EXITED)
    data = fleet.to_json()
    malformed, unknown = feed.decoder_counts()
    data["target"] = feed.description
    data["malformed"] = malformed
    data["unknown"] = unknown
    return data


def _drain(feed: Any, fleet: Any) -> None:
    for key, events in feed.poll(200_000):
        fleet.apply(key, events)


def _print_text(data: dict[str, Any]) -> None:
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


def fleet_attach(args: argparse.Namespace, targets: list[str]) -> int:
    from aclmon.tui.commands import _check_theme, _keymap, print_once

    feed = make_feed(args, targets)
    if args.once:
        return print_once(lambda: fleet_once(feed, args.wait), feed.close, args.json, _print_text)
    from aclmon.tui.fleet import run_fleet_app

    _check_theme(args.theme)
    return run_fleet_app(feed, interval=args.interval, theme=args.theme, keymap=_keymap(args))


# ------------------------------------------------------------------ demo --ranks
#: ranks that get the demo's injected faults (exceptions and overflows); the others run clean
def faulty_ranks(ranks: int) -> set[int]:
    return {1 % ranks, ranks - 2} if ranks > 2 else {ranks - 1}


class RankedDemo:
    """N demo jobs, one process each, rank environment set, its own device.

    Ranks in :func:`faulty_ranks` keep the demo's injected faults; the others
    run with none, so the fleet screen has something to point at.
    """

    DEVICES_PER_HOST = 8

    def __init__(self, ranks: int, job: str = "demo") -> None:
        if not 1 <= ranks <= 64:
            raise AclmonError(f"--ranks must be between 1 and 64, not {ranks}")
        self.ranks = ranks
        self.job = job
        self.jobs: list[Any] = []

    def __enter__(self) -> RankedDemo:
        import subprocess
        import sys

        from aclmon.sources.demo import DemoError, DemoJob, _die_with_parent

        faulty = faulty_ranks(self.ranks)
        try:
            for rank in range(self.ranks):
                device = rank % self.DEVICES_PER_HOST
                job = DemoJob(extra_args=["--quiet", "--devices", "1",
                                          "--first-device", str(device)])  # fmt: skip
                job.socket_path = job.socket_path.with_name(f"{job.socket_path.stem}-r{rank}.sock")
                job.log_path = job.log_path.with_name(f"{job.log_path.stem}-r{rank}.log")
                job.dump_path = job.dump_path.with_name(f"{job.dump_path.name}-r{rank}")
                job.profiling_path = job.profiling_path.with_name(
                    f"{job.profiling_path.name}-r{rank}"
                )
                env = dict(
                    os.environ,
                    ACLMON_JOB=self.job,
                    RANK_ID=str(rank),
                    RANK_SIZE=str(self.ranks),
                    LOCAL_RANK=str(device),
                    DEVICE_ID=str(device),
                )
                if rank not in faulty:
                    env["ACLMON_SIM_FAULTS"] = "[]"
                with open(job.log_path, "wb") as log:
                    job.process = subprocess.Popen(
                        job.command(), stdin=subprocess.DEVNULL, stdout=log,
                        stderr=subprocess.STDOUT, start_new_session=True, env=env,
                        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
                    )  # fmt: skip
                self.jobs.append(job)
            deadline = time.monotonic() + 30 + self.ranks
            for job in self.jobs:
                while not job.socket_path.exists():
                    if job.process.poll() is not None:
                        raise DemoError(f"a demo rank exited at start:\n{job.log_tail()}")
                    if time.monotonic() > deadline:
                        raise DemoError(f"a demo rank did not start (log: {job.log_path})")
                    time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def pids(self) -> list[int]:
        return [job.process.pid for job in self.jobs if job.process is not None]

    def stop(self) -> None:
        for job in self.jobs:
            job.stop()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def demo_ranks_command(args: argparse.Namespace) -> int:
    """``aclmon demo --ranks N [--nats]``: N simulated ranks in the fleet screen."""
    import subprocess
    import sys

    from aclmon.tui.commands import _check_theme, _keymap
    from aclmon.tui.fleet import run_fleet_app

    _check_theme(args.theme)
    keymap = _keymap(args)
    with RankedDemo(args.ranks, job=f"demo-{os.getpid()}") as demo:
        if not args.nats:
            from aclmon.fleet.local import LocalFeed

            feed: Any = LocalFeed(demo.pids(), readonly=args.readonly)
            return run_fleet_app(feed, interval=args.interval, theme=args.theme, keymap=keymap)
        from aclmon.fleet.connect import Credentials
        from aclmon.fleet.nats_source import NatsFeed
        from aclmon.fleet.server import LocalNatsServer
        from aclmon.fleet.subjects import Scope

        with LocalNatsServer() as server:
            from aclmon.bus import runtime_dir

            log_path = runtime_dir() / f"demo-{os.getpid()}-relay.log"
            with open(log_path, "wb") as log:
                from aclmon.sources.demo import _die_with_parent

                relay = subprocess.Popen(
                    # No --job: each agent's Hello names its job, so other agents
                    # of this user on the host stay out of the demo's subjects.
                    [sys.executable, "-m", "aclmon", "relay", "--nats", server.url],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
                )  # fmt: skip
            try:
                feed = NatsFeed(server.url, Scope(demo.job), Credentials(), since_s=0.0,
                                readonly=args.readonly)  # fmt: skip
                return run_fleet_app(feed, interval=args.interval, theme=args.theme, keymap=keymap)
            finally:
                relay.terminate()
                try:
                    relay.wait(10)
                except subprocess.TimeoutExpired:
                    relay.kill()
                    relay.wait()
