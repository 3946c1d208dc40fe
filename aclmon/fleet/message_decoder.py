"""Many sources' NATS messages decoded in one pass.

A relay publishes whole frames of one source per message, a few frames each
when a job is large and its ranks are many (1,024 ranks at 20 events/s each
make about 2,000 messages a second of 5 to 10 frames). Decoding each message on
its own pays a batch decode's fixed cost (the joined-payload copy, the
validator's call) per message, and a per-source decoder keeps buffers for each
source. :class:`MessageDecoder` takes the messages of one event-loop turn, from
every source, and decodes them as one batch; each source's events come back in
their order.

A message that is not whole frames (only a hostile or broken publisher sends
one), and a message in which some frame does not decode as an event, go
through that source's own :class:`~aclmon.events.wire.StreamDecoder` instead,
so bad input is counted against the source that sent it
(:meth:`MessageDecoder.counts`) and lost frame by frame, as before.
"""

from __future__ import annotations

from aclmon import events as ev
from aclmon.events.wire import (
    DEFAULT_MAX_FRAME,
    BatchDecoder,
    FrameError,
    StreamDecoder,
    split_frames,
)
from aclmon.store.fleet import SourceKey

#: bytes decoded as one batch at most (a catch-up hands over many messages at once)
RUN_BYTES = 8 << 20

#: (source key, subject, message data)
Message = tuple[SourceKey, str, bytes]


class MessageDecoder:
    """See the module docstring."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._batch = BatchDecoder(max_buffer=max(max_frame * 2, 64 << 20))
        #: sources that sent something the batch path did not take (made on first use)
        self._own: dict[SourceKey, StreamDecoder] = {}

    def decode(self, messages: list[Message]) -> list[tuple[SourceKey, list[ev.Event]]]:
        """Each message's events, in order (a message with none is left out)."""
        out: list[tuple[SourceKey, list[ev.Event]]] = []
        run: list[tuple[Message, list[int]]] = []
        size = 0
        for message in messages:
            key, subject, data = message
            own = self._own.get(key)
            offsets: list[int] = []
            stop = -1
            if own is None or not own.pending:  # no incomplete frame of its own waiting
                try:
                    offsets, stop = split_frames(data, 0, len(data), self.max_frame, subject)
                except FrameError:
                    stop = -1
            if stop == len(data):
                run.append((message, offsets))
                size += len(data)
                if size >= RUN_BYTES:
                    out.extend(self._together(run))
                    run, size = [], 0
                continue
            # Not whole frames, or the rest of an incomplete one: after the
            # messages before it, so that each source's events keep their order.
            out.extend(self._together(run))
            run, size = [], 0
            out.extend(self._alone(message))
        out.extend(self._together(run))
        return out

    def _together(
        self, run: list[tuple[Message, list[int]]]
    ) -> list[tuple[SourceKey, list[ev.Event]]]:
        """Messages of whole frames, as one batch."""
        starts: list[int] = []
        size = 0
        for (_key, _subject, data), offsets in run:
            starts.extend(offset + size for offset in offsets)
            size += len(data)
        if not starts:
            return []
        events = self._batch.decode(b"".join(m[2] for m, _ in run), starts, size)
        out: list[tuple[SourceKey, list[ev.Event]]] = []
        if len(events) == len(starts):
            at = 0
            for (key, _subject, _data), offsets in run:
                if offsets:
                    out.append((key, events[at : at + len(offsets)]))
                    at += len(offsets)
            return out
        # Some frame was not an event: find whose, message by message.
        for message, offsets in run:
            data = message[2]
            alone = self._batch.decode(data, offsets, len(data))
            if len(alone) != len(offsets):
                out.extend(self._alone(message))
            elif alone:
                out.append((message[0], alone))
        return out

    def _alone(self, message: Message) -> list[tuple[SourceKey, list[ev.Event]]]:
        key, subject, data = message
        decoder = self._own.get(key)
        if decoder is None:
            decoder = self._own[key] = StreamDecoder(self.max_frame, source=subject)
        try:
            events = decoder.feed(data)
        except FrameError:  # lost sync: start afresh with the next message
            self._own[key] = StreamDecoder(self.max_frame, source=subject)
            return []
        return [(key, events)] if events else []

    def counts(self, key: SourceKey | None = None) -> tuple[int, int]:
        """(malformed, unknown) input skipped: from every source, or from ``key``."""
        decoders = [d for k, d in list(self._own.items()) if key in (None, k)]
        return (sum(d.malformed for d in decoders), sum(d.unknown for d in decoders))
