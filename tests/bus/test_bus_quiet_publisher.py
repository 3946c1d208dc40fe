"""A publisher whose records all come through emit/submit/publish (no ring
writers) sleeps until woken, and still delivers each event at once."""

from __future__ import annotations

import selectors
import time
from pathlib import Path

from bushelpers import collect

from aclmon import events as ev
from aclmon.bus import publisher as publisher_module
from aclmon.bus.publisher import Publisher
from aclmon.bus.subscriber import Subscriber


def test_each_event_of_a_quiet_publisher_arrives_without_a_following_one(tmp_path: Path) -> None:
    with (
        Publisher(str(tmp_path / "p.sock"), ring_writers=False) as publisher,
        Subscriber(publisher.address) as sub,
    ):
        assert sub.wait_connected(10)
        for i in range(5):
            publisher.emit(ev.LogLine, "info", f"line {i}")
            # this one alone, before the next is emitted
            got = collect(sub, 1)
            assert [e.text for e in got] == [f"line {i}"]
            time.sleep(0.02)


def test_a_quiet_publisher_sleeps_between_events_instead_of_polling(
    tmp_path: Path, monkeypatch
) -> None:
    """Its thread's waits are the housekeeping period, not the ring's poll."""
    timeouts: list[float | None] = []
    select = selectors.DefaultSelector.select

    def recording(self, timeout=None):  # type: ignore[no-untyped-def]
        timeouts.append(timeout)
        return select(self, timeout)

    monkeypatch.setattr(selectors.DefaultSelector, "select", recording)
    for ring_writers, expected in ((False, publisher_module.HOUSEKEEPING_S),
                                   (True, publisher_module.RING_POLL_S)):  # fmt: skip
        timeouts.clear()
        with (
            Publisher(str(tmp_path / f"{ring_writers}.sock"), ring_writers=ring_writers) as pub,
            Subscriber(pub.address) as sub,
        ):
            assert sub.wait_connected(10)
            for i in range(20):
                pub.emit(ev.LogLine, "info", f"line {i}")
                time.sleep(0.002)
            collect(sub, 20)
        waits = [t for t in timeouts if t]
        assert expected in waits
        if not ring_writers:
            assert publisher_module.RING_POLL_S not in waits
