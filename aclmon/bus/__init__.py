"""The event bus: frames over sockets, recordings, and the agent registry.

An agent publishes; viewers subscribe, record or replay::

    from aclmon.bus import Publisher, Subscriber, RecordingReader, RecordingWriter
    from aclmon.events import DeviceSample, Ping

    publisher = Publisher(snapshot=lambda: current_state, on_command=handle).start()
    publisher.emit(DeviceSample, 0, 35, 10, -1, used, total, "OK", 41.0, None)  # never blocks
    registry.register(publisher.address)           # so `aclmon attach` finds it

    subscriber = Subscriber(registry.resolve_target(None), readonly=False).start()
    events = subscriber.poll(max_events=10_000, timeout=0.1)   # decoded events
    reply = subscriber.send_command(Ping, timeout=2.0)         # raises CommandTimeout

    with RecordingWriter("job.aclrec", {"target": publisher.address}) as writer:
        writer.write_many(events)
    reader = RecordingReader("job.aclrec")          # indexes in the background
    reader.wait_indexed()
    start = reader.seek_time(ts_ns)                 # or any event number
    for event in reader.iter_events(start):
        ...

Frame format, handshake, permissions and limits: docs/events.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names load on first use: `aclmon --help` imports aclmon.bus.commands, which
# must not pull in numpy (the recording reader's) or sockets through here.
_EXPORTS = {
    "Address": "aclmon.bus.transport",
    "parse_address": "aclmon.bus.transport",
    "runtime_dir": "aclmon.locations",
    "FrameDecoder": "aclmon.events.wire",
    "FrameError": "aclmon.events.wire",
    "StreamDecoder": "aclmon.events.wire",
    "encode_frame": "aclmon.events.wire",
    "Publisher": "aclmon.bus.publisher",
    "Subscriber": "aclmon.bus.subscriber",
    "CommandRefused": "aclmon.errors",
    "CommandTimeout": "aclmon.bus.subscriber",
    "Cut": "aclmon.bus.recording",
    "RecordingHeader": "aclmon.bus.recording",
    "RecordingReader": "aclmon.bus.recording",
    "RecordingWriter": "aclmon.bus.recording",
}

__all__ = [
    "Address",
    "CommandRefused",
    "CommandTimeout",
    "Cut",
    "FrameDecoder",
    "FrameError",
    "Publisher",
    "RecordingHeader",
    "RecordingReader",
    "RecordingWriter",
    "StreamDecoder",
    "Subscriber",
    "encode_frame",
    "parse_address",
    "registry",
    "runtime_dir",
]


def __getattr__(name: str) -> Any:
    if name == "registry":
        return importlib.import_module("aclmon.bus.registry")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'aclmon.bus' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from aclmon.bus import registry
    from aclmon.bus.publisher import Publisher
    from aclmon.bus.recording import Cut, RecordingHeader, RecordingReader, RecordingWriter
    from aclmon.bus.subscriber import CommandTimeout, Subscriber
    from aclmon.bus.transport import Address, parse_address
    from aclmon.errors import CommandRefused
    from aclmon.events.wire import FrameDecoder, FrameError, StreamDecoder, encode_frame
    from aclmon.locations import runtime_dir
