"""``aclmon run``: run a script with the agent installed.

Imports nothing heavy at module level: this module is imported to build
``aclmon --help``.
"""

from __future__ import annotations

import argparse
from typing import Any


def configure_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sim",
        action="store_true",
        help="run against the simulated pyACL runtime (`import acl` resolves to aclmon.sim)",
    )
    parser.add_argument(
        "--listen",
        metavar="ADDR",
        help="where the agent listens: /path.sock, unix:/path or tcp://host:port"
        " (default: a socket in the per-user runtime directory)",
    )
    parser.add_argument("--record", metavar="FILE", help="also record every event to FILE")
    from aclmon.bus.secrets import TOKEN, add_secret_option

    add_secret_option(parser, TOKEN, "require this token from viewers that send commands")
    parser.add_argument(
        "--relay",
        metavar="URL",
        help="nats://… : start this host's `aclmon relay` to that server if none is running",
    )
    parser.add_argument(
        "--job",
        help="the job's name in Hello and fleet views (default $ACLMON_JOB, else the rank"
        " table's or the script's name)",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="device and host sampling interval (default 1 s)",
    )
    parser.add_argument(
        "--profiling-output",
        metavar="DIR",
        help="where profiling started from aclmon writes (default ./aclmon-prof-<pid>)",
    )
    parser.add_argument(
        "--history",
        type=int,
        default=256,
        metavar="N",
        help="recent exceptions and dump files kept for viewers that connect late (default 256)",
    )
    parser.add_argument(
        "--launch-stacks",
        action="store_true",
        help="keep the whole stack of each asynchronous launch, not only the calling line"
        " (an exception then shows how the failing work was launched)",
    )
    parser.add_argument(
        "--capture-output",
        action="store_true",
        help="also forward the script's stdout and stderr to viewers as log lines (it then"
        " writes to pipes, not a terminal: output is still passed through unchanged)",
    )
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    import os
    import sys

    import aclmon.agent
    from aclmon.agent.runner import ScriptError, run_script
    from aclmon.bus.secrets import TOKEN, read_secret

    token = read_secret(args, TOKEN)

    if args.interval < 0.01:
        raise ScriptError("--interval must be at least 0.01 s")
    if args.history < 0:
        raise ScriptError("--history must not be negative")
    if not os.path.isfile(args.script):
        raise ScriptError(f"no such script: {args.script}")
    # The job's own command line, for Hello and the registry (`aclmon attach` lists it).
    sys.argv = [args.script, *args.args]
    if args.job:
        os.environ["ACLMON_JOB"] = args.job  # read by the agent's Hello
    if args.relay:
        # A separate process: the job itself never loads NATS.
        from aclmon.fleet.hostrelay import ensure_relay

        pid, started = ensure_relay(args.relay, agent_token=token)
        if started:
            print(f"aclmon run: started this host's relay to {args.relay} (pid {pid})",
                  file=sys.stderr)  # fmt: skip
    _stop_agent_on_termination()
    agent = aclmon.agent.start(
        args.listen,
        sim=args.sim,
        record=args.record,
        token=token,
        sample_interval=args.interval,
        profiling_output=args.profiling_output,
        history=args.history,
        launch_stacks=args.launch_stacks,
    )
    if args.relay:
        from aclmon.fleet.hostrelay import wait_for_relay

        # The relay sees the new agent within milliseconds (it watches the registry):
        # wait for it, so that the job's first events are not sent to nobody.
        viewers_before = 1 if args.record else 0  # the recorder is a viewer too
        if not wait_for_relay(agent.publisher, viewers_before):
            print(f"aclmon run: the relay to {args.relay} has not connected to this job yet;"
                  " its first events may not reach NATS", file=sys.stderr)  # fmt: skip
    # No stop() here: like `python script.py`, the interpreter first waits for the
    # job's non-daemon threads (which may still use acl), then atexit stops the agent.
    capture = _capture_output(aclmon.agent.current()) if args.capture_output else None
    status = run_script(args.script, list(args.args))
    if capture is not None:
        capture.stop()
    running = aclmon.agent.current()
    if running is not None:
        running.set_exit_status(status)  # told to viewers in the agent's Goodbye
    return status


def _capture_output(agent: Any) -> Any:
    """Forward the job's stdout and stderr (see :mod:`aclmon.agent.output`)."""
    from aclmon.agent.output import OutputCapture

    if agent is None or agent.context is None:
        return None
    capture = OutputCapture(agent.context)
    capture.start()
    return capture


def _stop_agent_on_termination() -> None:
    """On SIGTERM or SIGHUP, stop the agent cleanly, then die by that signal as before.

    The default action skips atexit, so without this a terminated job would leave
    viewers without the last events, a recording without its tail, and its socket and
    registry entry behind. Only for signals that still have their default action; a
    script that installs its own handler replaces this one (and `nohup` keeps SIGHUP
    ignored). The cleanup runs once and to the end: a second signal while it runs (a
    second SIGTERM, or SIGHUP after SIGTERM) is ignored until it is done, then the
    process dies by the first one.
    """
    import os
    import signal

    handled = [
        signum
        for signum in (signal.SIGTERM, signal.SIGHUP)
        if signal.getsignal(signum) is signal.SIG_DFL
    ]
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        for other in handled:
            signal.signal(other, signal.SIG_IGN)
        import aclmon.agent

        try:
            agent = aclmon.agent.current()
            if agent is not None:
                agent.set_exit_status(128 + signum, f"signal {signal.Signals(signum).name}")
            aclmon.agent.stop()
        finally:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    for signum in handled:
        signal.signal(signum, on_signal)
