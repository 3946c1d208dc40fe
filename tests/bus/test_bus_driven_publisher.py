"""A publisher started with ``thread=False`` has no thread: whoever drives it calls
``turn()``, and each turn does what the thread's loop does once, without waiting."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bushelpers import LIVENESS_TIMEOUT, collect

from aclmon import events as ev
from aclmon.bus.publisher import Publisher
from aclmon.bus.states import CONNECTED
from aclmon.bus.subscriber import CommandTimeout, Subscriber
from aclmon.errors import AclmonError, CommandRefused


def drive(publisher: Publisher, until: Callable[[], Any]) -> bool:
    """Turn the publisher every few ms until ``until()`` holds (or the liveness limit)."""
    deadline = time.monotonic() + LIVENESS_TIMEOUT
    while time.monotonic() < deadline:
        publisher.turn()
        if until():
            return True
        time.sleep(0.005)
    return bool(until())


def test_a_driven_publisher_has_no_thread_and_sends_on_its_turns(tmp_path: Path) -> None:
    state = [ev.Clock(start=5).make(ev.DeviceSet, 0, 0)]
    publisher = Publisher(str(tmp_path / "p.sock"), snapshot=lambda: state).start(thread=False)
    try:
        assert not [t for t in threading.enumerate() if t.name == "aclmon-publisher"]
        with Subscriber(publisher.address) as sub:
            # the handshake and the snapshot happen on turns alone
            time.sleep(0.2)
            assert sub.state != CONNECTED
            assert drive(publisher, lambda: sub.state == CONNECTED)
            got = []
            assert drive(publisher, lambda: got.extend(sub.poll(100, 0.01)) or got)
            assert got == [state[0]._replace(seq=0)]
            for i in range(3):
                publisher.emit(ev.LogLine, "info", f"line {i}")
            assert sub.poll(100, 0.3) == []  # queued until the next turn
            publisher.turn()
            got = collect(sub, 3)
            assert [(e.seq, e.text) for e in got] == [(1, "line 0"), (2, "line 1"), (3, "line 2")]
    finally:
        publisher.close()


def test_commands_are_answered_on_turns_and_a_close_from_one_ends_the_publisher(
    tmp_path: Path,
) -> None:
    publisher = Publisher(str(tmp_path / "p.sock")).start(thread=False)
    publisher._on_command = lambda command: publisher.close()
    replies: list[Any] = []
    with Subscriber(publisher.address) as sub:
        assert drive(publisher, lambda: sub.state == CONNECTED)
        asker = threading.Thread(
            target=lambda: replies.append(sub.send_command(ev.Ping, timeout=LIVENESS_TIMEOUT))
        )
        asker.start()
        assert drive(publisher, lambda: replies)
        asker.join()
        assert replies[0].message == "pong"

        def stop() -> None:
            with pytest.raises((CommandRefused, CommandTimeout)):
                sub.send_command(ev.StopProfiling, timeout=2)

        stopper = threading.Thread(target=stop)
        stopper.start()
        assert drive(publisher, lambda: sub.state != CONNECTED)
        stopper.join()
    publisher.turn()  # closed: nothing to do, no error
    assert not Path(publisher.address.removeprefix("unix:")).exists()


def test_close_sends_what_is_queued_and_send_snapshots_comes_after_it(tmp_path: Path) -> None:
    """60,000 events take more than one bounded pump: the snapshot still follows them."""
    sent = 60_000
    state = [ev.Clock(start=9).make(ev.DeviceSet, 0, 0)]
    publisher = Publisher(str(tmp_path / "p.sock"), snapshot=lambda: state).start(thread=False)
    with Subscriber(publisher.address) as sub:
        assert drive(publisher, lambda: sub.state == CONNECTED)
        got: list[ev.Event] = []
        assert drive(publisher, lambda: got.extend(sub.poll(100, 0.01)) or got)
        for i in range(sent):
            publisher.emit(ev.LogLine, "info", f"line {i}")
        reader = threading.Thread(target=lambda: got.extend(collect(sub, sent + 1, 60)))
        reader.start()
        assert publisher.send_snapshots(timeout=60)
        publisher.emit(ev.LogLine, "info", "last")
        publisher.close()  # no turn after it: close sends the last one itself
        reader.join()
        got += collect(sub, 1)
    assert publisher.dropped == 0
    assert [e.seq for e in got[1:]] == [*range(1, sent + 1), 0, sent + 1]
    assert got[-1].text == "last"


def test_an_internal_error_in_a_turn_is_logged_and_ends_the_publisher_not_its_driver(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    publisher = Publisher(str(tmp_path / "p.sock")).start(thread=False)

    def broken() -> None:
        raise RuntimeError("boom")

    publisher._housekeeping = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="aclmon.bus"):
        publisher.turn()
    assert "stopped by an internal error" in caplog.text
    publisher.turn()  # ended: a no-op
    assert not publisher.emit(ev.LogLine, "info", "after")  # refused, counted
    assert publisher.dropped == 1


def test_turn_is_refused_on_a_publisher_with_its_own_thread(tmp_path: Path) -> None:
    with (
        Publisher(str(tmp_path / "p.sock")) as publisher,
        pytest.raises(AclmonError, match="thread=False"),
    ):
        publisher.turn()
    driven = Publisher(str(tmp_path / "d.sock")).start(thread=False)
    with pytest.raises(AclmonError, match="already started"):
        driven.start()
    driven.close()
