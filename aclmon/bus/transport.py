"""Where the bus listens and how a viewer connects: Unix sockets and TCP.

Both transports are plain stream sockets carrying the same frames, so the
publisher and subscriber only see :class:`Listener` (``fileno``, ``accept``,
``close``, ``address``) and :func:`connect`. A relay over another system
(NATS) is another implementation of that pair, not a change to the bus.

Unix sockets are the default. They live in the per-user runtime directory
(mode 0700) and are made 0600 right after bind; the directory's mode is what
closes the window between bind and chmod. TCP binds loopback unless told
otherwise; see docs/events.md "Connections" for who may do what.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
from dataclasses import dataclass
from typing import Protocol

from aclmon.errors import AclmonError
from aclmon.locations import runtime_dir

log = logging.getLogger("aclmon.bus")


class AddressError(AclmonError):
    """An address that cannot be parsed or used."""


# ---------------------------------------------------------------- addresses
@dataclass(frozen=True)
class Address:
    """``unix`` (``path``) or ``tcp`` (``host``, ``port``)."""

    scheme: str
    path: str = ""
    host: str = ""
    port: int = 0

    def __str__(self) -> str:
        if self.scheme == "unix":
            return f"unix:{self.path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp://{host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        """Unix sockets count as local; TCP only on a loopback address."""
        if self.scheme == "unix":
            return True
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def parse_address(text: str) -> Address:
    """``/path.sock``, ``unix:/path`` or ``tcp://host:port`` (``[v6]:port``)."""
    text = text.strip()
    if text.startswith("unix:"):
        path = text[len("unix:") :]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise AddressError(f"empty socket path in {text!r}")
        return Address("unix", path=path)
    if text.startswith("tcp://"):
        rest = text[len("tcp://") :].rstrip("/")
        if rest.startswith("["):
            host, sep, port_text = rest[1:].partition("]:")
        else:
            host, sep, port_text = rest.rpartition(":")
        if not sep or not host:
            raise AddressError(f"expected tcp://host:port, got {text!r}")
        try:
            port = int(port_text)
        except ValueError:
            raise AddressError(f"bad port {port_text!r} in {text!r}") from None
        if not 0 <= port <= 65535:
            raise AddressError(f"port {port} out of range in {text!r}")
        return Address("tcp", host=host, port=port)
    if text.startswith(("/", "./", "../")) or text.endswith(".sock"):
        return Address("unix", path=text)
    raise AddressError(f"not an address: {text!r} (use /path.sock, unix:/path or tcp://host:port)")


def as_address(address: str | os.PathLike[str] | Address) -> Address:
    """An :class:`Address` from its text, a socket path, or itself."""
    if isinstance(address, Address):
        return address
    if isinstance(address, os.PathLike):
        return Address("unix", path=os.fspath(address))
    if isinstance(address, str):
        return parse_address(address)
    raise AddressError(f"not an address: {address!r}")


def default_address(pid: int | None = None) -> Address:
    """Where the agent of process ``pid`` listens by default."""
    return Address("unix", path=str(runtime_dir() / f"agent-{pid or os.getpid()}.sock"))


# ---------------------------------------------------------------- listening
class Listener(Protocol):
    """What the publisher needs from a transport's server side."""

    @property
    def address(self) -> Address: ...

    def fileno(self) -> int: ...

    def accept(self) -> tuple[socket.socket, str] | None:
        """One pending connection (non-blocking socket, peer name) or None."""

    def close(self) -> None: ...

    def release(self) -> None:
        """Close this process's copy only (a forked child): nothing is unlinked."""


class SocketListener:
    """A listening Unix or TCP stream socket (non-blocking)."""

    def __init__(self, sock: socket.socket, address: Address) -> None:
        self._sock = sock
        self._address = address
        sock.setblocking(False)

    @property
    def address(self) -> Address:
        return self._address

    def fileno(self) -> int:
        return self._sock.fileno()

    def accept(self) -> tuple[socket.socket, str] | None:
        try:
            conn, peer = self._sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return None
        except OSError as exc:  # e.g. out of file descriptors: keep serving the others
            log.warning("accept on %s failed: %s", self._address, exc)
            return None
        conn.setblocking(False)
        _enlarge_buffer(conn, socket.SO_SNDBUF)
        if self._address.scheme == "tcp":
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            name = f"tcp:{peer[0]}:{peer[1]}"
        else:
            name = f"unix:fd{conn.fileno()}"
        return conn, name

    def release(self) -> None:
        self._sock.close()

    def close(self) -> None:
        self._sock.close()
        if self._address.scheme == "unix":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._address.path)


#: kernel socket buffer asked for on bus connections: fewer, larger writes and
#: reads at high event rates (the kernel caps it at net.core.[rw]mem_max)
SOCKET_BUFFER = 1024 * 1024


def _enlarge_buffer(sock: socket.socket, option: int) -> None:
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER)


def listen(address: Address, backlog: int = 16) -> SocketListener:
    """Bind and listen. A Unix socket file left by a dead process is replaced;
    one that still answers is an error (another agent owns it)."""
    if address.scheme == "unix":
        return _listen_unix(address, backlog)
    if address.scheme == "tcp":
        return _listen_tcp(address, backlog)
    raise AddressError(f"unknown address scheme {address.scheme!r}")


def _listen_unix(address: Address, backlog: int) -> SocketListener:
    path = address.path
    if os.path.exists(path):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(0.5)
            probe.connect(path)
        except OSError:
            os.unlink(path)  # stale: its owner is gone
        else:
            raise AddressError(f"{path} is in use by another process")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise AddressError(f"cannot listen on {path}: {exc}") from exc
    return SocketListener(sock, address)


def _listen_tcp(address: Address, backlog: int) -> SocketListener:
    try:
        infos = socket.getaddrinfo(
            address.host, address.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise AddressError(f"cannot resolve {address.host!r}: {exc}") from exc
    family, kind, proto, _name, sockaddr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise AddressError(f"cannot listen on {address}: {exc}") from exc
    host, port = sock.getsockname()[:2]
    return SocketListener(sock, Address("tcp", host=host, port=port))


# ---------------------------------------------------------------- connecting
def connect(address: Address, timeout: float = 5.0) -> socket.socket:
    """A connected blocking socket (with ``timeout``), or :class:`OSError`."""
    if address.scheme == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _enlarge_buffer(sock, socket.SO_RCVBUF)
        sock.settimeout(timeout)
        try:
            sock.connect(address.path)
        except OSError:
            sock.close()
            raise
        return sock
    if address.scheme == "tcp":
        sock = socket.create_connection((address.host, address.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _enlarge_buffer(sock, socket.SO_RCVBUF)
        return sock
    raise AddressError(f"unknown address scheme {address.scheme!r}")
