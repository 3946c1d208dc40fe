"""``handshake.take_message``: how both ends of a connection (the bus subscriber,
the relay's agent link) take the handshake's messages out of what they read."""

from __future__ import annotations

import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.bus import handshake
from aclmon.events.wire import encode_frame

messages = st.dictionaries(
    st.text(max_size=8),
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.binary(max_size=32)),
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, min_size=1, max_size=4), st.binary(max_size=64), st.data())
def test_messages_come_out_whole_and_in_order_whatever_the_reads(
    sent: list[dict], rest: bytes, data: st.DataObject
) -> None:
    stream = b"".join(encode_frame(msgpack.packb(m, use_bin_type=True)) for m in sent)
    stream += rest  # what follows the handshake is left alone
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    buffer = bytearray()
    taken: list[object] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        buffer += stream[start:end]
        while len(taken) < len(sent) and (whole := handshake.take_message(buffer)) is not None:
            taken.append(whole[0])
    assert taken == sent
    assert bytes(buffer) == rest


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_garbage_is_incomplete_a_message_or_a_value_error_and_nothing_else(raw: bytes) -> None:
    buffer = bytearray(raw)
    try:
        whole = handshake.take_message(buffer)
    except ValueError:  # too big, or not msgpack (msgpack's errors are ValueErrors)
        return
    if whole is None:
        assert buffer == raw  # nothing taken while incomplete
    else:
        (length,) = struct.unpack_from("<I", raw)
        assert bytes(buffer) == raw[4 + length :]


def test_a_length_over_the_limit_is_refused_before_the_bytes_arrive() -> None:
    buffer = bytearray(struct.pack("<I", handshake.MAX_HANDSHAKE_FRAME + 1))
    with pytest.raises(ValueError, match="too big"):
        handshake.take_message(buffer)
    nil = bytearray(encode_frame(msgpack.packb(None)))
    assert handshake.take_message(nil) == (None,)  # a nil message is a message
