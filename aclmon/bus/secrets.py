"""Where a command's secrets come from: an environment variable or a file, never argv.

Any local user can read every process's command line (``ps``,
``/proc/PID/cmdline``), so a token given as an argument is a token given to
everyone on the host. Each secret option of a command is therefore an
environment variable (``$ACLMON_TOKEN``, ``$ACLMON_NATS_TOKEN``) or a file named
by ``--…-file`` that only its owner can read (mode 0600 or stricter, checked).
The old argument form (``--token T``) is still recognised, so that it can be
refused with a message saying how to pass the secret instead.

Files that hold secrets for other programs (an nkey seed, a ``.creds`` file, a
TLS key) are checked the same way by :func:`check_private_file`.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
from dataclasses import dataclass

from aclmon.errors import AclmonError

#: a secret file is small; anything bigger is not one
MAX_SECRET_FILE = 64 * 1024

BUS_TOKEN_ENV = "ACLMON_TOKEN"
NATS_TOKEN_ENV = "ACLMON_NATS_TOKEN"


class SecretError(AclmonError):
    """A secret passed where others can read it, or a secret file others can read."""


@dataclass(frozen=True)
class SecretOption:
    """One secret of a command: ``flag`` (refused), ``flag``-file, and ``env``."""

    flag: str  # e.g. "--token"
    env: str  # e.g. "ACLMON_TOKEN"
    what: str  # e.g. "the agent's token"

    @property
    def file_flag(self) -> str:
        return f"{self.flag}-file"

    @property
    def argv_dest(self) -> str:
        return f"{self.flag.lstrip('-').replace('-', '_')}_in_argv"

    @property
    def file_dest(self) -> str:
        return f"{self.flag.lstrip('-').replace('-', '_')}_file"


def add_secret_option(parser: argparse.ArgumentParser, option: SecretOption, help: str) -> None:
    """``--X-file FILE`` (documented) and ``--X`` (hidden: refused with the way to do it)."""
    parser.add_argument(
        option.flag, dest=option.argv_dest, metavar="SECRET", default=None, help=argparse.SUPPRESS
    )
    parser.add_argument(
        option.file_flag,
        dest=option.file_dest,
        metavar="FILE",
        default=None,
        help=f"{help}: read from FILE (yours, mode 0600); default ${option.env}"
        " (never on the command line, which every local user can read)",
    )


def read_secret(
    args: argparse.Namespace, option: SecretOption, env: str | None = None
) -> str | None:
    """The secret from ``--X-file``, else ``$env`` (default ``option.env``), else None.

    Raises :class:`SecretError` when it was given as an argument, or when the
    file is not private to us.
    """
    if getattr(args, option.argv_dest, None) is not None:
        raise SecretError(refusal(option, env))
    path = getattr(args, option.file_dest, None)
    if path:
        return read_secret_file(path, option.file_flag)
    return os.environ.get(env or option.env) or None


def refusal(option: SecretOption, env: str | None = None) -> str:
    return (
        f"{option.flag} on the command line is readable by every local user"
        f" (ps, /proc/PID/cmdline): put {option.what} in ${env or option.env}, or in a file"
        f" only you can read (chmod 600 FILE) and pass {option.file_flag} FILE"
    )


def check_private_file(path: str, flag: str) -> os.stat_result:
    """``path`` must be a regular file of ours that nobody else may read or write."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise SecretError(f"{flag} {path}: no such file") from None
        raise SecretError(f"{flag} {path}: {exc.strerror}") from None
    _check_private(info, path, flag)
    return info


def _check_private(info: os.stat_result, path: str, flag: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise SecretError(f"{flag} {path}: not a regular file")
    if info.st_uid != os.getuid():
        raise SecretError(f"{flag} {path}: belongs to uid {info.st_uid}, not to us")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise SecretError(
            f"{flag} {path}: other users may read or change it (mode {mode:04o}); chmod 600 {path}"
        )


def read_secret_file(path: str, flag: str) -> str:
    """The first line of a private file, without surrounding white space."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise SecretError(f"{flag} {path}: no such file") from None
        raise SecretError(f"{flag} {path}: {exc.strerror}") from None
    try:
        _check_private(os.fstat(fd), path, flag)
        data = os.read(fd, MAX_SECRET_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SECRET_FILE:
        raise SecretError(f"{flag} {path}: more than {MAX_SECRET_FILE} bytes: not a token file")
    lines = data.decode("utf-8", "replace").strip().splitlines()
    if not lines or not lines[0].strip():
        raise SecretError(f"{flag} {path}: the file is empty")
    return lines[0].strip()


#: the bus token of `run`, `attach`, `record` and `events` (for a nats:// target of
#: `attach` and `record`, the NATS token, whose variable is $ACLMON_NATS_TOKEN)
TOKEN = SecretOption("--token", BUS_TOKEN_ENV, "the token")
#: the relay's NATS token
NATS_TOKEN = SecretOption("--token", NATS_TOKEN_ENV, "the NATS token")
#: the relay's token for agents that require one
AGENT_TOKEN = SecretOption("--agent-token", BUS_TOKEN_ENV, "the agents' token")
