"""``--once``: connect, collect for N seconds, then print one answer.

One loop for every one-shot reader (``attach --once`` of one agent, the
fleet's ``--once``): :func:`collect` starts the reader, waits until it is
ready (connected; a fleet feed: its history read: :func:`connect`), folds what
arrives for ``wait`` seconds, and folds once more at the end
(:func:`fold_for`; the fleet asks for fresh snapshots between the two and
folds on until they came). :func:`print_once` closes the reader and prints
the answer as JSON or text.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from aclmon.bus.states import CONNECTED, CONNECTING, GIVEN_UP
from aclmon.errors import AclmonError
from aclmon.sources.base import Source

#: how often the loop folds what arrived
POLL_S = 0.02
#: how long a dump directory's scan may still take after the wait (``--dump-dir``)
SCAN_TIMEOUT_S = 30.0


class Reader(Protocol):
    """What :func:`collect` needs of a source or a fleet feed."""

    @property
    def description(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def state_reason(self) -> str: ...

    def start(self) -> None: ...


def collect(
    reader: Reader,
    fold: Callable[[], object],
    wait: float,
    *,
    connect_timeout: float,
    ready: Callable[[], bool] | None = None,
) -> None:
    """Start ``reader``, wait (folding) until ``ready()`` (default: connected),
    then ``fold()`` for ``wait`` seconds and once more. Raises an
    :class:`AclmonError` naming the reader and its state when it never connects."""
    connect(reader, fold, connect_timeout=connect_timeout, ready=ready)
    fold_for(fold, wait)


def connect(
    reader: Reader,
    fold: Callable[[], object],
    *,
    connect_timeout: float,
    ready: Callable[[], bool] | None = None,
) -> None:
    """The first half of :func:`collect`: start ``reader`` and fold until ``ready()``."""
    is_ready = ready or (lambda: reader.state == CONNECTED)
    reader.start()
    deadline = time.monotonic() + connect_timeout
    connected = False
    while True:
        connected = connected or reader.state == CONNECTED
        # Ready while still "connecting" is a moment, not an answer: a fleet feed
        # that replays a short history can have read it all before its last
        # subscription is in place and it says connected.
        if is_ready() and (connected or reader.state != CONNECTING):
            break
        if reader.state in GIVEN_UP or time.monotonic() > deadline:
            break
        fold()
        time.sleep(POLL_S)
    if not connected and reader.state != CONNECTED:
        reason = reader.state_reason
        raise AclmonError(
            f"could not connect to {reader.description} ({reader.state}"
            + (f": {reason})" if reason else ")")
        )


def fold_for(
    fold: Callable[[], object],
    wait: float,
    *,
    pending: Callable[[], bool] | None = None,
    at_most: float = 0.0,
) -> None:
    """The second half of :func:`collect`: ``fold()`` for ``wait`` seconds, then on
    while ``pending()`` (answers asked for that have not come yet), at most
    ``at_most`` seconds from now, and once more."""
    now = time.monotonic()
    end, longest = now + wait, now + at_most
    while True:
        now = time.monotonic()
        if now >= end and (pending is None or not pending() or now >= longest):
            break
        fold()
        time.sleep(POLL_S)
    fold()


def once_snapshot(source: Source, wait: float, *, connect_timeout: float = 5.0) -> dict[str, Any]:
    """One agent (``attach --once``): its store after ``wait`` seconds, as JSON values."""
    from aclmon.store import Store

    store = Store()

    def fold() -> None:
        store.apply_many(source.poll(50_000))

    collect(source, fold, wait, connect_timeout=connect_timeout)
    source.finish_reading(SCAN_TIMEOUT_S)  # --dump-dir: include every file found
    store.apply_many(source.poll(1_000_000))
    store.note_decoder_counts(*source.decoder_counts())
    return store.to_json()


def print_once(
    collect_answer: Callable[[], dict[str, Any]],
    close: Callable[[], None],
    as_json: bool,
    print_text: Callable[[dict[str, Any]], None],
) -> int:
    """Take one answer, close what it came from, print it as JSON or text."""
    try:
        data = collect_answer()
    finally:
        close()
    if as_json:
        print(json.dumps(data, indent=2))
    else:
        print_text(data)
    return 0
