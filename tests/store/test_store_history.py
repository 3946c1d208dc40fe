"""The agent's history in the snapshot: a late viewer takes it, one that saw
everything (a reconnect) counts nothing twice."""

from __future__ import annotations

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION as AICORE
from aclmon.store import Store


def _live() -> list:
    exc = ev.AclException(6, 6, 0, 7, 11, 1, AICORE, "mm1", "", (), (), "m", 1)
    return [
        ev.ContextCreated(1, 1, 0, 0xC0, False),
        ev.StreamCreated(2, 2, 0, 0xC0, 0xB0, 7, 0, 0),
        ev.ModelLoaded(3, 3, 5, 0, "m", 0),
        ev.ExecuteEnd(4, 4, 5, 0xB0, 10, 0),
        ev.ExecuteEnd(5, 5, 5, 0xB0, 10, 0),
        exc,
        ev.StreamSynchronized(7, 7, 0xB0, 10, AICORE, -1),
        ev.DumpFileSeen(8, 8, "/d/exception_info.mm1.11.1", "exception-dump", 1, {}),
    ]


def _snapshot() -> list:
    live = _live()
    return [
        ev.ContextCreated(0, 1, 0, 0xC0, False),
        ev.StreamCreated(0, 2, 0, 0xC0, 0xB0, 7, 0, 0),
        ev.ModelLoaded(0, 3, 5, 0, "m", 0),
        live[5]._replace(seq=0),
        live[7]._replace(seq=0),
        ev.History(0, 9, 1, (5, 2, 0), (0xB0, 1, 1, AICORE), (0, 7, 1), 1, 1),
    ]


def _figures(store: Store) -> tuple:
    s = store.state
    stream = s.streams[(0xC0, 0xB0)]
    model = s.models[5]
    return (
        model.executions, model.failures, stream.syncs, stream.errors, stream.exceptions,
        s.exceptions_total, len(s.exceptions), s.dumps_total, len(s.dumps),
    )  # fmt: skip


def test_a_late_viewer_takes_the_history():
    store = Store()
    store.apply_many(_snapshot())
    assert _figures(store) == (2, 0, 1, 1, 1, 1, 1, 1, 1)
    assert store.state.exceptions[0].execution == 1
    assert store.to_json()["since_ns"] == 1


def test_a_viewer_that_saw_everything_counts_nothing_twice():
    store = Store()
    store.apply_many(_live())
    before = _figures(store)
    assert before == (2, 0, 1, 1, 1, 1, 1, 1, 1)  # the exception is not a second error
    store.apply_many(_snapshot())  # reconnected: the agent sends its snapshot again
    assert _figures(store) == before
