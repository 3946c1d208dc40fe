"""The aclmon Textual app: a frame (header, view tabs, footer) around the views.

Data flow: a timer polls the source (never blocking) every ``interval``
seconds, applies the batch to the store in one go, updates the header, and
hands the store to the visible view only if the store changed. Views own what
they show (filters, the pending profiling configuration, the detail pane) as
reactives and post messages up (``ProfilingView.ConfigRequested``,
``ExceptionsView.Opened``, ``DumpsView.DecodeRequested``…); the app answers by
calling their methods. Commands go to the agent through
:class:`~aclmon.tui.agent_commands.AgentCommands`.

The views draw whatever store they are given, so another screen (a fleet
drill-down) can show one source's store in the same views.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any, ClassVar, Generic, TypeVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Event, Key, MouseDown, MouseScrollDown, MouseScrollUp
from textual.timer import Timer
from textual.widgets import ContentSwitcher

from aclmon import events as ev
from aclmon.bus.states import CONNECTED
from aclmon.errors import AclmonError
from aclmon.locations import keymap_path
from aclmon.sources.base import Source
from aclmon.sources.golden import GoldenCompare
from aclmon.store import Store
from aclmon.store.sections import PERIODIC_KINDS
from aclmon.store.slice_feed import SliceFeed
from aclmon.store.slice_index import IndexedTimeline
from aclmon.store.state import CallFailure, triage_of
from aclmon.tui.agent_commands import AgentCommands
from aclmon.tui.comparedetail import CompareDetail
from aclmon.tui.dump_files import DumpFiles
from aclmon.tui.footer import FittingFooter
from aclmon.tui.header import HeaderBar, TabBar
from aclmon.tui.help_sections import HelpSection, job_help_sections
from aclmon.tui.inert import InertApp
from aclmon.tui.keys import binding_rows as binding_rows  # tui/top.py imports it from here
from aclmon.tui.keys import (
    hidden_view_binding_ids,
    quit_bindings,
    view_bindings,
)
from aclmon.tui.options import DEFAULT_INTERVAL
from aclmon.tui.palette import AclmonCommands
from aclmon.tui.screens import (
    CallFailureDetail,
    ExceptionDetail,
    HelpScreen,
    LogLineDetail,
    related_dumps,
)
from aclmon.tui.slicedetail import SliceDetail
from aclmon.tui.themes import (
    DEFAULT_DARK,
    DEFAULT_LIGHT,
    DERIVED_VARIABLES,
    VARIABLE_DEFAULTS,
    load_themes,
)
from aclmon.tui.views import (
    VIEW_IDS,
    CompareView,
    DevicesView,
    DumpsView,
    ExceptionsView,
    HostView,
    LogsView,
    ProfilingView,
    TimelineView,
    View,
    shown_views,
)
from aclmon.tui.views.logs import lines_near, related_to_line, source_of
from aclmon.tui.vlist import VirtualList

#: events applied per refresh tick at most; the rest wait in the source's bounded queue.
MAX_BATCH = 50_000
#: seconds between refreshes once idle: no events but samples, no key, for IDLE_AFTER seconds
IDLE_INTERVAL = 1.0
IDLE_AFTER = 2.0
#: the share of each refresh interval the hidden Timeline's slices may fold for
TIMELINE_SHARE = 0.1
#: seconds between beats: the ticks on which the running figures (the header's,
#: each view's drawings asked for within their period) are drawn, all in that tick
BEAT_S = 1.0
ViewT = TypeVar("ViewT", bound=View)


class ViewOf(Generic[ViewT]):
    """An app attribute that is its shown view of one class."""

    def __init__(self, cls: type[ViewT]) -> None:
        self.cls = cls

    def __get__(self, app: AclmonApp, owner: object = None) -> ViewT:
        return next(v for v in app.views.values() if isinstance(v, self.cls))


#: the pair Ctrl+T switches between (the palette offers every theme).
THEME_PAIR = (DEFAULT_DARK, DEFAULT_LIGHT)
HERE = Path(__file__).parent


class AclmonApp(InertApp[int]):
    # Absolute: Textual resolves a relative path beside the subclass (replay/).
    # screens.tcss styles the modal screens, which the fleet screen shows too.
    CSS_PATH: ClassVar[list[str | PurePath]] = [HERE / "app.tcss", HERE / "screens.tcss"]
    TITLE = "aclmon"
    #: the views' drawings asked for within their period wait for the tick's beat
    #: (:class:`~aclmon.tui.views.base.AtMostEvery`)
    beats: ClassVar[bool] = True
    COMMANDS: ClassVar[set[Any]] = App.COMMANDS | {AclmonCommands}
    # The tab bar shows the view keys: the footer keeps its room for the view's
    # own keys, Help and Quit (which must fit at 80 columns).
    BINDINGS: ClassVar[list[BindingType]] = [
        *view_bindings(),
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("ctrl+t", "toggle_dark", "Dark/light", show=False, id="app.theme"),
        *quit_bindings("quit", "app"),
    ]

    def __init__(
        self,
        source: Source,
        *,
        interval: float = DEFAULT_INTERVAL,
        theme: str | None = None,
        keymap: dict[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        store: Store | None = None,
        start_view: str = "devices",
        max_batch: int = MAX_BATCH,
        group_dumps: bool = False,
        export_dir: str = "aclmon-export",
        open_jobs: bool = False,
        compare: GoldenCompare | None = None,
    ) -> None:
        super().__init__()
        if interval <= 0:
            raise AclmonError(f"--interval must be positive, not {interval}")
        self.source = source
        self.store = store or Store()
        #: the slices the Timeline view draws, fed the same events as the store
        self.slices = IndexedTimeline()
        self.slice_feed = SliceFeed(self.slices)
        self.interval = interval
        self.max_batch = max_batch
        self._clock = clock
        self._wanted_theme = theme or DEFAULT_DARK
        self._theme_chosen = theme is not None
        self.user_keymap = dict(keymap or {})
        #: the compare against a golden run (``--golden``), shown in the Compare view
        self.compare = compare
        #: the views this viewer shows, in tab order (Compare only with a golden run)
        self.view_entries = shown_views(golden=compare is not None)
        shown = [entry.id for entry in self.view_entries]
        self._start_view = start_view if start_view in shown else shown[0]
        self._group_dumps = group_dumps
        #: where a dump's tensors are exported (``e`` in the Dumps view)
        self.export_dir = os.path.abspath(export_dir)
        self.current_view = self._start_view
        self._painted_version: object = -1
        #: when events (other than periodic samples) or a key last came (``clock``)
        self._last_activity = clock()
        #: the repeating timer of the refreshes, and the ones made so far by interval
        #: (the fast one and the idle one: one runs, the other waits paused)
        self._tick_timer: Timer | None = None
        self._tick_timers: dict[float, Timer] = {}
        #: the interval of the running refresh timer
        self.refresh_interval = interval
        self._rate_samples: deque[tuple[float, int]] = deque(maxlen=64)
        self.events_per_s = 0.0
        #: when the last beat was (``clock``): the first tick beats
        self._beat_at = -BEAT_S
        #: commands to the agent (the Profiling view's)
        self.commands = AgentCommands(self)
        #: decodes and exports the dump files the views name
        self.dump_files = DumpFiles(self)
        self.theme_problems: list[str] = []
        self._started = False
        #: Enter on another job's process in the Host view exits with its pid here,
        #: for the caller to open that job's screens (``open_jobs``: it can)
        self.open_jobs = open_jobs
        self.open_pid: int | None = None
        #: run once the app has shown its first refresh (a fleet drill-down to what
        #: it was opened for)
        self.at_start: Callable[[AclmonApp], None] | None = None

    # ---------------------------------------------------------------- frame
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def get_css_variables(self) -> dict[str, str]:
        """Theme colours, with aclmon's own variables derived from the theme's
        palette when a theme (e.g. one of Textual's) does not set them."""
        variables = super().get_css_variables()
        theme = self.get_theme(self.theme)
        own = theme.variables if theme is not None else {}
        for name, source in DERIVED_VARIABLES.items():
            if name not in own and variables.get(source):
                variables[name] = variables[source]
        return variables

    def compose(self) -> ComposeResult:
        # Kept as attributes: while a modal screen is up, app queries search that screen.
        self.header = HeaderBar(id="header")
        self.tabs = TabBar({entry.id: entry.title for entry in self.view_entries}, id="tabs")
        self._switcher = ContentSwitcher(initial=self._start_view, id="views")
        self.views: dict[str, View] = {
            entry.id: entry.cls(id=entry.id) for entry in self.view_entries
        }
        yield self.header
        yield self.tabs
        with self._switcher:
            yield from self.views.values()
        yield FittingFooter()

    # The views whose messages the app answers, by class (the rest only by id).
    devices_view = ViewOf(DevicesView)
    exceptions_view = ViewOf(ExceptionsView)
    profiling_view = ViewOf(ProfilingView)
    dumps_view = ViewOf(DumpsView)
    logs_view = ViewOf(LogsView)
    timeline_view = ViewOf(TimelineView)
    host_view = ViewOf(HostView)
    compare_view = ViewOf(CompareView)

    def on_mount(self) -> None:
        themes, self.theme_problems = load_themes()
        for theme in themes.values():
            self.register_theme(theme)
        if self._wanted_theme not in self.available_themes:
            if self._theme_chosen:
                raise AclmonError(
                    f"unknown theme {self._wanted_theme!r};"
                    f" available: {', '.join(sorted(self.available_themes))}"
                )
            # Our theme files were not found (an unusual install): Textual's own will do.
            self._wanted_theme = "textual-dark"
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.theme = self._wanted_theme
        for problem in self.theme_problems:
            # Said once, at start: a broken theme file is skipped, not silently.
            self._report_once(f"theme skipped: {problem}")
        if self.user_keymap:
            # a keymap may name the keys of views this session does not show
            known = self.binding_ids() | hidden_view_binding_ids(self.view_entries)
            unknown = sorted(set(self.user_keymap) - known)
            if unknown:
                self._report_once(
                    f"keymap: unknown binding id(s) {', '.join(unknown)} (see ? for ids)"
                )
            self.set_keymap(self.user_keymap)
        app_keys = frozenset(
            key.strip()
            for cls in type(self).__mro__
            for b in cls.__dict__.get("BINDINGS", ())
            if isinstance(b, Binding)
            for key in self.user_keymap.get(b.id or "", b.key).split(",")
        )
        for view in self.views.values():
            view.keymap = dict(self.user_keymap)
            view.app_keys = app_keys
        self.profiling_view.readonly = self.host_view.readonly = self.source.readonly
        self.host_view.status_of = self.source.host_status
        self.dumps_view.grouped = self._group_dumps
        self.timeline_view.show_timeline(self.slices)
        self.tabs.current = self.current_view
        self.source.pace(self.interval)  # read ahead no more often than polled
        self.source.start()
        if self.compare is not None:
            self.compare_view.compare = self.compare
            self.compare.start()
        self._started = True
        self.tick()
        self._schedule_tick()
        self._focus_view()
        if self.at_start is not None:
            self.call_after_refresh(self.at_start, self)

    def on_unmount(self) -> None:
        self._started = False
        self.commands.close()
        self.source.close()
        if self.compare is not None:
            self.compare.close()

    def _report_once(self, message: str) -> None:
        """A problem with the viewer's own settings: a notice, and a warning line
        of aclmon's own in the Logs view (state, ``seq`` 0, stamped with the wall
        clock), where it stays to be read after the notice is gone."""
        self.log.warning(message)
        self.notify(message, severity="warning", timeout=8)
        self.store.apply(ev.LogLine(0, time.time_ns(), "warning", message, "aclmon"))

    def _theme_changed(self, theme: object) -> None:
        # Views colour their text from theme variables: repaint them in the new
        # colours, once they are there (the signal comes after the theme's CSS is
        # refreshed; a repaint before that, e.g. the first one, kept the old ones).
        self._painted_version = -1
        if self._started:
            self._repaint()

    def on_resize(self) -> None:
        # The header and the tables fit their content to the width.
        if self._started:
            self.call_after_refresh(self._repaint)

    def _repaint(self) -> None:
        if not self._live:
            return
        for vlist in self.query(VirtualList):
            vlist.clear_cache()
        for view in self.views.values():
            view.forget_drawn()  # drawn for the old width or colours: again when shown
        self.refresh_view(force=True)
        self.header.show(self.store, self.source, self.events_per_s, force=True)
        self.tabs.watch_current()

    # ---------------------------------------------------------------- refresh
    def _schedule_tick(self) -> None:
        """The refreshes: every ``interval`` while events arrive or keys are
        pressed, every IDLE_INTERVAL once neither happened for IDLE_AFTER seconds."""
        quiet = self._clock() - self._last_activity
        idle = quiet >= IDLE_AFTER and not self.keeps_refreshing()
        interval = max(self.interval, IDLE_INTERVAL) if idle else self.interval
        if self._tick_timer is not None and interval == self.refresh_interval:
            return  # the running timer goes on
        # Two repeating timers, one paused: a one-shot timer a tick (a Textual timer
        # is an asyncio task) cost the viewer ~0.3 ms of CPU a tick more.
        self.refresh_interval = interval
        if self._tick_timer is not None:
            self._tick_timer.pause()
        timer = self._tick_timers.get(interval)
        if timer is None:
            timer = self._tick_timers[interval] = self.set_interval(interval, self._timed_tick)
        else:
            timer.reset()  # resumed, its first tick an interval from now
        self._tick_timer = timer

    def _timed_tick(self) -> None:
        if not self._live:
            return
        self.tick()
        self._schedule_tick()

    def keeps_refreshing(self) -> bool:
        """Refresh at ``interval`` even with no events or keys (a replay playing)."""
        return False

    def note_activity(self) -> None:
        """A key or a click: refresh at ``interval`` again, from now."""
        self._last_activity = self._clock()
        if self._started and self.refresh_interval > self.interval:
            self._schedule_tick()

    async def on_event(self, event: Event) -> None:
        if isinstance(event, (Key, MouseDown, MouseScrollDown, MouseScrollUp)):
            self.note_activity()
        await super().on_event(event)

    def tick(self) -> None:
        """One refresh: poll, fold, header, repaint the visible view if needed."""
        if not self._live:
            return
        events = self.source.poll(self.max_batch)
        if events:
            self.store.apply_many(events)
            self.slice_feed.offer(events)
            if self.compare is not None:
                self.compare.offer(events)  # never blocks: a live compare queues the dump files
            if not PERIODIC_KINDS.issuperset(map(type, events)):
                self._last_activity = self._clock()
        # The Timeline's slices: all of them while it is shown, else a share of the tick
        shown = self.current_view == "timeline"
        self.slice_feed.fold(None if shown else self.interval * TIMELINE_SHARE)
        self.slice_feed.settle(time.time_ns())  # a quiet job's waiting operators go out by now
        self.store.note_decoder_counts(*self.source.decoder_counts())
        if self.store.state.goodbye is not None and self.source.state != CONNECTED:
            # The job said goodbye and the connection is gone: nothing to reconnect to.
            self.source.stop_reconnecting()
        now = self._clock()
        self._rate_samples.append((now, self.store.state.counters.events))
        while len(self._rate_samples) > 2 and now - self._rate_samples[0][0] > 2.0:
            self._rate_samples.popleft()
        first_t, first_n = self._rate_samples[0]
        self.events_per_s = (
            (self.store.state.counters.events - first_n) / (now - first_t) if now > first_t else 0.0
        )
        beat = self._beat(now)
        self.header.show(self.store, self.source, self.events_per_s, beat=beat)
        self.refresh_view(tabs=False)
        if beat:
            with self.batch_update():
                self.views[self.current_view].beat()
                self._update_tabs()

    def _beat(self, now: float) -> bool:
        """Whether this tick is a beat: the first tick after ``BEAT_S`` since the last
        one (less half a tick, so that ticks of a quarter second beat every fourth)."""
        if now - self._beat_at < BEAT_S - min(self.refresh_interval, BEAT_S) / 2:
            return False
        self._beat_at = now
        return True

    @property
    def _live(self) -> bool:
        """Mounted and not shutting down: a late timer tick or command reply
        must not touch widgets that are being removed. ``exit()`` sets ``_exit``;
        a shutdown that does not go through ``exit()`` (``run_test`` leaving its
        context, a driver closing) first stops the app running, then prunes the
        screens while timers may still fire, so both are checked."""
        return self._started and self.is_running and not getattr(self, "_exit", False)

    def refresh_view(self, force: bool = False, *, tabs: bool = True) -> None:
        """The visible view draws what moved in the store (everything: ``force``);
        the tab counts (unless not ``tabs``: the tick counts them on its beat) and a
        waiting exception detail follow the store."""
        if not self._live:
            return
        # a view may show more than the store (a compare's table): its version counts too
        version = (self.store.version, *(v.content_version() for v in self.views.values()))
        if not force and version == self._painted_version:
            return
        self._painted_version = version
        with self.batch_update():
            self.views[self.current_view].update_from(self.store, force=force)
            if tabs:
                self._update_tabs()
            detail = self.screen
            if isinstance(detail, ExceptionDetail) and detail.waiting:
                state = self.store.state
                detail.show_triage(triage_of(state, detail.exception), state.newest_ts_ns)

    def _update_tabs(self) -> None:
        state = self.store.state
        self.tabs.show_counts({view_id: v.tab_count(state) for view_id, v in self.views.items()})

    # ---------------------------------------------------------------- views
    def action_show_view(self, view: str) -> None:
        if view not in self.views:
            return
        self.current_view = view
        if view == "timeline":
            self.slice_feed.fold()  # what it fell behind by while hidden
        # One update of the screen: the views already built swap their display (none
        # is mounted or built again), the tab and the focus move, and the view draws
        # what moved since it was last shown (what it drew then stays).
        with self.batch_update():
            self._switcher.current = view
            self.tabs.current = view
            self._focus_view()
            self._painted_version = -1
            self.refresh_view()
            self.views[view].draw_waiting()

    @on(TabBar.Selected)
    def _tab_clicked(self, message: TabBar.Selected) -> None:
        self.action_show_view(message.view)

    def _focus_view(self) -> None:
        # set_focus now, not focus() (which waits a cycle): a key typed right
        # after the view key must reach the new view.
        self.set_focus(self.views[self.current_view].focus_target())

    def action_toggle_dark(self) -> None:
        """Switch between aclmon's dark and light themes (from any theme: to the dark one)."""
        dark, light = THEME_PAIR
        wanted = light if self.theme == dark else dark
        if wanted in self.available_themes:
            self.theme = wanted
        self.notify(f"theme {self.theme}", timeout=2)

    def binding_ids(self) -> set[str]:
        return {row[2] for _title, rows in self.help_sections() for row in rows if row[2]}

    def help_sections(self) -> list[HelpSection]:
        return job_help_sections(list(AclmonApp.BINDINGS), self.view_entries, self.user_keymap)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_sections(), str(keymap_path())))

    @on(ExceptionsView.Opened)
    def _open_exception(self, message: ExceptionsView.Opened) -> None:
        self.open_exception(message.exception)

    def open_exception(self, exception: ev.AclException) -> None:
        """The exception's detail, with its dump files and the log lines near it;
        ``l`` there goes on to the Logs view around it."""
        s = self.store.state
        dumps = related_dumps(exception, list(s.dumps))
        pid = self._job_pid()
        near = lines_near(list(s.logs), exception, pid)

        def closed(result: str | None) -> None:
            if result == "logs":
                self.show_logs_near(exception)
            elif result == "timeline":
                self.show_on_timeline(exception)

        self.push_screen(
            ExceptionDetail(
                exception,
                dumps,
                s.newest_ts_ns,
                near,
                self.store.runtime_message(exception),
                triage_of(s, exception),
            ),
            closed,
        )

    def open_call_failure(self, failure: CallFailure) -> None:
        """A failed call's detail, with the log lines near it."""
        s = self.store.state
        near = lines_near(list(s.logs), failure.event, self._job_pid())
        self.push_screen(CallFailureDetail(failure, s.newest_ts_ns, near))

    def show_on_timeline(self, exception: ev.AclException) -> None:
        self.action_show_view("timeline")
        if not self.timeline_view.show_event(exception):
            self.notify("the timeline does not hold this exception (yet)", timeout=3)

    @on(TimelineView.Opened)
    def _timeline_item_opened(self, message: TimelineView.Opened) -> None:
        item = message.item

        def closed(result: str | None) -> None:
            if result == "exception":
                self.open_exception(item.event)

        self.push_screen(SliceDetail(item), closed)

    def _job_pid(self) -> int:
        hello = self.store.state.hello
        return hello.pid if hello is not None else 0

    @on(ExceptionsView.LogsRequested)
    def _logs_requested(self, message: ExceptionsView.LogsRequested) -> None:
        self.show_logs_near(message.exception)

    def show_logs_near(self, exception: ev.AclException) -> None:
        self.logs_view.show_near(exception, self._job_pid())
        self.action_show_view("logs")

    @on(LogsView.LineOpened)
    def _line_opened(self, message: LogsView.LineOpened) -> None:
        """The line whole; from there ``e`` opens what it is about (an exception,
        else a failed call: :func:`~aclmon.tui.views.logs.related_to_line`)."""
        line = message.line
        exception, failure, related = related_to_line(line, self.store.state)

        def closed(result: str | None) -> None:
            if result != "related":
                return
            if exception is not None:
                self.open_exception(exception)
            elif failure is not None:
                self.open_call_failure(failure)

        self.push_screen(LogLineDetail(line, source_of(line), related), closed)

    @on(HostView.AttachRequested)
    def _attach_requested(self, message: HostView.AttachRequested) -> None:
        hello = self.store.state.hello
        if hello is not None and message.pid == hello.pid:
            self.action_show_view(VIEW_IDS[0])  # this job: its screens are here
        elif self.open_jobs:
            self.open_pid = message.pid
            self.exit(0)
        else:
            command = "attach" if message.agent else "watch"
            self.host_view.note = f"pid {message.pid}: open its screens with aclmon {command}"

    @on(CompareView.Opened)
    def _compare_opened(self, message: CompareView.Opened) -> None:
        if self.compare is not None:  # the view's rows are its table's
            self.push_screen(CompareDetail(message.row, self.compare.table.thresholds))

    @on(DumpsView.DecodeRequested)
    def _decode_requested(self, message: DumpsView.DecodeRequested) -> None:
        self.dump_files.decode(message.dump.path, message.dump.kind, self.dumps_view.show_detail)

    @on(DumpsView.ExportRequested)
    def _export_requested(self, message: DumpsView.ExportRequested) -> None:
        self.dump_files.export(message.dump.path, self.export_dir)

    @on(ExceptionDetail.DecodeRequested)
    def _detail_decode_requested(self, message: ExceptionDetail.DecodeRequested) -> None:
        self.dump_files.decode(message.dump.path, message.dump.kind, message.detail.show_decoded)

    # ---------------------------------------------------------------- commands
    @on(ProfilingView.ConfigRequested)
    def _config_requested(self, message: ProfilingView.ConfigRequested) -> None:
        self.commands.send_config(message.config)

    @on(ProfilingView.StartRequested)
    def _start_requested(self, message: ProfilingView.StartRequested) -> None:
        if message.config is not None:
            self.commands.send_config(message.config)
        self.commands.send(ev.StartProfiling)

    @on(ProfilingView.StopRequested)
    def _stop_requested(self) -> None:
        self.commands.send(ev.StopProfiling)

    def _call_ui(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn`` on the UI thread, from a worker thread."""
        # RuntimeError: the app already stopped, nobody is left to show it to.
        with contextlib.suppress(RuntimeError):
            self.call_from_thread(fn, *args)
