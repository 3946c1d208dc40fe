"""One rank's screens, opened from the fleet screen: the single-agent app over
the rank's own store, fed by a :class:`~aclmon.sources.fleet.MemberSource`
(:func:`rank_app`), with this machine's NPUs in its Host view when the rank runs
here (:class:`RankHosts`); Esc goes back to the fleet."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import ClassVar

from textual.binding import Binding, BindingType

from aclmon import events as ev
from aclmon.events.names import short_host
from aclmon.host.feed import FeedReader, HostFeed
from aclmon.sources.base import Source
from aclmon.sources.fleet import Feed, MemberSource
from aclmon.sources.host import WithHost
from aclmon.store.fleet import FleetStore, SourceKey
from aclmon.tui.app import AclmonApp
from aclmon.tui.host_commands import host_feed, host_opener

#: in one rank's screens: back to the fleet
BACK_BINDING = Binding("escape", "back_to_fleet", "Fleet", id="fleet.back")


class RankApp(AclmonApp):
    """One rank's screens: the single-agent app over the rank's own store, fed by
    a :class:`~aclmon.sources.fleet.MemberSource`; Esc goes back to the fleet.
    ``host_note`` says in its Host view why it holds no readings."""

    BINDINGS: ClassVar[list[BindingType]] = [*AclmonApp.BINDINGS, BACK_BINDING]

    #: left with Esc, back to the fleet (not quit)
    went_back = False
    host_note = ""

    def on_mount(self) -> None:  # before AclmonApp's own (Textual calls both)
        self.host_view.note = self.host_note

    def action_back_to_fleet(self) -> None:
        self.went_back = True
        self.exit(0)


def _open_host_feed(sim: bool) -> HostFeed:
    return host_feed(host_opener("auto", sim=sim, timeout=5.0, details="rotate"))


class RankHosts:
    """This machine's NPU readings for the Host view of the ranks that run here.

    A feed is started when the first such rank is opened (the simulated host for
    a rank on the simulator, as ``aclmon demo`` reads it) and read on by each of
    those ranks through its own reader, kept across visits, so the rank's store
    never folds a reading twice. A rank on another host gets none: this machine's
    readings are not its NPUs.
    """

    def __init__(
        self,
        here: str | None = None,
        open_feed: Callable[[bool], HostFeed] = _open_host_feed,
    ) -> None:
        self.here = short_host(here or socket.gethostname())
        self._open_feed = open_feed
        self._feeds: dict[bool, HostFeed] = {}
        self._readers: dict[SourceKey, FeedReader] = {}

    def reader(self, key: SourceKey, hello: ev.Hello | None) -> FeedReader | None:
        """The rank's reader (None: it runs on another host); ``key[0]`` is its host."""
        if key[0] != self.here:
            return None
        reader = self._readers.get(key)
        if reader is None:
            sim = hello is not None and hello.runtime == "sim"
            feed = self._feeds.get(sim)
            if feed is None:
                feed = self._feeds[sim] = self._open_feed(sim)
                feed.start()
            reader = self._readers[key] = feed.reader()
        return reader

    def close(self) -> None:
        for feed in self._feeds.values():
            feed.close()


def rank_app(
    feed: Feed,
    fleet: FleetStore,
    key: SourceKey,
    *,
    interval: float,
    theme: str | None = None,
    keymap: dict[str, str] | None = None,
    hosts: RankHosts | None = None,
) -> RankApp:
    """The screens of the rank ``key`` (see :class:`RankApp`), with this machine's
    NPUs in its Host view when ``hosts`` has them for the rank."""
    entry = fleet.sources[key]
    source: Source = MemberSource(feed, fleet, key)
    reader = hosts.reader(key, entry.hello) if hosts is not None else None
    if reader is not None:
        source = WithHost(source, reader)
    app = RankApp(source, interval=interval, theme=theme, keymap=keymap, store=entry.store)
    if hosts is not None and reader is None:
        app.host_note = (
            f"host readings are not available for a rank on another host ({key[0]});"
            " aclmon top there shows its NPUs"
        )
    return app
