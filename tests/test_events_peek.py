"""The wire's peek: a payload's kind, whether its seq is 0 and its time, read
from its first bytes, agree with decoding it, and junk never raises."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_events import FUZZ, any_event

from aclmon import events as ev
from aclmon.events.wire import NOT_AN_EVENT, peek, peek_kinds, peek_timestamps


def frames_of(payloads: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One buffer holding the payloads back to back, their starts and ends."""
    data = b"".join(payloads)
    ends = np.cumsum([len(p) for p in payloads], dtype=np.int64)
    starts = ends - np.array([len(p) for p in payloads], dtype=np.int64)
    return np.frombuffer(data, dtype=np.uint8), starts, ends


@FUZZ
@given(st.lists(any_event, min_size=1, max_size=6))
def test_peeking_agrees_with_decoding(events: list) -> None:
    payloads = [ev.encode(e) for e in events]
    raw, starts, ends = frames_of(payloads)
    kinds = peek_kinds(raw, starts, ends)
    times, irregular = peek_timestamps(raw, starts, ends)
    for n, (event, payload) in enumerate(zip(events, payloads, strict=True)):
        kind = type(event).KIND
        assert peek(payload) == (kind, event.seq == 0)
        assert peek(b"junk" + payload, 4) == (kind, event.seq == 0)
        assert kinds[n] == kind
        if not irregular[n]:
            assert times[n] == event.ts_ns
        elif 2**32 <= event.ts_ns < 2**63 and event.seq >= 0:
            raise AssertionError(f"a real timestamp not found in place: {event!r}")


@FUZZ
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=8))
def test_junk_never_raises_and_reads_as_no_event_or_a_kind(payloads: list[bytes]) -> None:
    raw, starts, ends = frames_of(payloads)
    kinds = peek_kinds(raw, starts, ends)
    peek_timestamps(raw, starts, ends)
    for n, payload in enumerate(payloads):
        kind, _snapshot = peek(payload)
        assert kinds[n] == kind
        assert kind == NOT_AN_EVENT or 0 <= kind < 0x80


def test_a_hello_in_an_array16_is_peeked_as_an_event() -> None:
    hello = ev.Clock().make(ev.Hello, *ev.hello_fields("sim", "Ascend910B", 1))._replace(seq=0)
    payload = ev.encode(hello)
    assert payload[0] == 0xDC  # more than 15 items
    assert peek(payload) == (ev.Hello.KIND, True)
    times, irregular = peek_timestamps(*frames_of([payload]))
    assert not irregular[0] and times[0] == hello.ts_ns
