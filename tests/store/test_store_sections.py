"""The store's version per section: a batch moves the sections its kinds can change."""

from __future__ import annotations

from test_store import MS, T0, one_model_one_stream

from aclmon import events as ev
from aclmon.store import Store
from aclmon.store.sections import (
    ALL_SECTIONS,
    COUNTERS,
    DEVICES,
    EXCEPTIONS,
    KIND_SECTIONS,
    LOGS,
    SECTIONS,
    STREAMS,
)


def moved(store: Store, before: tuple[int, ...]) -> set[str]:
    after = store.section_versions(SECTIONS)
    return {s for s, a, b in zip(SECTIONS, after, before, strict=True) if a != b}


def test_every_event_kind_says_which_sections_it_moves() -> None:
    assert set(ev.KIND_NAMES) <= set(KIND_SECTIONS)
    assert all(sections <= ALL_SECTIONS for sections in KIND_SECTIONS.values())


def test_a_batch_moves_only_the_sections_of_its_kinds() -> None:
    clock = ev.Clock()
    store = Store()
    store.apply(clock.make(ev.Hello, *ev.hello_fields("sim", "Ascend910B1", 1)))
    before = store.section_versions(SECTIONS)
    store.apply_many([clock.make(ev.LogLine, "info", f"line {n}", "app") for n in range(3)])
    assert moved(store, before) == {LOGS, COUNTERS}
    before = store.section_versions(SECTIONS)
    sample = clock.make(ev.DeviceSample, 0, 50, 10, 0, 1 << 30, 1 << 34, "OK", 40.0, 90.0)
    store.apply_many([sample])
    assert moved(store, before) == {DEVICES, COUNTERS}
    before = store.section_versions(SECTIONS)
    store.apply_many([clock.make(ev.StreamSyncBegin, 0x7000, 1)])
    assert moved(store, before) == {STREAMS, DEVICES, COUNTERS}


def test_a_new_process_a_restored_snapshot_and_skipped_input_move_what_they_change() -> None:
    clock = ev.Clock()
    store = Store()
    store.apply(clock.make(ev.Hello, *ev.hello_fields("sim", "Ascend910B1", 1)))
    snapshot = store.snapshot()
    before = store.section_versions(SECTIONS)
    store.restore(snapshot)
    assert moved(store, before) == set(SECTIONS)
    before = store.section_versions(SECTIONS)
    store.note_decoder_counts(1, 0)
    assert moved(store, before) == {COUNTERS}
    before = store.section_versions(SECTIONS)
    store.note_decoder_counts(1, 0)  # the same totals: nothing moved
    assert moved(store, before) == set()


def test_an_execute_end_moves_the_exceptions_only_when_it_names_waiting_ones() -> None:
    ms, t = MS, T0
    store = Store()
    one_model_one_stream(store)  # model 1 on stream 0xB0 of context 0xA0, device 0
    before = store.section_versions(SECTIONS)
    store.apply(ev.ExecuteEnd(6, t + 2 * ms, 1, 0, 1 * ms, 0))  # nothing waits
    assert EXCEPTIONS not in moved(store, before)
    store.apply(ev.AclException(7, t + 4 * ms, 0, 7, 11, 1, 0, "mm", "", (), ()))
    assert store.state.awaiting_execution
    before = store.section_versions(SECTIONS)
    store.apply_many([ev.ExecuteEnd(8, t + 3 * ms, 1, 0xB0, 1 * ms, 0)])  # a stream's
    assert EXCEPTIONS not in moved(store, before)
    before = store.section_versions(SECTIONS)
    store.apply_many([ev.ExecuteEnd(9, t + 6 * ms, 1, 0, 3 * ms, 0)])  # ran over it
    assert EXCEPTIONS in moved(store, before)
    assert store.state.exceptions[-1].model_name == "resnet"
    before = store.section_versions(SECTIONS)
    store.apply(ev.ExecuteEnd(10, t + 9 * ms, 1, 0, 1 * ms, 0))  # nothing waits any more
    assert EXCEPTIONS not in moved(store, before)
