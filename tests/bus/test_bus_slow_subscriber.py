"""A subscriber read slowly must never see an event twice."""

from __future__ import annotations

import time
from pathlib import Path

from bushelpers import wait_until

from aclmon import events as ev
from aclmon.bus.publisher import Publisher
from aclmon.bus.subscriber import Subscriber

TOTAL = 100_000


def test_slow_reader_gets_each_sequence_number_once_or_counts_it_dropped(tmp_path: Path) -> None:
    seqs: list[int] = []
    with (
        Publisher(str(tmp_path / "p.sock")) as publisher,
        # A small buffer makes the reader hit "buffer full" many times a second.
        Subscriber(publisher.address, buffer_events=500) as sub,
    ):
        assert sub.wait_connected(10)
        for i in range(TOTAL):
            publisher.emit(ev.LogLine, "info", f"line {i}")
            if i % 5000 == 0:
                seqs += [e.seq for e in sub.poll(200)]
                time.sleep(0.001)
        # A last event that gets through, so every earlier gap is visible (emitted like
        # the others: the publisher numbers what it is given by emit).
        assert wait_until(lambda: publisher.emit(ev.LogLine, "info", "end"))
        end = None
        deadline = time.monotonic() + 20
        while end is None and time.monotonic() < deadline:
            batch = sub.poll(300, 0.05)
            seqs += [e.seq for e in batch]
            end = next((e for e in batch if type(e) is ev.LogLine and e.text == "end"), None)
            time.sleep(0.002)
        assert end is not None
    assert len(seqs) == len(set(seqs)), "an event was delivered twice"
    assert seqs == sorted(seqs)
    assert sub.malformed == 0
    # Every number up to the last one is either received or counted as a gap.
    received = sum(1 for seq in seqs if seq <= end.seq)
    assert end.seq - received <= sub.gaps
    assert received > 0
