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
        ev.History(0, 9, 1, (5, 2, 1), (0xB0, 1, 1, AICORE), (0, 7, 1), 1, 1),
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
    assert _figures(store) == (2, 1, 1, 1, 1, 1, 1, 1, 1)
    assert store.state.exceptions[0].execution == 1
    assert store.to_json()["since_ns"] == 1


def test_a_viewer_that_saw_everything_counts_nothing_twice():
    store = Store()
    store.apply_many(_live())
    before = _figures(store)
    # The exception is not a second error, and the synchronize that reports it is not
    # a second failed run: execution 1 failed, once.
    assert before == (2, 1, 1, 1, 1, 1, 1, 1, 1)
    store.apply_many(_snapshot())  # reconnected: the agent sends its snapshot again
    assert _figures(store) == before


MESSAGE = "EZ9999: Inner Error!\nEZ9999 ... there is an aicore error exception ..."


def _failed_sync(seq: int) -> ev.CallFailed:
    return ev.CallFailed(seq, 7, "rt.synchronize_stream", AICORE, MESSAGE, 11, 0xB0)


def test_a_late_viewer_gets_the_runtimes_message_of_the_exception():
    """The failed synchronize after the exception comes with the history, so a
    viewer that connected later still says what the runtime said."""
    snapshot = _snapshot()
    snapshot.insert(-1, _failed_sync(0))
    snapshot[-1] = snapshot[-1]._replace(call_failures_total=3)
    store = Store()
    store.apply_many(snapshot)
    s = store.state
    (exception,) = s.exceptions
    assert store.runtime_message(exception) == MESSAGE
    assert s.streams[(0xC0, 0xB0)].last_error_message == MESSAGE
    assert s.call_failures_total == 3  # the agent's count since start
    data = store.to_json()
    assert data["exceptions"]["recent"][0]["runtime_message"] == MESSAGE
    assert data["call_failures"]["recent"][0]["message"] == MESSAGE
    assert data["call_failures"]["total"] == 3


def test_a_reconnect_does_not_count_a_failed_call_twice():
    store = Store()
    store.apply_many([*_live(), _failed_sync(9)])
    snapshot = _snapshot()
    snapshot.insert(-1, _failed_sync(0))
    snapshot[-1] = snapshot[-1]._replace(call_failures_total=1)
    store.apply_many(snapshot)
    assert len(store.state.call_failures) == 1 and store.state.call_failures_total == 1


def test_the_exceptions_message_is_the_failure_that_follows_it_on_its_stream():
    """An exception is reported by the next synchronize of its stream: that
    failure's message wins over a nearer one before it, or on another stream."""
    live = _live()
    exception = live[5]
    before = ev.CallFailed(
        9, exception.ts_ns - 1, "rt.synchronize_stream", AICORE, "the one before", 11, 0xB0
    )
    after = ev.CallFailed(
        10, exception.ts_ns + 5, "rt.synchronize_stream", AICORE, "the one after", 11, 0xB0
    )
    elsewhere = ev.CallFailed(11, exception.ts_ns + 1, "mdl.execute", AICORE, "other", 12, -1)
    store = Store()
    store.apply_many([*live, before, after, elsewhere])
    assert store.runtime_message(exception) == "the one after"
    # with no failure on its stream: one with its code, from its thread first
    store = Store()
    mine = elsewhere._replace(seq=12, ts_ns=exception.ts_ns + 3, thread_id=exception.thread_id)
    store.apply_many([*live, elsewhere, mine._replace(message="same thread")])
    assert store.runtime_message(exception) == "same thread"


def test_once_text_says_what_the_runtime_said(capsys):
    from aclmon.tui.commands import print_store_text

    message = (
        "EZ9999: Inner Error!\nEZ9999[PID: 7] 2026-12-02-22:14:36.921.050 (EZ9999):  The error"
        " from device(chipId:0, dieId:0), there is an aicore error exception\n  TraceBack"
    )
    store = Store()
    store.apply_many([*_live(), _failed_sync(9)._replace(message=message)])
    print_store_text(store.to_json())
    out = capsys.readouterr().out
    said = "The error from device(chipId:0, dieId:0), there is an aicore error exception"
    assert f"    runtime: {said}\n" in out
    assert "failed calls 1 since start" in out
    assert f"  acl.rt.synchronize_stream ACL_ERROR_RT_AICORE_EXCEPTION: {said}\n" in out


def test_log_lines_from_the_history_are_shown_once():
    """A late viewer gets the agent's recent log lines (the plog errors near an
    exception); a reconnect does not show them twice, the file's or the agent's."""
    plog = ev.LogLine(9, 9, "error", "aclrtSynchronizeStream failed", "RUNTIME", 42, "python",
                      5, "stream.cpp:1", "/l/plog-42_1.log")  # fmt: skip
    own = ev.LogLine(10, 10, "info", "watching dump directory /d")
    late = Store()
    late.apply_many([*_snapshot()[:-1], plog._replace(seq=0), own._replace(seq=0)])
    assert [line.text for line in late.state.logs] == [plog.text, own.text]
    seen = Store()
    seen.apply_many([*_live(), plog, own])
    seen.apply_many([*_snapshot()[:-1], plog._replace(seq=0), own._replace(seq=0)])
    assert [line.text for line in seen.state.logs] == [plog.text, own.text]
    # the same text again later is a new line
    seen.apply(own._replace(seq=11, ts_ns=11))
    assert len(seen.state.logs) == 3
