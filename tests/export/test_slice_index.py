"""The view's index: rows by nesting (slices in any order), packing of async
lanes, window and column queries, bounds, jumps."""

from __future__ import annotations

import itertools
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st
from timelines import MS, T0, small_job

from aclmon import events as ev
from aclmon.store import slice_index
from aclmon.store.slice_index import SliceIndex
from aclmon.store.slice_model import SliceModel
from aclmon.store.slices import OPERATOR, TX_RANGE, Lane, NestingGuard, Process, Slice


def lane(nested: bool = True) -> Lane:
    process = Process(1, "Ascend Hardware", 0, "NPU 0", 14, 1472)
    return Lane(process, 3, "Stream 3", 3, nested, (0, 3), None,
                NestingGuard() if nested else None)  # fmt: skip


def item(target: Lane, start: int, end: int, name: str = "") -> Slice:
    return Slice(target, start, end, name or f"{start}-{end}", OPERATOR, {}, None)


def depths(index: SliceIndex, target: Lane) -> dict[str, int]:
    return {
        s.name: row
        for row in range(index.rows(target))
        for s in index.window(target, -(1 << 62), 1 << 62, row)
    }


def test_a_slice_that_comes_after_what_it_holds_pushes_it_down():
    index, target = SliceIndex(), lane()
    for start, end, name in [(2, 3, "inner a"), (4, 6, "inner b"), (4, 5, "innermost"),
                             (1, 8, "outer"), (0, 10, "step"), (11, 12, "next")]:  # fmt: skip
        index.slice(item(target, start, end, name))
    assert depths(index, target) == {
        "step": 0, "next": 0, "outer": 1, "inner a": 2, "inner b": 2, "innermost": 3,
    }  # fmt: skip
    assert index.rows(target) == 4
    assert [s.name for s in index.window(target, 5, 11, 0)] == ["step", "next"]
    assert index.slice_at(target, 2, 5).name == "inner b"
    assert index.slice_at(target, 2, 7) is None


def test_async_slices_pack_into_rows():
    index, target = SliceIndex(), lane(nested=False)
    for start, end in [(0, 10), (5, 15), (12, 20), (6, 7)]:
        index.slice(item(target, start, end))
    assert depths(index, target) == {"0-10": 0, "12-20": 0, "5-15": 1, "6-7": 2}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), max_size=40), st.randoms())
def test_rows_of_a_nested_lane_hold_the_nesting_whatever_the_order(spans, rng):
    """Slices the nesting guard admitted, given in any order: each row is disjoint,
    and each slice's parent (the row above) holds it."""
    guard, admitted = NestingGuard(), []
    for start, length in spans:
        if guard.admit(start, start + length):
            admitted.append((start, start + length))
    rng.shuffle(admitted)
    index, target = SliceIndex(), lane()
    for n, (start, end) in enumerate(admitted):
        index.slice(item(target, start, end, str(n)))
    seen = 0
    for row in range(index.rows(target)):
        slices = index.window(target, -1, 1 << 30, row)
        seen += len(slices)
        for a, b in itertools.pairwise(slices):
            assert a.end_ns <= b.start_ns
        for s in slices:
            if row:
                parent = index.slice_at(target, row - 1, s.start_ns)
                assert parent is not None and parent.start_ns <= s.start_ns
                assert s.end_ns <= parent.end_ns
    assert seen == len(admitted)


def test_cells_draw_each_column_from_the_slices_there():
    index, target = SliceIndex(), lane()
    for start in range(0, 100, 10):
        index.slice(item(target, start, start + 5))
    cells = index.cells(target, 0, 0, 100, 20)  # 5 ns a column
    assert [c.start_ns if c else None for c in cells] == [
        x for start in range(0, 100, 10) for x in (start, None)
    ]
    wide = index.cells(target, 0, 0, 100, 4)  # 25 ns a column: the first slice in each
    assert [c.start_ns for c in wide] == [0, 30, 50, 80]
    assert index.cells(target, 5, 0, 100, 4) == [None] * 4


