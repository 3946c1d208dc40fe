"""Connecting to NATS: URLs, credentials and TLS, shared by relay and viewers.

``nats-py`` is imported only inside :func:`connect` (it is an optional extra:
``pip install 'aclmon[nats]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from aclmon.bus.secrets import SecretError, check_private_file
from aclmon.errors import AclmonError
from aclmon.fleet.subjects import Scope, token


class NatsError(AclmonError):
    """NATS is missing, unreachable, or refused us."""


@dataclass(frozen=True)
class Credentials:
    """How to authenticate to the server (at most one of token, creds, nkey)."""

    token: str | None = None
    creds: str | None = None  # JWT .creds file
    nkey: str | None = None  # nkey seed file
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    def check(self) -> None:
        given = [name for name in ("token", "creds", "nkey") if getattr(self, name)]
        if len(given) > 1:
            raise NatsError(f"give one of --token, --creds, --nkey, not {' and '.join(given)}")
        for name in ("creds", "nkey", "tls_key"):
            # Files holding a secret: ours alone, as a token file must be.
            path = getattr(self, name)
            if path:
                try:
                    check_private_file(path, f"--{name.replace('_', '-')}")
                except SecretError as exc:
                    raise NatsError(str(exc)) from None
        for name in ("tls_ca", "tls_cert"):
            path = getattr(self, name)
            if path and not os.path.isfile(path):
                raise NatsError(f"--{name.replace('_', '-')} {path}: no such file")


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_target(text: str) -> tuple[str, Scope]:
    """``nats://HOST[:PORT]/JOB[/HOST[/PID]]`` (or ``tls://``) as the server
    URL and what to watch."""
    parts = urlsplit(text)
    if parts.scheme not in ("nats", "tls") or not parts.hostname:
        raise NatsError(f"not a NATS target: {text!r} (use nats://HOST:PORT/JOB[/HOST[/PID]])")
    path = [p for p in parts.path.split("/") if p]
    if not path:
        raise NatsError(f"{text!r} names no job: add /JOB (nats://HOST:PORT/JOB)")
    if len(path) > 3:
        raise NatsError(f"{text!r}: expected /JOB[/HOST[/PID]] after the server")
    if len(path) == 3 and not path[2].isdigit():
        raise NatsError(f"{text!r}: the PID must be a number, not {path[2]!r}")
    job, host, pid = ([*path, "*", "*"])[:3]
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{netloc}", Scope(token(job), token(host) if host != "*" else "*", pid)


def is_nats_target(text: str | None) -> bool:
    return bool(text) and str(text).startswith(("nats://", "tls://"))


def _tls_context(credentials: Credentials) -> Any:
    import ssl

    try:
        context = ssl.create_default_context(cafile=credentials.tls_ca)
        if credentials.tls_cert:
            context.load_cert_chain(credentials.tls_cert, credentials.tls_key)
    except (OSError, ssl.SSLError) as exc:  # not a certificate, a key that does not match
        raise NatsError(
            f"cannot use the TLS files given (--tls-ca/--tls-cert/--tls-key): {exc}"
        ) from None
    return context


async def connect(
    url: str,
    credentials: Credentials,
    *,
    name: str,
    error_cb: Any = None,
    connect_timeout: float = 5.0,
    **options: Any,
) -> Any:
    """A connected ``nats.aio.client.Client`` or :class:`NatsError` (one line).

    Off loopback, a credential and TLS (``tls://`` or ``--tls-ca``) are required:
    a token travels inside CONNECT, and events name the job's code and hosts.
    """
    try:
        import nats
    except ImportError as exc:
        raise NatsError("NATS support needs nats-py: pip install 'aclmon[nats]'") from exc
    credentials.check()
    tls = credentials.tls_ca or credentials.tls_cert or url.startswith("tls://")
    if not is_loopback_url(url):
        if not tls:
            raise NatsError(f"{url} is not on loopback: use tls:// or --tls-ca")
        if not (credentials.token or credentials.creds or credentials.nkey):
            raise NatsError(f"{url} is not on loopback: give --token, --creds or --nkey")
    kwargs: dict[str, Any] = dict(options)
    if tls:
        kwargs["tls"] = _tls_context(credentials)
    if credentials.token:
        kwargs["token"] = credentials.token
    if credentials.creds:
        kwargs["user_credentials"] = credentials.creds
    if credentials.nkey:
        kwargs["nkeys_seed"] = credentials.nkey

    import asyncio

    # With reconnects allowed, nats-py retries a first connection that fails
    # (refused, unreachable, not authorized) forever; the first error before we
    # are connected ends the attempt.
    refused = asyncio.Event()
    connected = False
    first_error: list[str] = []

    async def on_error(exc: Exception) -> None:
        if not connected and not refused.is_set():
            text = str(exc) or type(exc).__name__
            if "authorization" in text.lower():
                text = "authorization violation (wrong or missing token or credentials)"
            first_error.append(text)
            refused.set()
        if error_cb is not None:
            await error_cb(exc)

    attempt = asyncio.ensure_future(
        nats.connect(
            url,
            name=name,
            connect_timeout=connect_timeout,
            allow_reconnect=kwargs.pop("allow_reconnect", True),
            max_reconnect_attempts=kwargs.pop("max_reconnect_attempts", -1),
            error_cb=on_error,
            **kwargs,
        )
    )
    verdict = asyncio.ensure_future(refused.wait())
    try:
        await asyncio.wait(
            {attempt, verdict}, timeout=connect_timeout * 3, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        verdict.cancel()
    if not attempt.done():
        attempt.cancel()
        with contextlib.suppress(BaseException):
            await attempt
        why = first_error[0] if first_error else f"no answer within {connect_timeout * 3:g} s"
        raise NatsError(f"cannot connect to {url}: {why}")
    try:
        client = attempt.result()
    except Exception as exc:  # nats-py raises many types: all mean "not connected"
        why = str(exc) or type(exc).__name__
        if "authorization" in why.lower():
            why = "authorization violation (wrong or missing token or credentials)"
        raise NatsError(f"cannot connect to {url}: {why}") from exc
    connected = True
    return client


async def close_flushed(nc: Any) -> None:
    """Close without losing queued publishes: nats-py's flush() can return
    before publishes queued ahead of its PING were written, so wait until
    nothing is pending, flush, close, and keep the loop alive briefly."""
    if nc is None:
        return
    with contextlib.suppress(Exception):
        deadline = time.monotonic() + 10.0
        while nc.pending_data_size and time.monotonic() < deadline:
            await nc.flush(timeout=5)
        await nc.flush(timeout=5)
    with contextlib.suppress(Exception):
        await nc.close()
    await asyncio.sleep(0.5)
