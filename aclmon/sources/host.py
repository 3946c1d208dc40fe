"""A viewer's source plus the host's NPUs: the Host view of attach and demo.

:class:`WithHost` merges the ``HostNpuSample`` events of a :class:`HostFeed`
(read by the viewer itself, on the feed's thread) into another source's
events, and answers :meth:`host_status` from the feed, so the Host view can
say that a back end is stalled even while no events come.
"""

from __future__ import annotations

from aclmon import events as ev
from aclmon.host.feed import FeedReader
from aclmon.host.source import HostStatus
from aclmon.sources.base import Source, WrappedSource


class WithHost(WrappedSource):
    """Another source plus the host's NPUs and processes (see the module docstring)."""

    def __init__(self, inner: Source, host: FeedReader) -> None:
        super().__init__(inner)
        self.host = host

    def poll(self, max_events: int) -> list[ev.Event]:
        samples: list[ev.Event] = list(self.host.take())
        return samples + self.inner.poll(max(max_events - len(samples), 1))

    def host_status(self) -> HostStatus | None:
        return self.host.status()
