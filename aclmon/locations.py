"""Where aclmon keeps things on disk: the one module that knows the paths.

- :func:`runtime_dir`: the per-user directory for sockets, the agent registry
  and the demo's files (``$XDG_RUNTIME_DIR/aclmon``, else ``aclmon-<uid>`` in the temporary
  directory, else a private fallback);
- :func:`config_dir` and :func:`keymap_path`: the user's settings
  (``$XDG_CONFIG_HOME/aclmon``, else ``~/.config/aclmon``);
- :func:`theme_dirs`: where theme files are looked for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import site
import socket
import stat
import sys
import tempfile
from pathlib import Path

from aclmon.errors import AclmonError

log = logging.getLogger("aclmon.bus")


class RuntimeDirError(AclmonError):
    """The per-user runtime directory is missing, foreign or too open."""


def _is_private_dir_of_ours(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def _private_dir(path: Path) -> Path:
    """``path`` as a directory of ours, mode 0700, made if missing; else RuntimeDirError."""
    uid = os.getuid()
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise RuntimeDirError(f"cannot create runtime directory {path}: {exc}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise RuntimeDirError(f"runtime directory {path} is not a directory (or is a symlink)")
    if info.st_uid != uid:
        raise RuntimeDirError(
            f"runtime directory {path} belongs to uid {info.st_uid}, not to us ({uid})"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def _home_runtime_dir() -> Path:
    """The fallback nobody else can plant: under our home, per host (a home shared
    over NFS holds the registries of several hosts)."""
    cache = Path(os.path.expanduser("~")) / ".cache" / "aclmon"
    try:
        os.makedirs(cache, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise RuntimeDirError(f"cannot create {cache}: {exc}") from exc
    host = socket.gethostname().split(".", 1)[0] or "localhost"
    return _private_dir(cache / f"run-{host}")


#: set once a process had to leave the usual runtime directory (said once, then reused)
_fallback: Path | None = None


def runtime_dir() -> Path:
    """The per-user directory for sockets and the agent registry (mode 0700).

    ``$XDG_RUNTIME_DIR/aclmon`` when ``XDG_RUNTIME_DIR`` is set and owned by
    us, else ``aclmon-<uid>`` in the temporary directory. An existing directory
    must be ours and not a symlink; one we own with a wider mode is tightened to
    0700. When it is not ours (another user made ``/tmp/aclmon-<uid>`` first, or
    planted a symlink there), ``~/.cache/aclmon/run-<host>`` is used instead, and
    if even that cannot be made, a fresh private temporary directory: a job is
    never kept from starting by someone else's file. The fallback is said once
    per process on stderr (viewers of the same user take the same fallback and
    find the agents there).
    """
    global _fallback
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and _is_private_dir_of_ours(Path(xdg)):
        usual = Path(xdg) / "aclmon"
    else:
        usual = Path(tempfile.gettempdir()) / f"aclmon-{os.getuid()}"
    try:
        return _private_dir(usual)
    except RuntimeDirError as exc:
        refused = exc
    if _fallback is not None and _is_private_dir_of_ours(_fallback):
        return _fallback
    try:
        path = _home_runtime_dir()
    except RuntimeDirError as exc:
        log.warning("aclmon: %s", exc)
        path = Path(tempfile.mkdtemp(prefix=f"aclmon-{os.getuid()}-"))
    log.warning("aclmon: %s: using %s instead", refused, path)
    _fallback = path
    return path


def config_dir() -> Path:
    """The user's aclmon settings: ``$XDG_CONFIG_HOME/aclmon`` (``~/.config/aclmon``)."""
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "aclmon"


def keymap_path() -> Path:
    """The keymap read at start when ``--keymap`` is not given."""
    return config_dir() / "keymap.json"


def theme_dirs() -> list[Path]:
    """Directories searched for theme files, lowest priority first: the source
    checkout's ``themes/``, the installed ``share/aclmon/themes`` (system and
    ``--user``), then the user's own."""
    return [
        Path(__file__).resolve().parent.parent / "themes",
        Path(sys.prefix) / "share" / "aclmon" / "themes",
        Path(site.USER_BASE or "~/.local").expanduser() / "share" / "aclmon" / "themes",
        config_dir() / "themes",
    ]
