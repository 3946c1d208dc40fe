"""The benchmarks' event samples cover every registered kind, every field set.

``bench/bench_event_encoding.py`` and the bus benchmarks build one event of
each kind from ``bench/bench_events.py``; a new kind or field without a sample
there would break them (or skew their figures) unnoticed, since no benchmark
runs in the suite.
"""

from __future__ import annotations

import random

import bench_events
import pytest

from aclmon import events as ev
from aclmon.events.codec import encode, unpack_payload


@pytest.mark.parametrize("cls", list(ev.KINDS.values()), ids=lambda cls: cls.__name__)
def test_every_kind_has_a_sample_that_sets_every_field_and_decodes(cls: type) -> None:
    event = bench_events.make_event(cls, 1, random.Random(3))
    assert type(event) is cls
    decoded = ev.EventDecoder().decode(unpack_payload(encode(event)))
    assert decoded == event


def test_realistic_events_lists_every_kind_once() -> None:
    kinds = [type(e) for e in bench_events.realistic_events()]
    assert kinds == list(ev.KINDS.values())


def test_a_kind_without_a_sample_is_named() -> None:
    class Unknown(tuple):
        _fields = ("seq", "ts_ns", "x")

    with pytest.raises(AssertionError, match="no sample for Unknown"):
        bench_events.make_event(Unknown, 1, random.Random(3))
