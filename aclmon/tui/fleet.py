"""The fleet screen: every rank of a job at a glance, drill down into one.

A timer folds the fleet feed (local agents or NATS) into a
:class:`~aclmon.store.fleet.FleetStore`, a chunk of events at a time (a long
catch-up goes on between keys, so quitting never waits for it), and repaints
when what it shows changed (events, a source gone stale, the connection),
but never spends more than a fifth of a core on it: after a repaint that took
*t*, the next waits at least ``PAINT_SPACING`` x *t* (a screen of 1,024 busy
ranks refreshes less often rather than fall behind; keys repaint at once):

- the alert line, once something went wrong: the job's first anomaly (an
  exception, overflow or NaN/Inf on the ranks' clocks corrected to one,
  :mod:`aclmon.tui.anomaly`; usually the root cause when ranks fail one after
  another); ``a`` opens that rank's screens on it;
- the header: the connection and why it is down, sources (live / stale /
  exited), executions per second, exceptions;
- a heat map, one cell per rank, hosts on rows (a flat grid past 16 hosts):
  the AI Core utilization as shade, ``!`` on a rank with exceptions, ``~``
  on a stale one (nothing heard from it or its relay for a while), ``·``
  for an exited one. 128 ranks fit a 160x48 terminal with room for the list;
- one row per rank: host, rank, pid, devices, utilization sparkline, HBM,
  executions per second and in total, failures, exceptions, overflows, the
  last error and the state. Ranks with exceptions come first (earliest
  first, that one marked); then the chosen sort (``s`` cycles rank, host,
  exec/s, exceptions, utilization); ``/`` filters by any text in the row.

Enter opens the single-agent screens for the rank under the cursor
(:mod:`aclmon.tui.fleet_rank`: its own store, fed from the same feed; the other
ranks keep being folded in the background); Esc there comes back here. The
rows' columns, sorts and filter are :mod:`aclmon.tui.fleet_rows`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.widgets import Static

from aclmon.bus.states import AUTH_FAILED, CONNECTED
from aclmon.errors import AclmonError
from aclmon.locations import keymap_path
from aclmon.sources.fleet import Feed, drain
from aclmon.store.fleet import EXITED, LIVE, STALE, Anomaly, FleetRow, FleetStore, SourceKey
from aclmon.tui import fmt
from aclmon.tui.anomaly import alert_text, bound_key, reveal_at_start
from aclmon.tui.columns import Column, Layout
from aclmon.tui.fleet_rank import BACK_BINDING, RankHosts, rank_app
from aclmon.tui.fleet_rows import (
    NARROW_COLUMNS,
    SORTS,
    WIDE_COLUMNS,
    row_cells,
    row_name,
    sort_rows,
)
from aclmon.tui.footer import FittingFooter
from aclmon.tui.heatmap import HeatLine, HeatMap
from aclmon.tui.inert import InertApp, inert, inert_line
from aclmon.tui.keys import binding_rows, quit_bindings
from aclmon.tui.lifetime import run_app_result
from aclmon.tui.options import DEFAULT_INTERVAL
from aclmon.tui.palette import CommandsProvider
from aclmon.tui.screens import HelpScreen, ScrollingModal
from aclmon.tui.style import middle
from aclmon.tui.themes import DEFAULT_DARK, VARIABLE_DEFAULTS, use_themes
from aclmon.tui.views.base import Command
from aclmon.tui.views.filterbar import FilterBar
from aclmon.tui.vlist import VirtualList

#: heat-map shades from idle to busy
SHADES = " ░▒▓█"
#: hosts on their own heat-map line up to this many; past it, a flat grid
HEAT_HOST_LINES = 16
#: events folded in one step: what a key typed during a long catch-up waits for
#: at most (a few tens of milliseconds)
FOLD_CHUNK = 5_000
#: between two chunks of a catch-up: the event loop's turn (keys, the screen)
CATCH_UP_PAUSE_S = 0.001
#: after a repaint that took t seconds, the next one from the timer waits t times this
PAINT_SPACING = 4.0


class FleetCommands(CommandsProvider):
    """The fleet screen's palette: the first anomaly, open a rank, sort, filter,
    theme, help, quit."""

    DISCOVERED = ("First anomaly", "Rank", "PID", "Sort", "Help")

    def _commands(self) -> list[Command]:
        app: FleetApp = self.app  # type: ignore[assignment]  # the provider serves only FleetApp
        out = []
        first = app.fleet.first_anomaly()
        if first is not None:
            who = f"Rank {first.rank}" if first.rank is not None else f"PID {first.key[1]}"
            out.append(
                Command(f"First anomaly: {who} on {first.key[0]}, go to it",
                        app.action_first_anomaly,
                        "that rank's screens, on where the job first went wrong (a)")
            )  # fmt: skip
        out += [
            Command(
                f"{row_name(row)} on {row.host}: open its screens",
                partial(app.exit, row.key),
                "the single-agent screens of that rank (Esc there comes back)",
            )
            for row in app.rows
        ]
        out += [
            Command(f"Sort: by {sort}", partial(app.set_sort, sort), "sort the rows (s cycles)")
            for sort in SORTS
        ]
        out.append(
            Command("Filter: host, rank, pid, state, error", app.action_filter,
                    "show only the rows with this text (/)")
        )  # fmt: skip
        out += [
            Command(
                f"Theme: {theme}",
                partial(setattr, app, "theme", theme),
                "switch to the theme",
            )
            for theme in sorted(app.available_themes)
        ]
        out.append(
            Command("Help: show every key", app.action_help, "the help screen: every key, its id")
        )
        out.append(Command("Quit", app.action_quit_fleet, "leave aclmon (q)"))
        return out


class FleetApp(InertApp["SourceKey | None"]):
    """See the module docstring. Exits with the key of the rank to open, or None."""

    CSS_PATH = Path(__file__).parent / "screens.tcss"  # the help screen's box
    COMMANDS: ClassVar[set[Any]] = {FleetCommands}
    CSS = """
    #fleet-alert { height: 1; display: none; }
    #fleet-header { height: 1; background: $panel; text-wrap: nowrap; }
    #heat { height: auto; max-height: 18; padding: 0 1; }
    #heat-note { height: auto; padding: 0 1; display: none; }
    #colhead { height: 1; background: $panel; }
    #rows { height: 1fr; }
    #filter { dock: bottom; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "first_anomaly", "First anomaly", id="fleet.anomaly"),
        Binding("s", "next_sort", "Sort", id="fleet.sort"),
        Binding("slash", "filter", "Filter", id="fleet.filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="fleet.clear"),
        Binding("question_mark,f1", "help", "Help", id="fleet.help"),
        *quit_bindings("quit_fleet", "fleet"),
    ]

    def __init__(
        self,
        feed: Feed,
        fleet: FleetStore,
        *,
        interval: float = DEFAULT_INTERVAL,
        theme: str | None = None,
        keymap: dict[str, str] | None = None,
        sort: str = "rank",
        filter_text: str = "",
        cursor_key: SourceKey | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.feed = feed
        self.fleet = fleet
        self.interval = interval
        self._wanted_theme = theme or DEFAULT_DARK
        self.user_keymap = dict(keymap or {})
        self.sort = sort
        self.filter_text = filter_text
        self.rows: list[FleetRow] = []
        self._cursor_key = cursor_key
        self._painted: tuple[Any, ...] = ()
        self._clock = clock
        #: the timer repaints no earlier than this (``clock``; see PAINT_SPACING)
        self._next_paint = 0.0
        #: (theme, variable, extras) -> its style
        self._styles: dict[tuple[Any, ...], Style] = {}
        self._catching_up = False
        self._first: SourceKey | None = None
        #: the first anomaly to show in the rank opened (the alert line's key)
        self.jump: Anomaly | None = None

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def compose(self) -> ComposeResult:
        self.alert = Static(id="fleet-alert")
        yield self.alert
        self.header = Static(id="fleet-header")
        self.heat = HeatMap(id="heat")
        self.heat_note = Static(id="heat-note")
        self.colhead = Static(id="colhead")
        self.vlist = VirtualList(self._render_row, id="rows")
        self.filter_input = FilterBar("what the columns show", searchable=False, id="filter")
        yield self.header
        yield self.heat
        yield self.heat_note
        yield self.colhead
        yield self.vlist
        yield self.filter_input
        yield FittingFooter()

    def on_mount(self) -> None:
        use_themes(self, self._wanted_theme)
        if self.user_keymap:
            self.set_keymap(self.user_keymap)
        self.vlist.set_follow(False)
        self.tick()
        self.set_interval(self.interval, self.tick)
        self.vlist.focus()

    # ------------------------------------------------------------ data
    @property
    def _live(self) -> bool:
        """Running and not leaving (a quit key, a signal: ``exit()`` was called)."""
        return self.is_running and not getattr(self, "_exit", False)

    def tick(self) -> None:
        """The timer: fold what came, repaint when something shown changed."""
        if not self._live:
            return
        if not self._catching_up:
            self._fold()
        if self._clock() >= self._next_paint and self._shown() != self._painted:
            self.repaint()

    def _fold(self) -> None:
        """Fold one chunk (:data:`FOLD_CHUNK` events) of what the feed has. A
        full chunk means more is waiting (a ``--since all`` catch-up): the next
        one goes on a timer of its own at once, after the event loop's turn
        (a message would never let the loop read the keyboard), so a quit key
        waits for one chunk at most, never for the whole backlog."""
        self._catching_up = False
        if not self._live:
            return
        if drain(self.feed, self.fleet, FOLD_CHUNK) >= FOLD_CHUNK:
            self._catching_up = True
            self.set_timer(CATCH_UP_PAUSE_S, self._fold, name="fleet catch-up")

    def _shown(self) -> tuple[Any, ...]:
        """What the screen depends on beyond the folded events: each source's
        liveness (a silent one turns stale with no event) and the connection."""
        states = tuple(self.fleet.state_of(entry) for entry in self.fleet.accepted())
        return (self.fleet.version, states, self.feed.state, self.feed.state_reason)

    def repaint(self) -> None:
        began = self._clock()
        self._painted = self._shown()
        order = self.fleet.anomaly_order()
        self._first = order[0].key if order else None
        self.alert.update(alert_text(order, self.size.width, self._style("error", bold=True),
                                     self._style("foreground-muted"),
                                     bound_key(self, "fleet.anomaly", "a")))  # fmt: skip
        self.alert.display = bool(order)
        key = self.selected_key() or self._cursor_key
        rows = self.fleet.rows()
        self.rows = sort_rows(rows, self.sort, self._first, self.filter_text, self._columns())
        self.vlist.set_rows(0, len(self.rows))
        if key is not None:
            for index, row in enumerate(self.rows):
                if row.key == key:
                    self.vlist.move_cursor_to(index)
                    break
        elif self.rows and self.vlist.cursor < 0:
            self.vlist.move_cursor_to(0)
        self.vlist.clear_cache()
        self.header.update(self._header_text(rows))
        self._update_heat(rows)
        self.colhead.update(self._colhead_text())
        ended = self._clock()
        self._next_paint = ended + PAINT_SPACING * (ended - began)

    def selected_key(self) -> SourceKey | None:
        cursor = self.vlist.cursor if self.is_running else -1
        if 0 <= cursor < len(self.rows):
            return self.rows[cursor].key
        return None

    # ------------------------------------------------------------ drawing
    def _style(self, variable: str, **extra: Any) -> Style:
        key = (self.theme, variable, *sorted(extra.items()))
        style = self._styles.get(key)
        if style is None:
            style = self._styles[key] = self._make_style(variable, **extra)
        return style

    def _make_style(self, variable: str, **extra: Any) -> Style:
        value = self.theme_variables.get(variable)
        color = None
        if value:
            try:
                color = Color.parse(value).rich_color
            except Exception:  # a theme value we cannot parse: no colour
                color = None
        return Style(color=color, **extra)

    def _header_text(self, rows: list[FleetRow]) -> Text:
        live = sum(1 for r in rows if r.state == LIVE)
        stale = sum(1 for r in rows if r.state == STALE)
        exited = sum(1 for r in rows if r.state == EXITED)
        rate = sum(r.executions_per_s for r in rows)
        exceptions = sum(r.exceptions for r in rows)
        text = Text(" aclmon fleet ", style=Style(bold=True))
        if self._wide():  # narrow screens keep the counts, not the address
            text.append(f" {middle(self.feed.description, 60)} ")
        state = self.feed.state
        if state != CONNECTED:
            reason = middle(self.feed.state_reason, 80)
            text.append(f" {state}{': ' + reason if reason else ''} ", style=self._style("error"))
        text.append(f" {len(rows)} ranks ({live} live")
        if stale:
            text.append(f", {stale} stale", style=self._style("warning", bold=True))
        text.append(f", {exited} exited) " if exited else ") ")
        text.append(f" {fmt.count(rate)} exec/s ")
        bad = self._style("error", bold=True)
        text.append(f" {exceptions} exceptions ", style=bad if exceptions else Style())
        if self.filter_text:
            text.append(f" filter: {self.filter_text} ", style=Style(reverse=True))
        text.append(f" sort: {self.sort} ", style=self._style("foreground-muted"))
        return text

    def _cell(self, row: FleetRow) -> tuple[str, Style]:
        """A rank's heat-map cell: its two characters and their style."""
        if row.state == EXITED:
            return "··", self._style("foreground-muted")
        if row.state == STALE:
            return "~~", self._style("warning")
        if row.exceptions:
            return "!!", self._style("error", bold=True, reverse=row.key == self._first)
        if row.cube_util < 0:
            return "??", self._style("foreground-muted")
        shade = SHADES[min(len(SHADES) - 1, 1 + row.cube_util // 25)]
        color = (
            "success" if row.cube_util >= 50 else "warning" if row.cube_util >= 10 else "primary"
        )
        return shade * 2, self._style(color)

    def _update_heat(self, rows: list[FleetRow]) -> None:
        """The heat map of the ranks, or why there is none yet."""
        rows = sorted(
            rows, key=lambda r: (r.host, r.rank if r.rank is not None else 1 << 30, r.pid)
        )
        self.heat.show(self._heat_lines([(row.host, self._cell(row)) for row in rows]))
        note = None
        if not rows:
            if self.feed.state != CONNECTED and self.feed.state_reason:
                # nothing to show but why: in full (the header has room for its start)
                note = Text(
                    f"{self.feed.state}: {inert(self.feed.state_reason)}",
                    style=self._style("error"),
                )
            else:
                note = Text("waiting for ranks…", style=self._style("foreground-muted"))
            self.heat_note.update(note)
        self.heat_note.display = note is not None

    def _heat_lines(self, cells: list[tuple[str, tuple[str, Style]]]) -> list[HeatLine]:
        """The heat map's lines from ``(host, cell)`` in host and rank order, and the
        legend (none without cells); pieces of one style next to each other are one."""
        if not cells:
            return []
        hosts: dict[str, list[tuple[str, Style]]] = {}
        for host, cell in cells:
            hosts.setdefault(host, []).append(cell)
        width = max(self.size.width - 2, 20)
        muted = self._style("foreground-muted")
        plain = Style()
        lines: list[HeatLine] = []

        def line(label: tuple[str, Style] | None, members: list[tuple[str, Style]]) -> HeatLine:
            pieces: list[tuple[str, Style]] = [label] if label else []
            for chars, style in members:
                for text, wanted in ((chars, style), (" ", plain)):
                    if pieces and pieces[-1][1] == wanted:
                        pieces[-1] = (pieces[-1][0] + text, wanted)
                    else:
                        pieces.append((text, wanted))
            return tuple(pieces)

        if len(hosts) <= HEAT_HOST_LINES:
            label = min(max(len(inert_line(h)) for h in hosts), 24)
            per_line = max((width - label - 2) // 3, 1)
            for host, members in hosts.items():
                for start in range(0, len(members), per_line):
                    name = middle(host, label) if start == 0 else ""
                    lines.append(
                        line((f"{name:<{label}}  ", muted), members[start : start + per_line])
                    )
        else:
            per_line = max(width // 3, 1)
            flat = [cell for _host, cell in cells]
            for start in range(0, len(flat), per_line):
                lines.append(line(None, flat[start : start + per_line]))
        legend = "util " + "".join(
            shade * 2 + f" {what}  "
            for shade, what in zip(SHADES[1:], ("<25%", "<50%", "<75%", "busy"), strict=True)
        )
        lines.append(((legend + "!! exceptions  ~~ stale  ·· exited", muted),))
        return lines

    def _wide(self) -> bool:
        return self.size.width >= 120

    def _colhead_text(self) -> Text:
        text, _clicks = self.column_layout().header(style=Style(bold=True))
        return text

    def column_layout(self) -> Layout:
        """The columns of the rows' width, as the header and the rows draw them."""
        width = self.vlist.scrollable_content_region.width or self.size.width
        return Layout(self._columns(), width, indent=1, gap=1)

    def _columns(self) -> tuple[Column, ...]:
        return WIDE_COLUMNS if self._wide() else NARROW_COLUMNS

    def _render_row(self, index: int, width: int) -> Text:
        if not 0 <= index < len(self.rows):
            return Text("")
        r = self.rows[index]
        cells = row_cells(r)
        style = Style()
        if r.exceptions:
            style = self._style("error", bold=r.key == self._first)
        elif r.state == EXITED:
            style = self._style("foreground-muted")
        elif r.state == STALE:
            style = self._style("warning")
        text = self.column_layout().row(cells, style=style)
        if r.key == self._first:
            text = Text("◆", style=self._style("error", bold=True)) + text[1:]
        return text

    # ------------------------------------------------------------ keys
    def action_next_sort(self) -> None:
        self.set_sort(SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)])

    def set_sort(self, sort: str) -> None:
        self.sort = sort
        self.repaint()

    def help_sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        keymap = self.user_keymap
        return [
            ("Fleet screen", [*binding_rows(FleetApp.BINDINGS, keymap),
                              ("ctrl+p", "Command palette", "")]),
            ("Rows", binding_rows(VirtualList.BINDINGS, keymap)),
            ("Filter line (after /)", binding_rows(FilterBar.BINDINGS, keymap)),
            ("One rank's screens", binding_rows([BACK_BINDING], keymap)),
            ("Help", binding_rows(HelpScreen.BINDINGS, keymap)),
            ("Help (scrolling)", binding_rows(ScrollingModal.BINDINGS, keymap)),
        ]  # fmt: skip

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_sections(), str(keymap_path())))

    def action_filter(self) -> None:
        self.filter_input.value = self.filter_text
        self.filter_input.open()

    def action_clear_filter(self) -> None:
        self.filter_input.action_clear()

    @on(FilterBar.Changed, "#filter")
    def _filter_changed(self, message: FilterBar.Changed) -> None:
        self.filter_text = message.value.strip().lower()
        self.repaint()

    @on(FilterBar.Done, "#filter")
    def _filter_done(self) -> None:
        self.vlist.focus()

    @on(VirtualList.Selected, "#rows")
    def _open(self, message: VirtualList.Selected) -> None:
        if 0 <= message.index < len(self.rows):
            self.exit(self.rows[message.index].key)

    def action_quit_fleet(self) -> None:
        self.exit(None)

    def action_first_anomaly(self) -> None:
        """Open the rank where the job first went wrong, on that anomaly."""
        order = self.fleet.anomaly_order()
        if not order:
            self.notify("no exception, overflow or NaN/Inf on any rank yet", timeout=3)
            return
        self.jump = order[0]
        self.exit(order[0].key)


def run_fleet_app(
    feed: Feed,
    *,
    interval: float,
    theme: str | None,
    keymap: dict[str, str],
    abandon: Callable[[], None] | None = None,
) -> int:
    """The fleet screen until the user quits; Enter and Esc move between it and
    one rank. Each screen runs as every viewer does (:mod:`aclmon.tui.lifetime`):
    a signal or a dead terminal leaves like the quit key, the terminal put back;
    ``abandon`` stops what the caller started when that cannot finish."""
    fleet = FleetStore()
    feed.start()
    if feed.state == AUTH_FAILED:
        raise AclmonError(f"could not connect to {feed.description}: {feed.state_reason}")
    sort, filter_text, cursor = "rank", "", None
    hosts = RankHosts()
    try:
        while True:
            app = FleetApp(feed, fleet, interval=interval, theme=theme, keymap=keymap,
                           sort=sort, filter_text=filter_text, cursor_key=cursor)  # fmt: skip
            chosen, status = run_app_result(app, abandon=abandon)
            sort, filter_text = app.sort, app.filter_text
            if status is not None:
                return status
            if chosen is None:
                return 0
            cursor = chosen
            one = rank_app(feed, fleet, chosen, interval=interval, theme=theme, keymap=keymap,
                           hosts=hosts)  # fmt: skip
            if app.jump is not None:
                reveal_at_start(one, app.jump)
            _, status = run_app_result(one, abandon=abandon)
            if status is not None:
                return status
            if not one.went_back:
                return 0
    finally:
        hosts.close()
        feed.close()
