"""The ``aclmon`` command: one subcommand per job, each with its own ``--help``.

Each subcommand lives in the package that owns it and is imported only when
it runs, so ``aclmon --help`` starts fast and never imports Textual or numpy.
A command module exposes ``configure_<name>(parser)``, which adds the
arguments and sets ``handler`` (a function ``args -> exit code``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from aclmon import __version__
from aclmon.collector import tune_for_viewer
from aclmon.errors import AclmonError
from aclmon.terminal_text import EscapingStream

#: (subcommand, module that implements it, one-line help)
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("demo", "aclmon.tui.commands", "run a simulated job and watch it live"),
    ("attach", "aclmon.tui.commands", "watch a running job that has the agent"),
    ("replay", "aclmon.tui.commands", "open a recording or a dump directory"),
    ("top", "aclmon.tui.host_commands", "every NPU and process on this host (DCMI or npu-smi)"),
    ("watch", "aclmon.tui.watch_commands", "watch a CANN job that runs no agent (its logs, dumps)"),
    ("run", "aclmon.agent.commands", "run a script with the agent installed"),
    ("record", "aclmon.fleet.commands", "record a live job's events to a file"),
    ("relay", "aclmon.fleet.commands", "forward this host's agents to NATS (one per host)"),
    ("events", "aclmon.bus.commands", "print a recording's or a job's events as JSON lines"),
    ("decode", "aclmon.dump.commands", "print what dump and overflow files contain"),
    ("convert", "aclmon.dump.commands", "convert dump files to .npy/.bin like msaccucmp"),
    ("compare", "aclmon.dump.compare.command", "compare dumps with a golden run like msaccucmp"),
    (
        "triage",
        "aclmon.dump.commands",
        "why AI Core errors happened, from a collected log directory",
    ),
    ("export", "aclmon.sources.export", "the timeline as a trace for Perfetto/Insight, or CSV"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aclmon",
        description="Terminal monitor and debugger for programs on the Ascend pyACL runtime.",
    )
    parser.add_argument("--version", action="version", version=f"aclmon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name, help_text in COMMANDS:
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        module = importlib.import_module(module_name)
        getattr(module, f"configure_{name}")(command_parser)
    return parser


def _prints_text(args: argparse.Namespace) -> bool:
    """The command writes lines of its own (no screen, and not a user's script)."""
    if args.command in ("demo", "run"):
        return False
    if args.command in ("attach", "top", "watch"):
        return bool(args.once)
    if args.command == "replay":
        return bool(args.json)
    return True


#: subcommands that run the user's program in this process: its interpreter's
#: settings stay its own
JOB_COMMANDS = frozenset({"run"})


def program() -> int:
    """The ``aclmon`` command (console script and ``python -m aclmon``): :func:`main`
    in a process of its own, whose garbage collector is set for a viewer unless the
    subcommand runs the user's program here."""
    return main(own_process=True)


def main(argv: list[str] | None = None, *, own_process: bool = False) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    if own_process and args.command not in JOB_COMMANDS:
        tune_for_viewer()
    streams = sys.stdout, sys.stderr
    if _prints_text(args):
        # Names and messages may come from hostile files or peers: whatever is
        # printed, a control character in it is shown, never obeyed.
        sys.stdout = EscapingStream(sys.stdout)
        sys.stderr = EscapingStream(sys.stderr)
    try:
        return _run(args, handler)
    finally:
        sys.stdout, sys.stderr = streams


def _run(args: argparse.Namespace, handler: Any) -> int:
    try:
        return int(handler(args) or 0)
    except AclmonError as exc:
        print(f"aclmon {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`aclmon decode DIR | head -1`): stop quietly, and
        # point stdout at /dev/null so the interpreter's final flush cannot fail.
        if sys.__stdout__ is not None:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(program())
