"""The store's cost per event does not grow with the streams it has seen, and
destroyed objects are kept only in a bounded, counted history."""

from __future__ import annotations

import sys
from collections.abc import Callable

from aclmon import events as ev
from aclmon.store import Store

T0 = 1_700_000_000_000_000_000
CONTEXT = 0xC0


class Seq:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, cls: type, *fields: object) -> ev.Event:
        self.n += 1
        return cls(self.n, T0 + self.n * 1_000, *fields)  # type: ignore[no-any-return]


def _start(e: Seq) -> list[ev.Event]:
    return [
        e(ev.Hello, 2, "0.1.0", 42, "host", ("job.py",), "sim", "Ascend910B1", 1),
        e(ev.DeviceSet, 0, 0),
        e(ev.ContextCreated, 0, CONTEXT, True),
        e(ev.ContextCurrent, CONTEXT, 7),
    ]


def _create_destroy(e: Seq, first: int, count: int) -> list[ev.Event]:
    out: list[ev.Event] = []
    for handle in range(first, first + count):
        out.append(e(ev.StreamCreated, 0, CONTEXT, handle, handle, 0, 0))
        out.append(e(ev.StreamSynchronized, handle, 1_000, 0, -1))
        out.append(e(ev.StreamDestroyed, handle, 0))
    return out


def test_destroyed_streams_are_a_bounded_counted_history() -> None:
    e = Seq()
    store = Store(destroyed_limit=100)
    store.apply_many(_start(e))
    store.apply_many(_create_destroy(e, 0x1000, 20_000))
    s = store.state
    assert len(s.streams) == 100
    assert s.stream_history.forgotten == 19_900
    # The newest destroyed ones stay, as destroyed, in creation order.
    assert list(s.contexts[CONTEXT].streams) == list(range(0x1000 + 19_900, 0x1000 + 20_000))
    assert all(st.state == "destroyed" and st.syncs == 1 for st in s.streams.values())
    assert store.to_json()["counters"]["streams_forgotten"] == 19_900


def test_destroyed_contexts_and_unloaded_models_are_bounded_too() -> None:
    e = Seq()
    store = Store(destroyed_limit=10)
    store.apply_many(_start(e))
    for i in range(1, 51):
        store.apply_many(
            [
                e(ev.ContextCreated, 0, i, False),
                e(ev.StreamCreated, 0, i, 0x10 + i, i, 0, 0),
                e(ev.ContextDestroyed, i, 0),
                e(ev.ModelLoaded, i, 0, f"m{i}", 3),
                e(ev.ModelUnloaded, i, 0),
            ]
        )
    s = store.state
    assert sorted(c for c in s.contexts if c != CONTEXT) == list(range(41, 51))
    assert s.context_history.forgotten == 40
    assert sorted(s.models) == list(range(41, 51)) and s.model_history.forgotten == 40
    # A forgotten context takes its streams with it.
    assert all(key[0] in s.contexts for key in s.streams)


def _opcodes(run: Callable[[], None]) -> int:
    """Python bytecodes executed by ``run`` (a count of work, not a time)."""
    count = 0

    def tracer(frame: object, event: str, arg: object) -> object:
        nonlocal count
        if event == "call":
            frame.f_trace_opcodes = True  # type: ignore[attr-defined]
            frame.f_trace_lines = False  # type: ignore[attr-defined]
        elif event == "opcode":
            count += 1
        return tracer

    sys.settrace(tracer)  # type: ignore[arg-type]
    try:
        run()
    finally:
        sys.settrace(None)
    return count


def _work_per_event(live: int) -> float:
    """Bytecodes per event for the same 300 stream events, with ``live`` other
    live streams (and as many destroyed ones) already known."""
    e = Seq()
    store = Store()
    store.apply_many(_start(e))
    store.apply_many([e(ev.StreamCreated, 0, CONTEXT, h, h, 0, 0) for h in range(1, live + 1)])
    store.apply_many(_create_destroy(e, 0x100000, live))
    batch = _create_destroy(e, 0x200000, 100)
    return _opcodes(lambda: store.apply_many(batch)) / len(batch)


def test_apply_cost_per_event_does_not_grow_with_the_streams_known() -> None:
    # Both past the destroyed-stream history's bound, so both forget one per destroy.
    small, large = _work_per_event(300), _work_per_event(3_000)
    # 10 times the streams: the same work per event (the old store walked
    # every stream on each StreamCreated: ~10 times the work).
    assert large < 1.2 * small, (small, large)
