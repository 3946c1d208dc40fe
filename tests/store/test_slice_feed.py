"""The live Timeline's slices folded behind the store: all of them when asked,
a share under a budget, the oldest let go past the backlog's limit."""

from __future__ import annotations

from aclmon import events as ev
from aclmon.store.slice_feed import CHUNK, SliceFeed
from aclmon.store.slice_index import IndexedTimeline


def job_events(executions: int) -> list[ev.Event]:
    clock = ev.Clock()
    events: list[ev.Event] = [
        clock.make(ev.Hello, *ev.hello_fields("sim", "Ascend910B1", 1)),
        clock.make(ev.ContextCreated, 0, 0x5000, True),
        clock.make(ev.StreamCreated, 0, 0x5000, 0x7000, 0, 0, 0),
        clock.make(ev.ModelLoaded, 1, 0, "resnet", 12),
    ]
    events += [clock.make(ev.ExecuteEnd, 1, 0x7000, 1_000, 0) for _ in range(executions)]
    return events


def test_folding_everything_draws_what_folding_at_once_draws() -> None:
    events = job_events(3 * CHUNK)
    direct = IndexedTimeline()
    direct.apply_many(events)
    feed = SliceFeed(IndexedTimeline())
    for start in range(0, len(events), 500):
        feed.offer(events[start : start + 500])
    assert feed.pending == len(events)
    assert feed.fold()
    assert feed.pending == 0
    assert feed.timeline.model.counts == direct.model.counts
    assert feed.timeline.model.counts  # the executions made slices


def test_a_budget_folds_part_of_the_backlog_and_the_rest_waits() -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0  # each look at the clock: a second went
        return now[0]

    events = job_events(4 * CHUNK)
    feed = SliceFeed(IndexedTimeline(), clock=clock)
    feed.offer(events)
    assert not feed.fold(budget_s=0.5)  # the deadline passes after the first chunk
    assert feed.pending == len(events) - CHUNK
    feed.settle(10**18)  # not caught up: nothing is settled past the waiting events
    assert feed.fold()
    assert feed.pending == 0


def test_past_the_limit_the_oldest_batches_are_skipped_and_counted() -> None:
    events = job_events(100)
    feed = SliceFeed(IndexedTimeline(), backlog_limit=60)
    feed.offer(events[:50])
    feed.offer(events[50:])  # 104 waiting: the first batch goes
    assert feed.pending == 54
    assert feed.timeline.skipped == 50
    feed.offer(events[:100])  # one batch over the limit alone stays (the newest)
    assert feed.timeline.skipped == 104
    assert feed.pending == 100
