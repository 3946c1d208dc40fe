"""The options every command that opens a screen shares (``attach``, ``demo``,
``replay`` and the fleet): theme, refresh interval, keymap, read-only, and how
each is checked before the screen opens.

Imported to build ``aclmon --help``: nothing heavy (Textual) at module level.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aclmon.errors import AclmonError
from aclmon.locations import keymap_path

#: seconds between two refreshes of a screen
DEFAULT_INTERVAL = 0.25


def add_screen_options(parser: argparse.ArgumentParser) -> None:
    """Theme, refresh interval and keymap: every command that opens a screen."""
    parser.add_argument(
        "--theme",
        default=None,
        help="theme name: aclmon-dark (default), aclmon-light, or any Textual theme",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help=f"screen refresh interval (default {DEFAULT_INTERVAL} s)",
    )
    parser.add_argument(
        "--keymap",
        metavar="FILE",
        help='JSON file {"binding id": "keys"} to remap keys'
        " (default $XDG_CONFIG_HOME/aclmon/keymap.json if it exists)",
    )


def add_view_options(parser: argparse.ArgumentParser) -> None:
    """The screen options plus ``--readonly``: every command that watches an agent or the host."""
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="never send commands to an agent nor signals to a process"
        " (profiling keys, T and K are disabled)",
    )
    add_screen_options(parser)


def add_once_options(parser: argparse.ArgumentParser) -> None:
    """``--once``, ``--json`` and ``--wait``: one snapshot of a job's state instead of the screens."""
    parser.add_argument(
        "--once", action="store_true", help="print one snapshot of the state and exit"
    )
    parser.add_argument("--json", action="store_true", help="with --once: print it as JSON")
    parser.add_argument(
        "--wait",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="with --once: how long to collect events after connecting (default 1 s)",
    )


def check_interval(args: argparse.Namespace) -> None:
    if args.interval <= 0 or args.interval > 60:
        raise AclmonError(f"--interval must be between 0 and 60 seconds, not {args.interval}")


def check_theme(name: str | None) -> None:
    """An unknown --theme is a usage error before the screen opens."""
    if name is None:
        return
    from textual.theme import BUILTIN_THEMES

    from aclmon.tui.themes import load_themes

    themes, _problems = load_themes()
    known = set(BUILTIN_THEMES) | set(themes)
    if name not in known:
        raise AclmonError(f"unknown theme {name!r}; available: {', '.join(sorted(known))}")


def load_keymap(path: Path, *, required: bool = False) -> dict[str, str]:
    """``{"binding id": "key[,key…]"}`` from a JSON file (missing and optional: empty)."""
    if not path.exists() and not required:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AclmonError(f"keymap {path}: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in data.items()
    ):
        raise AclmonError(f'keymap {path}: expected {{"binding id": "keys", …}}')
    return data


def keymap_of(args: argparse.Namespace) -> dict[str, str]:
    """The ``--keymap`` file's, else the user's default keymap (if there is one)."""
    if args.keymap:
        return load_keymap(Path(args.keymap), required=True)
    return load_keymap(keymap_path())
