import json

from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon import events as ev
from aclmon.acl_constants import (
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
    ACL_FLOAT16,
    ACL_FORMAT_ND,
)
from aclmon.store import Store

T0 = 1_700_000_000_000_000_000


class Seq:
    """Builds events with consecutive seqs and ts 1 ms apart."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, cls, *fields):
        self.n += 1
        return cls(self.n, T0 + self.n * 1_000_000, *fields)


def tensor(size=64):
    return ev.TensorDesc(ACL_FLOAT16, ACL_FORMAT_ND, (4, 8), 0x1000, size, "x")


def basic_events():
    e = Seq()
    return [
        e(ev.Hello, 1, "0.1.0", 42, "host", ("train.py",), "sim", "Ascend910B1", 2),
        e(ev.DeviceSet, 0, 0),
        e(ev.ContextCreated, 0, 0xA0, True),
        e(ev.StreamCreated, 0, 0xA0, 0xB0, 3, 0, 0),
        e(ev.StreamCreated, 0, 0xA0, 0xB1, 4, 0, 0),
        e(ev.DeviceSample, 0, 50, 20, 5, 10 << 30, 64 << 30, "OK", 40.0, 200.0),
        e(ev.DeviceSample, 0, 70, 25, 6, 11 << 30, 64 << 30, "OK", 41.0, 210.0),
        e(ev.HostSample, 12.5, 1 << 30, 17),
        e(ev.ModelLoaded, 1, 0, "resnet50", 120),
        e(ev.ExecuteBegin, 1, 0xB0, 0),
        e(ev.StreamSyncBegin, 0xB1, 77),
        e(ev.StreamSynchronized, 0xB1, 5_000_000, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, 5),
        e(ev.ExecuteEnd, 1, 0xB0, 3_000_000, 0),
        e(
            ev.AclException,
            0,
            3,
            11,
            77,
            ACL_ERROR_RT_AICORE_EXCEPTION,
            "conv1",
            "Conv2D",
            (tensor(),),
            (tensor(128),),
        ),
        e(ev.OpTiming, 1, "conv1", "Conv2D", 0, 10, 10),
        e(ev.OpTiming, 1, "conv1", "Conv2D", 20, 50, 30),
        e(ev.OpTiming, 1, "relu1", "Relu", 50, 52, 2),
        e(ev.ProfilingState, True, False, 2, 0, (0,), "/tmp/prof", "aclmon", False, 2, 0, (0,)),
        e(ev.DumpFileSeen, "/d/Opdebug.Node_OpDebug.1.3.1", "overflow", 400, {"ai_core": 32}),
        e(ev.Drops, 5, "publisher", "queue full"),
        e(ev.Drops, 3, "publisher", "queue full"),  # older running total: ignored
        e(ev.Reply, 7, 0, "ok", {}),
    ]


def test_fold_builds_devices_tree_models_and_counts():
    store = Store()
    store.apply_many(basic_events())
    s = store.state
    assert s.hello.soc_name == "Ascend910B1"
    dev = s.devices[0]
    assert list(dev.cube_history) == [50, 70]
    assert dev.sample.hbm_used == 11 << 30
    ctx = s.contexts[0xA0]
    assert list(ctx.streams) == [0xB0, 0xB1]
    assert s.streams[(0xA0, 0xB0)].state == "idle"  # execute ended
    # The sync failure is an error; the exception (stream_id 3 = handle 0xB0) is counted apart.
    assert s.streams[(0xA0, 0xB1)].errors == 1 and s.streams[(0xA0, 0xB1)].last_sync_ns == 5_000_000
    assert s.streams[(0xA0, 0xB0)].errors == 0 and s.streams[(0xA0, 0xB0)].exceptions == 1
    assert s.streams[(0xA0, 0xB0)].last_error == ACL_ERROR_RT_AICORE_EXCEPTION
    assert s.models[1].executions == 1 and s.models[1].running == 0
    top = store.top_ops(5)
    assert [o.op_name for o in top] == ["conv1", "relu1"]
    assert top[0].count == 2 and top[0].total_us == 40 and top[0].max_us == 30
    assert top[0].mean_us == 20
    assert s.counters.agent_dropped == 5
    assert s.last_reply.request_id == 7
    assert s.counters.events == len(basic_events())
    assert s.counters.gaps == 0


def test_stream_states_follow_execute_and_sync():
    store = Store()
    e = Seq()
    store.apply_many(
        [
            e(ev.ContextCreated, 0, 1, False),
            e(ev.StreamCreated, 0, 1, 2, 0, 0, 0),
            e(ev.ExecuteBegin, 9, 2, 0),
        ]
    )
    assert store.state.streams[(1, 2)].state == "busy"
    store.apply(e(ev.StreamSyncBegin, 2, 1))
    assert store.state.streams[(1, 2)].state == "synchronizing"
    store.apply(e(ev.StreamSynchronized, 2, 10, 0, -1))
    assert store.state.streams[(1, 2)].state == "busy"  # the execute has not ended
    store.apply(e(ev.ExecuteEnd, 9, 2, 10, 0))
    assert store.state.streams[(1, 2)].state == "idle"
    store.apply(e(ev.ContextDestroyed, 1, 0))
    assert store.state.streams[(1, 2)].state == "destroyed"
    assert store.state.contexts[1].destroyed


def test_gaps_are_counted_snapshot_events_and_restarts_are_not():
    store = Store()
    store.apply(ev.HostSample(1, T0, 1.0, 1, 1))
    store.apply(ev.HostSample(5, T0, 1.0, 1, 1))  # 2, 3, 4 lost
    store.apply(ev.HostSample(0, T0, 1.0, 1, 1))  # snapshot state: outside the sequence
    store.apply(ev.HostSample(6, T0, 1.0, 1, 1))
    store.apply(ev.HostSample(1, T0, 1.0, 1, 1))  # a new agent restarted its clock
    store.apply(ev.HostSample(2, T0, 1.0, 1, 1))
    assert store.state.counters.gaps == 3


def test_exception_ring_is_bounded_and_counts_what_it_dropped():
    store = Store(exception_limit=10)
    e = Seq()
    store.apply_many(
        [e(ev.AclException, 0, 1, i, 1, 507015, f"op{i}", "Add", (), ()) for i in range(25)]
    )
    s = store.state
    assert len(s.exceptions) == 10
    assert s.exceptions_total == 25 and s.exceptions_dropped == 15
    assert s.exceptions[0].op_name == "op15"


def test_op_aggregates_stop_at_limit_and_count_untracked():
    store = Store(op_limit=3)
    e = Seq()
    store.apply_many([e(ev.OpTiming, 1, f"op{i}", "T", 0, 1, 1) for i in range(5)])
    store.apply(e(ev.OpTiming, 1, "op0", "T", 0, 1, 4))
    assert len(store.state.ops) == 3
    assert store.state.op_timings_untracked == 2
    assert store.state.ops[(-1, 1, "op0")].count == 2


def test_dumps_and_logs_are_bounded():
    store = Store(dump_limit=2, log_limit=2)
    e = Seq()
    store.apply_many([e(ev.DumpFileSeen, f"/d/{i}", "op-dump", 1, {}) for i in range(5)])
    store.apply_many([e(ev.LogLine, "info", str(i)) for i in range(4)])
    assert [d.path for d in store.state.dumps] == ["/d/3", "/d/4"]
    assert store.state.dumps_dropped == 3 and store.state.logs_dropped == 2


def test_log_lines_and_failed_calls_are_bounded_by_their_text_too():
    """1 MB lines (a job's output, a hostile peer): the store keeps at most its
    byte cap of them, whole (the detail shows a line in full), the newest always;
    what went is counted."""
    from aclmon.store.state import CALL_FAILURE_BYTES_LIMIT, LOG_BYTES_LIMIT

    store = Store()
    e = Seq()
    megabyte = "x" * (1 << 20)
    for i in range(40):
        store.apply(e(ev.LogLine, "error", f"{i} {megabyte}"))
        store.apply(e(ev.CallFailed, "rt.malloc", 507899, f"{i} {megabyte}", 1, -1))
    s = store.state
    kept = sum(len(line.text) for line in s.logs)
    assert kept <= LOG_BYTES_LIMIT and s.logs_bytes == kept
    assert s.logs[-1].text.startswith("39 ") and len(s.logs[-1].text) > 1 << 20
    assert len(s.logs) + s.logs_dropped == 40 and s.logs_dropped >= 40 - 8
    assert sum(len(f.event.message) for f in s.call_failures) <= CALL_FAILURE_BYTES_LIMIT
    assert s.call_failures[-1].event.message.startswith("39 ")
    assert s.call_failures_total == 40
    # One line over the cap alone is still kept, whole.
    store.apply(e(ev.LogLine, "error", "y" * (LOG_BYTES_LIMIT + 10)))
    assert [len(line.text) for line in s.logs] == [LOG_BYTES_LIMIT + 10]


def test_snapshot_is_independent_and_restore_continues_identically():
    events = basic_events()
    full = Store()
    full.apply_many(events)

    store = Store()
    store.apply_many(events[:10])
    snap = store.snapshot()
    store.apply_many(events[10:])
    assert store.to_json() == full.to_json()
    # The snapshot did not move with the store.
    assert snap.counters.events == 10 and not snap.exceptions
    store.restore(snap)
    store.apply_many(events[10:])
    assert store.to_json() == full.to_json()
    # Restoring twice from one snapshot works: restore copies.
    store.restore(snap)
    store.apply_many(events[10:])
    assert store.to_json() == full.to_json()


def test_snapshot_shares_dump_events_and_stays_independent():
    # Events are immutable and their summaries are never mutated: snapshots share
    # them (no deep copy per snapshot) but keep their own rings.
    store = Store(dump_limit=2)
    e = Seq()
    store.apply(e(ev.DumpFileSeen, "/d/0", "overflow", 1, {"status": [1]}))
    store.apply(e(ev.DumpFileSeen, "/d/1", "overflow", 1, {"status": [2]}))
    snap = store.snapshot()
    assert snap.dumps[0] is store.state.dumps[0]
    assert snap.dumps[0].summary is store.state.dumps[0].summary
    # Later dumps push the old ones out of the live ring, not out of the snapshot.
    store.apply(e(ev.DumpFileSeen, "/d/2", "overflow", 1, {"status": [3]}))
    store.apply(e(ev.DumpFileSeen, "/d/3", "overflow", 1, {"status": [4]}))
    assert [d.path for d in store.state.dumps] == ["/d/2", "/d/3"]
    assert [d.path for d in snap.dumps] == ["/d/0", "/d/1"]
    assert [d.summary for d in snap.dumps] == [{"status": [1]}, {"status": [2]}]
    assert snap.dumps_total == 2 and snap.dumps_dropped == 0
    assert store.state.dumps_total == 4 and store.state.dumps_dropped == 2
    # Restoring gives the store its own ring: applying after restore leaves the snapshot alone.
    store.restore(snap)
    store.apply(e(ev.DumpFileSeen, "/d/4", "overflow", 1, {}))
    assert [d.path for d in snap.dumps] == ["/d/0", "/d/1"]
    assert [d.path for d in store.state.dumps] == ["/d/1", "/d/4"]


def test_to_json_is_json_serialisable():
    store = Store()
    store.apply_many(basic_events())
    text = json.dumps(store.to_json())
    data = json.loads(text)
    assert data["devices"][0]["contexts"][0]["streams"][1]["last_error"] == (
        "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT"
    )
    assert data["exceptions"]["total"] == 1
    assert data["counters"]["per_kind"]["op_timing"] == 3


def test_decoder_counts_are_recorded():
    store = Store()
    version = store.version
    store.note_decoder_counts(3, 1)
    assert store.state.counters.malformed == 3 and store.version > version


_HANDLES = [0, 10, 11, 12, 13, 14]  # 0: every context's default stream
_SYNC_HANDLES = [-1, *_HANDLES]  # -1: synchronize_device
_event_strategy = st.one_of(
    st.builds(
        ev.ContextCurrent, st.integers(0, 50), st.just(T0), st.integers(1, 4), st.integers(1, 3)
    ),
    st.builds(
        ev.HostSample,
        st.integers(0, 50),
        st.just(T0),
        st.floats(0, 100),
        st.integers(0, 99),
        st.integers(0, 9),
    ),
    st.builds(
        ev.ContextCreated,
        st.integers(0, 50),
        st.just(T0),
        st.integers(0, 3),
        st.integers(1, 4),
        st.booleans(),
    ),
    st.builds(
        ev.ContextDestroyed,
        st.integers(0, 50),
        st.just(T0),
        st.integers(1, 4),
        st.sampled_from([0, 107017]),
    ),
    st.builds(
        ev.StreamCreated,
        st.integers(0, 50),
        st.just(T0),
        st.integers(0, 3),
        st.integers(1, 4),
        st.sampled_from(_HANDLES),
        st.integers(0, 3),
        st.just(0),
        st.just(0),
    ),
    st.builds(
        ev.StreamDestroyed,
        st.integers(0, 50),
        st.just(T0),
        st.sampled_from(_SYNC_HANDLES),
        st.just(0),
    ),
    st.builds(
        ev.StreamSyncBegin,
        st.integers(0, 50),
        st.just(T0),
        st.sampled_from(_SYNC_HANDLES),
        st.just(1),
    ),
    st.builds(
        ev.StreamSynchronized,
        st.integers(0, 50),
        st.just(T0),
        st.sampled_from(_SYNC_HANDLES),
        st.integers(0, 9),
        st.sampled_from([0, 507046]),
        st.just(-1),
    ),
    st.builds(
        ev.ExecuteBegin,
        st.integers(0, 50),
        st.just(T0),
        st.integers(1, 2),
        st.integers(0, 14),
        st.just(0),
    ),
    st.builds(
        ev.ExecuteEnd,
        st.integers(0, 50),
        st.just(T0),
        st.integers(1, 2),
        st.integers(0, 14),
        st.integers(0, 9),
        st.sampled_from([0, 507011]),
    ),
    st.builds(
        ev.AclException,
        st.integers(0, 50),
        st.just(T0),
        st.integers(0, 3),
        st.integers(0, 3),
        st.integers(0, 9),
        st.just(1),
        st.just(507015),
        st.text(max_size=3),
        st.just("Add"),
        st.just(()),
        st.just(()),
        model_name=st.just(""),
        execution=st.just(0),
        launch_site=st.just(""),
    ),
    st.builds(
        ev.OpTiming,
        st.integers(0, 50),
        st.just(T0),
        st.just(1),
        st.sampled_from(["a", "b", "c", "d"]),
        st.just("T"),
        st.just(0),
        st.just(1),
        st.integers(0, 100),
        st.sampled_from([-1, 0, 1]),
        st.sampled_from([{}, {"aic_mac_ratio": 0.5}]),
    ),
    st.builds(
        ev.DumpFileSeen,
        st.integers(0, 50),
        st.just(T0),
        st.text(max_size=3),
        st.just("overflow"),
        st.just(1),
        st.just({}),
    ),
)


@settings(deadline=None, max_examples=60)
@given(st.lists(_event_strategy, max_size=40), st.integers(0, 40))
def test_fold_is_deterministic_and_snapshot_restore_matches(events, cut):
    limits = {"exception_limit": 3, "dump_limit": 2, "op_limit": 2}
    first, second = Store(**limits), Store(**limits)
    first.apply_many(events)
    for event in events:
        second.apply(event)
    assert first.to_json() == second.to_json()

    resumed = Store(**limits)
    resumed.apply_many(events[:cut])
    snap = resumed.snapshot()
    resumed.apply_many(events[cut:])
    resumed.restore(snap)
    resumed.apply_many(events[cut:])
    assert resumed.to_json() == first.to_json()
    assert len(resumed.state.exceptions) <= 3 and len(resumed.state.ops) <= 2


def test_out_of_band_reply_with_seq_zero_does_not_disturb_gap_counting():
    store = Store()
    store.apply_many([ev.HostSample(n, T0, 1.0, 1, 1) for n in (1, 2)])
    store.apply(ev.Reply(3, T0, 9, 0, "ok", {}))  # in the stream
    store.apply(ev.HostSample(4, T0, 1.0, 1, 1))
    store.apply(ev.Reply(0, T0, 9, 0, "ok", {}))  # the same reply, from send_command
    store.apply(ev.HostSample(5, T0, 1.0, 1, 1))
    assert store.state.counters.gaps == 0
    assert store.state.last_reply.request_id == 9


def test_a_different_process_saying_hello_starts_the_state_afresh():
    store = Store()
    events = basic_events()
    store.apply_many(events)
    assert store.state.devices and store.state.exceptions
    same = events[0]._replace(seq=len(events) + 1)  # the same process again (after acl.init)
    store.apply(same)
    assert store.state.devices and store.state.exceptions
    other = events[0]._replace(seq=1, pid=4343)
    store.apply(other)
    s = store.state
    assert s.hello.pid == 4343
    assert not s.devices and not s.exceptions and not s.ops and not s.contexts
    assert s.counters.events == len(events) + 2 and s.counters.gaps == 0


def test_snapshot_resent_on_reconnect_keeps_what_was_seen():
    store = Store()
    events = basic_events()
    store.apply_many(events)
    before = store.to_json()
    # What a publisher sends a new subscriber: creation events again, seq 0.
    snapshot = [
        e._replace(seq=0)
        for e in events
        if isinstance(e, (ev.Hello, ev.DeviceSet, ev.ContextCreated, ev.StreamCreated,
                          ev.ModelLoaded, ev.ProfilingState))
    ]  # fmt: skip
    store.apply_many(snapshot)
    after = store.to_json()
    assert after["devices"] == before["devices"]  # stream syncs and errors kept
    assert after["models"] == before["models"]  # run counts kept
    # A live (seq > 0) re-creation of a handle is a new object.
    store.apply(ev.StreamCreated(100, T0, 0, 0xA0, 0xB1, 9, 0, 0))
    assert (
        store.state.streams[(0xA0, 0xB1)].syncs == 0
        and store.state.streams[(0xA0, 0xB1)].stream_id == 9
    )


def two_devices_with_default_streams():
    """Two devices, each with its default context and default stream (handle 0)."""
    e = Seq()
    events = [
        e(ev.DeviceSet, 0, 0),
        e(ev.ContextCreated, 0, 0xA0, True),
        e(ev.StreamCreated, 0, 0xA0, 0, 10, 0, 0),
        e(ev.ContextCurrent, 0xA0, 100),
        e(ev.DeviceSet, 1, 0),
        e(ev.ContextCreated, 1, 0xC0, True),
        e(ev.StreamCreated, 1, 0xC0, 0, 20, 0, 0),
        e(ev.ContextCurrent, 0xC0, 200),
    ]
    return e, events


def test_default_streams_of_different_devices_do_not_collide():
    e, events = two_devices_with_default_streams()
    store = Store()
    store.apply_many(events)
    s = store.state
    assert set(s.streams) == {(0xA0, 0), (0xC0, 0)}
    assert s.streams[(0xA0, 0)].device_id == 0 and s.streams[(0xA0, 0)].stream_id == 10
    assert s.streams[(0xC0, 0)].device_id == 1 and s.streams[(0xC0, 0)].stream_id == 20
    # No thread in StreamSynchronized: the most recently current context (0xC0) wins.
    store.apply(e(ev.StreamSynchronized, 0, 7_000, 0, -1))
    assert s.streams[(0xC0, 0)].syncs == 1 and s.streams[(0xA0, 0)].syncs == 0
    # Thread 100 makes 0xA0 current again: now its default stream is the one.
    store.apply(e(ev.ContextCurrent, 0xA0, 100))
    store.apply(e(ev.StreamSynchronized, 0, 9_000, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, 5))
    assert s.streams[(0xA0, 0)].syncs == 1 and s.streams[(0xA0, 0)].errors == 1
    assert s.streams[(0xC0, 0)].errors == 0
    # StreamSyncBegin names its thread: thread 200's current context is still 0xC0.
    store.apply(e(ev.StreamSyncBegin, 0, 200))
    assert s.streams[(0xC0, 0)].state == "synchronizing"
    assert s.streams[(0xA0, 0)].state == "idle"
    # Both show up under their own device in the JSON view.
    data = store.to_json()
    by_device = {d["device_id"]: d["contexts"][0]["streams"] for d in data["devices"]}
    assert [st["stream_id"] for st in by_device[0]] == [10]
    assert [st["stream_id"] for st in by_device[1]] == [20]


def test_stream_handle_resolves_to_most_recently_created_without_current_context():
    store = Store()
    e = Seq()
    store.apply_many(
        [
            e(ev.ContextCreated, 0, 0xA0, False),
            e(ev.StreamCreated, 0, 0xA0, 0, 10, 0, 0),
            e(ev.ContextCreated, 1, 0xC0, False),
            e(ev.StreamCreated, 1, 0xC0, 0, 20, 0, 0),
        ]
    )
    s = store.state
    store.apply(e(ev.StreamSynchronized, 0, 1_000, 0, -1))
    assert s.streams[(0xC0, 0)].syncs == 1 and s.streams[(0xA0, 0)].syncs == 0
    # A destroyed stream loses to a live one with the same handle.
    store.apply(e(ev.StreamDestroyed, 0, 0))
    assert s.streams[(0xC0, 0)].state == "destroyed"
    store.apply(e(ev.StreamSynchronized, 0, 1_000, 0, -1))
    assert s.streams[(0xA0, 0)].syncs == 1
    # ExecuteBegin names its device: only that device's streams count.
    store.apply(e(ev.ModelLoaded, 5, 1, "m", 1))
    store.apply(e(ev.StreamCreated, 1, 0xC0, 0x51, 21, 0, 0))
    store.apply(e(ev.StreamCreated, 0, 0xA0, 0x51, 11, 0, 0))  # same handle, device 0
    store.apply(e(ev.ExecuteBegin, 5, 0x51, 1))
    assert s.streams[(0xC0, 0x51)].busy_model == 5
    assert s.streams[(0xA0, 0x51)].busy_model is None


def test_device_synchronize_is_a_device_figure_and_never_a_stream():
    e, events = two_devices_with_default_streams()
    store = Store()
    store.apply_many(events)
    s = store.state
    streams_before = set(s.streams)
    store.apply(e(ev.StreamSyncBegin, -1, 100))  # thread 100: device 0
    assert s.devices[0].synchronizing and not s.devices[1].synchronizing
    store.apply(e(ev.StreamSynchronized, -1, 60_000_000, 0, -1))
    assert s.devices[0].syncs == 1 and s.devices[0].last_sync_ns == 60_000_000
    assert not s.devices[0].synchronizing and s.devices[1].syncs == 0
    # Without a Begin: the device of the most recently current context (0xC0: device 1).
    store.apply(e(ev.StreamSynchronized, -1, 3_000, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, 1))
    assert s.devices[1].syncs == 1 and s.devices[1].sync_errors == 1
    assert s.devices[1].last_sync_ret == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    store.apply(e(ev.StreamDestroyed, -1, 0))
    assert set(s.streams) == streams_before
    assert all(st.syncs == 0 and st.state == "idle" for st in s.streams.values())
    data = store.to_json()
    assert [d["device_syncs"] for d in data["devices"]] == [1, 1]
    json.dumps(data)


def test_device_synchronize_with_no_known_device_is_counted_not_invented():
    store = Store()
    e = Seq()
    store.apply(e(ev.StreamSyncBegin, -1, 1))
    store.apply(e(ev.StreamSynchronized, -1, 10, 0, -1))
    assert not store.state.devices and not store.state.streams
    assert store.state.device_syncs_unattributed == 1


MS = 1_000_000


def one_model_one_stream(store):
    store.apply_many(
        [
            ev.DeviceSet(1, T0, 0, 0),
            ev.ContextCreated(2, T0, 0, 0xA0, True),
            ev.ContextCurrent(3, T0, 0xA0, 100),
            ev.StreamCreated(4, T0, 0, 0xA0, 0xB0, 3, 0, 0),
            ev.ModelLoaded(5, T0, 1, 0, "resnet", 10),
        ]
    )
    return store.state.models[1], store.state.streams[(0xA0, 0xB0)]


def test_ends_without_begins_count_runs_and_leave_nothing_running():
    store = Store()
    model, stream = one_model_one_stream(store)
    t = T0 + 1000 * MS
    # What the agent sends for fast calls: an End only.
    store.apply(ev.ExecuteEnd(10, t, 1, 0xB0, 2 * MS, 0))
    store.apply(ev.ExecuteEnd(11, t + 5 * MS, 1, 0xB0, 3 * MS, 507011))
    store.apply(ev.ExecuteEnd(12, t + 9 * MS, 1, 0, 1 * MS, 0))  # synchronous execute
    store.apply(ev.StreamSynchronized(13, t + 12 * MS, 0xB0, 2 * MS, 0, -1))
    store.apply(ev.StreamSynchronized(14, t + 15 * MS, 0xB0, 2 * MS, 507046, 5))
    assert model.executions == 3 and model.failures == 1 and model.last_duration_ns == 1 * MS
    assert model.running == 0 and not model.pending
    assert stream.syncs == 2 and stream.last_sync_ret == 507046 and stream.errors == 2
    assert stream.state == "idle" and stream.busy_model is None
    data = store.to_json()
    assert data["models"][0]["running"] == 0
    assert data["devices"][0]["contexts"][0]["streams"][0]["state"] == "idle"


def test_a_deferred_begin_marks_in_progress_until_its_end():
    store = Store()
    model, stream = one_model_one_stream(store)
    t = T0 + 1000 * MS
    # A slow execute: the Begin comes 50 ms in, stamped with the call's start t.
    store.apply(ev.ExecuteBegin(10, t, 1, 0xB0, 0))
    assert model.running == 1 and stream.state == "busy" and stream.busy_model == 1
    store.apply(ev.StreamSyncBegin(11, t + 10 * MS, 0xB0, 100))
    assert stream.state == "synchronizing"
    store.apply(ev.StreamSynchronized(12, t + 90 * MS, 0xB0, 80 * MS, 0, -1))
    assert stream.state == "busy" and stream.syncs == 1  # the execute still runs
    store.apply(ev.ExecuteEnd(13, t + 120 * MS, 1, 0xB0, 120 * MS, 0))
    assert model.running == 0 and model.executions == 1
    assert stream.state == "idle" and stream.busy_model is None


def test_an_end_takes_back_its_own_begin_not_another_threads():
    store = Store()
    model, stream = one_model_one_stream(store)
    t = T0 + 1000 * MS
    store.apply(ev.StreamSyncBegin(10, t, 0xB0, 100))
    store.apply(ev.StreamSyncBegin(11, t + 30 * MS, 0xB0, 100))
    # The second call (started at t + 30 ms) ends: the first is still waiting.
    store.apply(ev.StreamSynchronized(12, t + 100 * MS, 0xB0, 70 * MS, 0, -1))
    assert stream.pending_syncs == [t] and stream.state == "synchronizing"
    # A Begin that started after an End's call ended is another call.
    store.apply(ev.ExecuteBegin(13, t + 500 * MS, 1, 0xB0, 0))
    store.apply(ev.ExecuteEnd(14, t + 200 * MS, 1, 0xB0, 60 * MS, 0))
    assert model.running == 1 and stream.busy_model == 1
    assert model.executions == 1


def test_a_begin_announced_after_its_end_is_not_left_running():
    # The agent's control thread can publish a Begin just after the call returned.
    store = Store()
    model, stream = one_model_one_stream(store)
    t = T0 + 1000 * MS
    store.apply(ev.ExecuteEnd(10, t + 60 * MS, 1, 0xB0, 60 * MS, 0))
    store.apply(ev.ExecuteBegin(11, t + 1000, 1, 0xB0, 0))  # start t, within clock slack
    assert model.running == 0 and model.executions == 1 and stream.state == "idle"
    store.apply(ev.StreamSynchronized(12, t + 200 * MS, 0xB0, 70 * MS, 0, -1))
    store.apply(ev.StreamSyncBegin(13, t + 130 * MS, 0xB0, 100))
    assert stream.state == "idle" and not stream.pending_syncs
    store.apply(ev.StreamSynchronized(14, t + 400 * MS, -1, 55 * MS, 0, -1))
    store.apply(ev.StreamSyncBegin(15, t + 345 * MS, -1, 100))
    device = store.state.devices[0]
    assert device.syncs == 1 and not device.synchronizing


def test_pending_begins_survive_snapshot_and_restore_independently():
    store = Store()
    one_model_one_stream(store)
    t = T0 + 1000 * MS
    store.apply(ev.ExecuteBegin(10, t, 1, 0xB0, 0))
    snap = store.snapshot()
    store.apply(ev.ExecuteEnd(11, t + 80 * MS, 1, 0xB0, 80 * MS, 0))
    assert store.state.models[1].running == 0
    assert snap.models[1].running == 1 and snap.streams[(0xA0, 0xB0)].state == "busy"
    store.restore(snap)
    assert store.state.models[1].pending == [(0xB0, t)]
    assert store.state.streams[(0xA0, 0xB0)].pending_executes == [(1, t)]


_end_only_strategy = st.lists(
    st.one_of(
        st.builds(
            ev.ExecuteEnd,
            st.integers(1, 99),
            st.integers(T0, T0 + 10**9),
            st.sampled_from([1, 2]),
            st.sampled_from([0, 0xB0, 0xB1]),
            st.integers(0, 10**8),
            st.sampled_from([0, 507011]),
        ),
        st.builds(
            ev.StreamSynchronized,
            st.integers(1, 99),
            st.integers(T0, T0 + 10**9),
            st.sampled_from([-1, 0, 0xB0, 0xB1]),
            st.integers(0, 10**8),
            st.sampled_from([0, 507046]),
            st.just(-1),
        ),
        st.builds(
            ev.ContextCurrent,
            st.integers(1, 99),
            st.just(T0),
            st.sampled_from([0xA0, 0xC0]),
            st.integers(1, 3),
        ),
    ),
    max_size=30,
)


@settings(deadline=None, max_examples=60)
@given(_end_only_strategy)
def test_end_events_alone_never_leave_anything_running(events):
    store = Store()
    one_model_one_stream(store)
    store.apply_many(
        [
            ev.StreamCreated(6, T0, 0, 0xA0, 0, 1, 0, 0),
            ev.ContextCreated(7, T0, 1, 0xC0, True),
            ev.StreamCreated(8, T0, 1, 0xC0, 0, 2, 0, 0),
            ev.StreamCreated(9, T0, 1, 0xC0, 0xB1, 4, 0, 0),
            ev.ModelLoaded(10, T0, 2, 1, "bert", 10),
        ]
    )
    store.apply_many(events)
    s = store.state
    ends = [e for e in events if type(e) is ev.ExecuteEnd]
    assert sum(m.executions for m in s.models.values()) == len(ends)
    # A failed execute is a failed run; so is one whose error surfaces at the next
    # synchronize of its stream (each run counted once).
    failed_syncs = sum(1 for e in events if type(e) is ev.StreamSynchronized and e.ret)
    failed_ends = sum(1 for e in ends if e.ret)
    assert failed_ends <= sum(m.failures for m in s.models.values()) <= failed_ends + failed_syncs
    assert all(m.running == 0 for m in s.models.values())
    assert all(st.state == "idle" and st.busy_model is None for st in s.streams.values())
    assert not any(d.synchronizing for d in s.devices.values())
    syncs = [e for e in events if type(e) is ev.StreamSynchronized]
    counted = sum(st.syncs for st in s.streams.values()) + sum(d.syncs for d in s.devices.values())
    assert counted + s.device_syncs_unattributed == len(syncs)


def test_failed_calls_give_streams_and_exceptions_the_runtimes_message():
    e = Seq()
    events = basic_events()[:5]
    e.n = len(events)
    message = "EE9999: Inner Error! aicore exception, stream_id:3, task_id:11"
    exception = e(
        ev.AclException, 0, 3, 11, 77, ACL_ERROR_RT_AICORE_EXCEPTION, "conv1", "Conv2D", (), ()
    )
    events += [
        e(ev.CallFailed, "rt.set_device", 107001, "invalid device id", 9, -1),
        exception,
        e(ev.CallFailed, "rt.synchronize_stream", ACL_ERROR_RT_AICORE_EXCEPTION, message, 9, 0xB0),
        e(ev.StreamSynchronized, 0xB0, 1_000, ACL_ERROR_RT_AICORE_EXCEPTION, -1),
    ]
    store = Store()
    store.apply_many(events)
    s = store.state
    stream = next(st for st in s.streams.values() if st.stream == 0xB0)
    assert stream.last_error_message == message
    # the exception and the failed synchronize it caused: one error, one exception
    assert stream.errors == 1 and stream.exceptions == 1
    assert store.runtime_message(exception) == message
    # far from any failed call, or on another stream with another code: nothing said
    later = exception._replace(ts_ns=exception.ts_ns + 60_000_000_000)
    assert store.runtime_message(later) == ""
    other = exception._replace(stream_id=4, error_code=1)
    assert store.runtime_message(other) == ""
    data = json.loads(json.dumps(store.to_json()))
    assert data["exceptions"]["recent"][-1]["runtime_message"] == message
    assert data["call_failures"]["total"] == 2
    assert data["call_failures"]["recent"][0]["api"] == "rt.set_device"
    streams = data["devices"][0]["contexts"][0]["streams"]
    assert {st["last_error_message"] for st in streams} == {message, None}
    # a snapshot keeps them independently
    snap = store.snapshot()
    store.apply(e(ev.CallFailed, "mdl.execute", 1, "later", 9, -1))
    assert len(snap.call_failures) == 2 and len(store.state.call_failures) == 3