def by_column(slices: list[Slice], t0: int, t1: int, width: int) -> list[Slice | None]:
    """The reference: for each column, the first slice overlapping it, the bounds
    ``t0 + c·(t1-t0)/width`` compared as exact fractions."""
    span, out = t1 - t0, []
    for column in range(width):
        out.append(next((s for s in slices if (s.end_ns - t0) * width > column * span
                         and (s.start_ns - t0) * width < (column + 1) * span), None))  # fmt: skip
    return out


@settings(max_examples=300, deadline=None)
@given(
    spans=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 3_000)), max_size=40),
    t0=st.integers(-500, 9_000),
    length=st.integers(1, 12_000),
    width=st.integers(1, 160),
    grid=st.integers(0, 50),
    epoch=st.sampled_from([0, 1_764_900_000_000_000_000]),
    in_python=st.booleans(),
)
def test_cells_are_each_columns_first_slice_with_exact_bounds(
    spans, t0, length, width, grid, epoch, in_python
):
    """Whatever the window: on times since 1970 (where a bound as a float is 256 ns
    coarse), with slices ending exactly on column bounds (``grid``), and one
    column at a time in Python integers (a window of years, ``in_python``)."""
    if grid:
        length = width * grid
        spans = [(t0 + (start % 60) * grid, (span % 8 + 1) * grid) for start, span in spans]
    index, target = SliceIndex(), lane(nested=False)  # packed rows: any overlaps
    for n, (start, span) in enumerate(spans):
        index.slice(item(target, epoch + start, epoch + start + span, str(n)))
    t0 += epoch
    limit = 0 if in_python else slice_index._SCALED_LIMIT
    with patch.object(slice_index, "_SCALED_LIMIT", limit):
        for row in range(max(1, index.rows(target))):
            slices = index.window(target, -(1 << 62), 1 << 62, row)
            expected = by_column(slices, t0, t0 + length, width)
            cells = index.cells(target, row, t0, t0 + length, width)
            assert [id(c) for c in cells] == [id(c) for c in expected]


def test_a_lane_keeps_its_newest_slices_within_its_limit():
    index, target = SliceIndex(lane_limit=1000), lane()
    for n in range(5000):
        index.slice(item(target, n * 10, n * 10 + 5))
    assert index.count(target) <= 1000 and index.dropped[target] == 5000 - index.count(target)
    assert index.window(target, 49_990, 49_995)[0].start_ns == 49_990


def test_the_model_into_the_index_and_a_jump_to_an_exception():
    index = SliceIndex()
    model = SliceModel(index)
    job = small_job()
    model.apply_many(job.events)
    model.finish()
    titles = [(lane.process.name, lane.process.label, lane.title) for lane in index.lanes()]
    assert titles[:2] == [("job.py", "CPU", "Thread 1"), ("job.py", "CPU", "Thread 2")]
    assert ("Ascend Hardware", "NPU 0", "Stream 3") in titles
    exception = next(e for e in job.events if type(e) is ev.AclException)
    found = index.find(exception)
    assert found is not None and found[0].title == "Stream 3" and found[1] == exception.ts_ns
    stream = model.stream_lane(0, 3)
    assert [s.name for s in index.window(stream, T0 + 20 * MS, T0 + 22 * MS)] == ["conv1", "relu1"]
    assert index.instants(stream, T0, T0 + 30 * MS)[0].args["Op Name"] == "relu1"
    steps = [s for s in index.window(index.lanes()[0], T0, T0 + 30 * MS) if s.kind == TX_RANGE]
    assert [s.name for s in steps] == ["step 1"]
    assert index.rows(index.lanes()[0]) == 2  # "forward" inside "step 1"
    assert index.span() == (T0 + 9 * MS, T0 + 30 * MS)
    assert {name for _, name in index.counters()} >= {"Utilization(%)", "HBM(MB)"}
