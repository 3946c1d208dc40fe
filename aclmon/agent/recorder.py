"""``--record FILE``: the agent's own event stream, written to a recording.

The recorder is an ordinary read-only subscriber of the agent's publisher,
running in its own thread of the job process. File I/O therefore never
happens on a job thread, and a slow disk is treated like any slow viewer:
the publisher drops for it (counted, published) instead of stalling the job.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

CONNECT_TIMEOUT_S = 2.0
POLL_TIMEOUT_S = 0.2


class Recorder:
    """Subscribes to the publisher at ``address`` (with its ``token``, if it has one)
    and writes what arrives to ``path``."""

    def __init__(self, ctx: AgentContext, path: str, address: str, token: str | None) -> None:
        from aclmon.bus.recording import RecordingWriter
        from aclmon.bus.subscriber import Subscriber

        self.ctx = ctx
        self.path = path
        self.writer = RecordingWriter(
            path, {"source": "aclmon agent", "pid": os.getpid(), "runtime": ctx.runtime}
        )
        self.subscriber = Subscriber(address, token=token, readonly=True).start()
        # Wait for the handshake so that the recording starts with the job, not later.
        self.subscriber.wait_connected(CONNECT_TIMEOUT_S)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aclmon-recorder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        subscriber = self.subscriber
        writer = self.writer
        while not self._stop.is_set():
            try:
                events = subscriber.poll(10_000, POLL_TIMEOUT_S)
                if events:
                    writer.write_many(events)
                    writer.flush()
            except Exception as exc:  # a full disk must not end the job: stop recording
                self.ctx.fail("recorder", exc)
                return

    def close(self) -> None:
        """Write what has arrived, then close (the publisher has flushed before this)."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        try:
            events = self.subscriber.poll(1_000_000, POLL_TIMEOUT_S)
            while events:
                self.writer.write_many(events)
                events = self.subscriber.poll(1_000_000, 0.05)
        except Exception as exc:
            self.ctx.fail("recorder", exc)
        self.subscriber.close()
        self.writer.close()
