"""The searches through pending Begins (each End looks through up to 256)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aclmon.store.pairing import has_first, positions_of

PAIRS = st.lists(st.tuples(st.integers(0, 5), st.integers()), max_size=300)


@given(PAIRS, st.integers(0, 6))
def test_positions_of_are_the_pairs_with_that_first_item_in_order(pairs, key) -> None:
    assert positions_of(pairs, key) == [i for i, (first, _) in enumerate(pairs) if first == key]


@given(PAIRS, st.integers(0, 6))
def test_has_first_says_whether_any_pair_starts_with_the_key(pairs, key) -> None:
    assert has_first(pairs, key) is any(first == key for first, _ in pairs)


def test_a_full_pending_list_of_one_stream_finds_every_one() -> None:
    pairs = [(0xB000, n) for n in range(256)]
    assert positions_of(pairs, 0xB000) == list(range(256))
    assert positions_of(pairs, 0xB001) == []
