"""A job that never stops producing events (a hooked call in a loop that never
sleeps): the publisher's loop still gets to its sockets, so a new viewer is let
in and every viewer keeps receiving, whatever the rate."""

from __future__ import annotations

import threading
from pathlib import Path

from aclmon import events as ev
from aclmon.bus.publisher import Publisher
from aclmon.bus.records import PLAIN
from aclmon.bus.subscriber import Subscriber


def test_new_viewers_get_in_while_a_job_floods_the_ring(tmp_path: Path) -> None:
    publisher = Publisher(str(tmp_path / "p.sock")).start()
    stop = threading.Event()

    def hot_job() -> None:  # what a hooked call in a tight loop does: append records
        submit = publisher.submit
        record = (PLAIN, ev.TxMark.KIND, 1, ("x",))
        while not stop.is_set():
            for _ in range(1000):
                submit(record)

    job = threading.Thread(target=hot_job, daemon=True)
    first = Subscriber(publisher.address, readonly=True).start()
    viewers = [first]
    try:
        assert first.wait_connected(10)
        job.start()

        def read_first() -> None:
            while not stop.is_set():
                first.poll(100_000, 0.05)

        threading.Thread(target=read_first, daemon=True).start()
        for _ in range(2):
            late = Subscriber(publisher.address, readonly=True).start()
            viewers.append(late)
            assert late.wait_connected(10), f"a new viewer was locked out ({late.state})"
            received: list[ev.Event] = []
            for _ in range(150):  # a hang bound, not a timing
                received += late.poll(100_000, 0.2)
                if len(received) >= 1000:
                    break
            assert any(isinstance(e, ev.TxMark) for e in received)
        assert publisher.dropped > 0  # the ring was full: the job's excess was dropped
    finally:
        stop.set()
        job.join(10)
        for viewer in viewers:
            viewer.close()
        publisher.close()
