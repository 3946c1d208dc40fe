"""The frame's top two lines: the target/connection header and the view tabs."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from aclmon.bus.states import CONNECTED, DISCONNECTED, ENDED
from aclmon.sources.base import Source
from aclmon.store import Store
from aclmon.tui import fmt
from aclmon.tui.style import middle, theme_style


class HeaderBar(Static):
    """Who is watched, the connection, the event rate and what was lost."""

    DEFAULT_CSS = """
    HeaderBar { height: 1; background: $panel; color: $foreground; text-wrap: nowrap; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown = ""
        #: what the header says apart from its running figures
        self._steady: tuple[object, ...] = ()

    def show(
        self,
        store: Store,
        source: Source,
        events_per_s: float,
        *,
        force: bool = False,
        beat: bool = False,
    ) -> None:
        """Redraw from the store and the source when what it says changed, or
        ``force``. The running figures (the event rate, the count, the newest time)
        alone move it on the app's ``beat`` (once a second), not at every refresh."""
        s = store.state
        c = s.counters
        # Anything but the running figures is drawn at once; those on the beat.
        steady = (
            source.title, source.description, source.state, source.state_reason,
            source.readonly, source.recording, s.hello, s.goodbye,
            c.agent_dropped, c.gaps, c.malformed, self.size.width,
        )  # fmt: skip
        if not force and not beat and steady == self._steady:
            return
        self._steady = steady
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        good = theme_style(self, "aclmon-idle", bold=True)
        width = self.size.width or 160
        # Narrow terminals keep what matters most: target, connection, rate, losses.
        compact = width < 130
        text = Text(" aclmon ", style=Style(bold=True), no_wrap=True, overflow="ellipsis")
        if source.title:
            text.append(f" {middle(source.title, 40)} ", style=Style(bold=True, reverse=True))
        if s.hello is not None:
            h = s.hello
            text.append(f" {middle(h.host, 40)}:{h.pid} ", style=Style(bold=True))
            runtime, soc = middle(h.runtime, 10), middle(h.soc_name, 24)
            if compact:
                text.append(runtime, style=dim)
            else:
                # soc and count are not known until the job's acl.init
                board = f"{soc} ×{h.device_count}" if h.device_count > 0 else soc
                text.append(f"{runtime} · {board}" if board else runtime, style=dim)
        else:
            text.append(f" {middle(source.description, 40)}", style=dim)
        state = source.state
        text.append("  │ ", style=dim)
        reason = source.state_reason
        if s.goodbye is not None and state != CONNECTED:
            # The job said goodbye: it ended (the app stops reconnecting on its tick).
            text.append(f"■ {fmt.job_end_text(s.goodbye)}", style=dim)
            reason = ""
        elif state == CONNECTED:
            text.append("● connected", style=good)
        elif state == ENDED:
            text.append("■ ended", style=dim)
        elif state == DISCONNECTED and s.hello is not None:
            # Gone without a goodbye (a crash, a kill, the network): the socket error
            # says nothing more to the user.
            text.append("● connection lost, reconnecting…", style=bad)
            reason = ""
        elif state == DISCONNECTED:
            text.append("● disconnected, reconnecting…", style=bad)
        else:
            text.append(f"● {state}", style=theme_style(self, "aclmon-busy", bold=True))
        if reason and state != CONNECTED:
            text.append(f" ({middle(reason, 60 if not compact else 30)})", style=dim)
        if source.readonly and compact:
            # before the figures, which a narrow line cuts first
            text.append("  │ read-only", style=dim)
        text.append("  │ ", style=dim)
        text.append(f"{fmt.count(events_per_s)} ev/s", style=Style(bold=True))
        if not compact:
            text.append(f"  {fmt.count(c.events)} events", style=dim)
        lost = c.agent_dropped + c.gaps
        text.append("  │ ", style=dim)
        losses = (
            f"drop {c.agent_dropped} gap {c.gaps} bad {c.malformed}"
            if compact
            else f"dropped {c.agent_dropped} · gaps {c.gaps} · malformed {c.malformed}"
        )
        text.append(losses, style=bad if lost or c.malformed else dim)
        if source.recording:
            text.append("  │ ", style=dim)
            text.append("⏺ REC", style=bad)
        if source.readonly and not compact:
            text.append("  │ read-only", style=dim)
        if s.newest_ts_ns and not compact:
            text.append(f"  │ {fmt.utc_time(s.newest_ts_ns, with_ms=False)} UTC", style=dim)
        plain = text.plain
        if force or plain != self._shown:
            self._shown = plain
            self.update(text, layout=False)  # one line, always: no layout of the screen


class TabBar(Static):
    """One tab per view (number key, title, count); a click selects a view."""

    DEFAULT_CSS = """
    TabBar { height: 1; background: $surface; padding: 0 1; }
    """

    class Selected(Message):
        """A tab was clicked: show ``view``."""

        def __init__(self, view: str) -> None:
            super().__init__()
            self.view = view

    current: reactive[str] = reactive("", layout=False)
    """The view shown."""

    def __init__(self, titles: dict[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.titles = dict(titles)
        self.counts: dict[str, str] = {}
        self._spans: list[tuple[int, int, str]] = []

    def show_counts(self, counts: dict[str, str]) -> None:
        if counts != self.counts:
            self.counts = dict(counts)
            self._draw()

    def watch_current(self) -> None:
        self._draw()

    def _labels(self, form: int) -> list[str]:
        """Each tab's text, in the ``form``-th shortest way: whole titles; their first
        word; then counts without brackets; then the other tabs' titles in four
        letters, then three, then none (by number and count); the shown tab's
        title stays whole from the third form on."""
        labels = []
        for n, (view, title) in enumerate(self.titles.items(), start=1):
            count = self.counts.get(view, "")
            if form >= 1:
                title = title.split(" ")[0]
            if form >= 2:
                count = count.replace("(", "").replace(")", "")
            if view != self.current:  # the shown tab keeps its title whole
                if form >= 3:
                    title = title[: 4 if form == 3 else 3]
                if form >= 5:
                    title = ""
            body = f"{title}{count}".strip()
            labels.append(f" {n} {body} " if body else f" {n} ")
        return labels

    def _draw(self) -> None:
        active = theme_style(self, "footer-key-foreground", bold=True, reverse=True)
        dim = theme_style(self, "aclmon-dim")
        text = Text(no_wrap=True, overflow="ellipsis")
        spans = []
        room = (self.size.width or 160) - 2
        form = 0 if room >= 98 else 1
        # the first form that fits (a tab's own spaces keep tabs apart once the gaps go)
        while (
            form < 5
            and sum(map(len, self._labels(form))) + (len(self.titles) if form < 2 else 0) > room
        ):
            form += 1
        for view, label in zip(self.titles, self._labels(form), strict=True):
            start = len(text)
            text.append(label, style=active if view == self.current else dim)
            spans.append((start, len(text), view))
            if form < 2:
                text.append(" ")
        self._spans = spans
        self.update(text, layout=False)  # one line, always: no layout of the screen

    def on_resize(self) -> None:
        self._draw()

    def on_click(self, event: events.Click) -> None:
        x = event.x - 1  # the left padding
        for start, end, view in self._spans:
            if start <= x < end:
                self.post_message(self.Selected(view))
                return
