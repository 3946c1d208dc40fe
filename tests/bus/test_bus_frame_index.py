"""The recording's compact frame index reads back exactly what was put in.

Blocks of 4,096 frames are stored as 32-bit differences when they fit and as
int64 when they do not (huge frames, a quiet job, frames without a time); the
answers must be those of plain int64 arrays either way, for every row, range
and time seek, while the index grows.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclmon.bus.frame_index import INDEX_BLOCK, FrameColumn, FrameIndexStore, seek_time_in

T0 = 1_764_669_600_000_000_000


def _frames(seed: int, count: int, gaps: str, jumps: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(8, 400, count, dtype=np.int64)
    if gaps == "huge":  # a few frames of gigabytes: blocks that do not fit 32 bits
        sizes[rng.integers(0, count, 3)] = 3 << 30
    offsets = 64 + np.concatenate([[0], np.cumsum(sizes)[:-1]])
    steps = rng.integers(0, 200_000, count, dtype=np.int64)
    times = T0 + np.cumsum(steps)
    if jumps == "shuffled":  # threads: slightly out of order
        times += rng.integers(-500_000, 500_000, count, dtype=np.int64)
    elif jumps == "holes":  # frames without a time (0) and long quiet gaps
        times[rng.integers(0, count, 5)] = 0
        times[count // 2 :] += 10 * 10**9
    return offsets, times


def _check(store: FrameIndexStore, offsets: np.ndarray, times: np.ndarray) -> None:
    n = len(offsets)
    assert len(store) == n
    offs, ts = FrameColumn(store.state, times=False), FrameColumn(store.state, times=True)
    assert np.array_equal(offs[:], offsets) and np.array_equal(ts[:], times)
    assert np.array_equal(np.asarray(ts), times)
    rng = np.random.default_rng(n)
    for a in rng.integers(0, n, 5):
        b = int(rng.integers(a, n + 1))
        assert np.array_equal(offs[a:b], offsets[a:b])
        assert ts[int(a)] == times[a] and offs[int(a)] == offsets[a]
    assert ts[-1] == times[-1] and ts.max() == times.max() and offs.max() == offsets[-1]
    running = np.maximum.accumulate(times)
    probes = [0, T0, int(times.max()), int(times.max()) + 1, *rng.choice(times, 8).tolist()]
    for t in probes + [t + 1 for t in probes]:
        assert seek_time_in(store.state, t) == int(np.searchsorted(running, t, side="left")), t


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 3 * INDEX_BLOCK + 100),
    batches=st.lists(st.integers(1, 5000), min_size=1, max_size=8),
    gaps=st.sampled_from(["small", "huge"]),
    jumps=st.sampled_from(["ordered", "shuffled", "holes"]),
)
def test_index_reads_back_what_was_appended(seed, count, batches, gaps, jumps) -> None:
    offsets, times = _frames(seed, count, gaps, jumps)
    store = FrameIndexStore()
    done = 0
    i = 0
    while done < count:
        k = min(batches[i % len(batches)], count - done)
        before = store.state
        store.extend(offsets[done : done + k], times[done : done + k])
        # a state taken before the append still reads what it had
        if before.n:
            assert np.array_equal(FrameColumn(before, times=True)[:], times[: before.n])
        done += k
        i += 1
    _check(store, offsets, times)


def test_a_busy_job_costs_about_eight_bytes_a_frame() -> None:
    count = 100 * INDEX_BLOCK
    offsets, times = _frames(7, count, "small", "shuffled")
    store = FrameIndexStore()
    for start in range(0, count, 60_000):
        store.extend(offsets[start : start + 60_000], times[start : start + 60_000])
    assert store.nbytes < 8.2 * count
    _check(store, offsets, times)


def test_column_errors_like_an_array() -> None:
    store = FrameIndexStore()
    column = FrameColumn(store.state, times=True)
    assert len(column) == 0 and column[:].shape == (0,) and column.tolist() == []
    with pytest.raises(IndexError):
        column[0]
    with pytest.raises(ValueError):
        column.max()
