"""The NATS feed's one-pass decoder against one StreamDecoder per source, the way
each source's messages were decoded before: the same events per source, in the
same order, and bad input counted against the source that sent it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon import events as ev
from aclmon.events.wire import StreamDecoder, encode_frame
from aclmon.fleet.message_decoder import MessageDecoder

SOURCES = [("node00", 100), ("node00", 101), ("node01", 200)]


def good_frame(seq: int) -> bytes:
    return encode_frame(ev.encode(ev.ExecuteEnd(seq, 1_800_000_000_000_000_000 + seq, 1, 0, 9, 0)))


JUNK = [
    encode_frame(b"\x93\x01"),  # an array cut short
    encode_frame(b"\xc1"),  # never valid msgpack
    encode_frame(ev.encode(ev.ExecuteEnd(1, 2, 1, 0, 9, 0))[:-1] + b"\xa1x"),  # a wrong type
    encode_frame(b"\x94\x7f\x01\xcf" + bytes(8) + b"\x00"),  # an unknown kind
]

message_parts = st.lists(
    st.tuples(
        st.integers(0, len(SOURCES) - 1),
        st.lists(st.one_of(st.integers(1, 10**6), st.sampled_from(JUNK)), max_size=6),
        st.integers(0, 3),  # bytes of the last frame held back to the next message
    ),
    max_size=25,
)


def per_source(messages: list[tuple[int, bytes]]) -> dict[tuple[str, int], list[ev.Event]]:
    decoders: dict[int, StreamDecoder] = {}
    out: dict[tuple[str, int], list[ev.Event]] = {}
    for index, data in messages:
        decoder = decoders.setdefault(index, StreamDecoder())
        out.setdefault(SOURCES[index], []).extend(decoder.feed(data))
    return out


@settings(max_examples=200, deadline=None)
@given(message_parts, st.integers(1, 5))
def test_same_events_per_source_as_a_decoder_each(parts, turns: int) -> None:
    held: dict[int, bytes] = {}
    messages: list[tuple[int, bytes]] = []
    for index, frames, cut in parts:
        data = held.pop(index, b"") + b"".join(
            f if isinstance(f, bytes) else good_frame(f) for f in frames
        )
        if cut and len(data) > cut:
            data, held[index] = data[:-cut], data[-cut:]
        messages.append((index, data))
    expected = per_source(messages)
    decoder = MessageDecoder()
    got: dict[tuple[str, int], list[ev.Event]] = {}
    step = max(1, len(messages) // turns)
    for begin in range(0, len(messages), step):  # a few turns of the event loop
        batch = [(SOURCES[i], "aclmon.j.h.1.events", d) for i, d in messages[begin : begin + step]]
        for key, events in decoder.decode(batch):
            assert events
            got.setdefault(key, []).extend(events)
    assert {k: v for k, v in got.items() if v} == {k: v for k, v in expected.items() if v}
    junk_sent = sum(1 for _, frames, _ in parts for f in frames if isinstance(f, bytes))
    malformed, unknown = decoder.counts()
    if not any(cut for _, _, cut in parts):  # whole frames: each junk frame counted once
        assert malformed + unknown == junk_sent
    for index, key in enumerate(SOURCES):
        sent = sum(
            1 for i, frames, _ in parts if i == index for f in frames if isinstance(f, bytes)
        )
        if not sent:
            assert decoder.counts(key) == (0, 0)


def test_whole_frames_from_many_sources_take_no_decoder_each() -> None:
    decoder = MessageDecoder()
    batch = [
        (SOURCES[i % 3], "aclmon.j.h.1.events", good_frame(i + 1) + good_frame(i + 2))
        for i in range(30)
    ]
    decoded = decoder.decode(batch)
    assert [key for key, _ in decoded] == [key for key, _, _ in batch]
    assert [len(events) for _, events in decoded] == [2] * 30
    assert decoder.counts() == (0, 0)
    assert not decoder._own  # no per-source buffers
