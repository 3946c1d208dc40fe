"""``aclmon top``'s screen, and moving from a host's processes to a job's screens.

:class:`TopApp` is the Host view on its own, as nvitop is on a GPU server: every
NPU and every process of this machine, read by a :class:`HostFeed` on its own
thread and folded into a store on the refresh timer. Enter on a process that
runs aclmon's agent opens that job's screens (the single-agent app, with the
Host view among them), Enter on one without it watches it (``aclmon watch``);
Esc there comes back. The same move works from the Host
view of ``attach`` and ``demo``: :func:`run_screens` is the loop that runs one
screen after another (Textual runs one app at a time), as the fleet's
drill-down does, and keeps what each screen reads open across the moves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from aclmon.host.feed import FeedReader, HostFeed
from aclmon.sources.base import KeptOpen, Source
from aclmon.sources.host import WithHost
from aclmon.store import Store
from aclmon.tui.app import AclmonApp, binding_rows, keymap_path
from aclmon.tui.footer import FittingFooter
from aclmon.tui.keys import quit_bindings
from aclmon.tui.screens import HelpScreen
from aclmon.tui.themes import DEFAULT_DARK, VARIABLE_DEFAULTS, use_themes
from aclmon.tui.views.filterbar import FilterBar
from aclmon.tui.views.host import HostView, SignalConfirm
from aclmon.tui.views.listview import FilteredView, ListView
from aclmon.tui.vlist import VirtualList

#: how often ``aclmon top`` folds new readings (the feed reads once a second)
TOP_INTERVAL = 0.5
#: in a job's screens opened from a Host view: back to where Enter was pressed
BACK_BINDING = Binding("escape", "go_back", "Back", id="jobs.back")


class TopApp(App[int]):
    """The Host view full screen; exits with ``open_pid`` set when Enter asks for a job."""

    CSS_PATH = AclmonApp.CSS_PATH
    CSS = "#top-title { height: 1; background: $panel; }"
    TITLE = "aclmon top"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark,f1", "help", "Help", id="top.help"),
        *quit_bindings("quit", "top"),
    ]

    def __init__(
        self,
        host: FeedReader,
        store: Store,
        *,
        readonly: bool = False,
        interval: float = TOP_INTERVAL,
        theme: str | None = None,
        keymap: dict[str, str] | None = None,
        note: str = "",
    ) -> None:
        super().__init__()
        self.host = host
        self.store = store
        self.readonly = readonly
        self.interval = interval
        self._wanted_theme = theme or DEFAULT_DARK
        self.user_keymap = dict(keymap or {})
        self._note = note
        self._painted = -1
        self.open_pid: int | None = None

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def compose(self) -> ComposeResult:
        self.title_bar = Static(id="top-title")
        self.view = HostView(id="npus")
        yield self.title_bar
        yield self.view
        yield FittingFooter()

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        use_themes(self, self._wanted_theme)
        if self.user_keymap:
            self.set_keymap(self.user_keymap)
            self.view.keymap = dict(self.user_keymap)
        self.view.readonly = self.readonly
        self.view.status_of = self.host.status
        self.view.note = self._note
        title = Text.assemble(
            (" aclmon top ", Style(bold=True)),
            " every NPU and process on this machine; Enter opens a process's job (◆: with the agent)",
        )
        title.no_wrap, title.overflow = True, "ellipsis"
        self.title_bar.update(title)
        self.tick()
        self.set_interval(self.interval, self.tick)
        self.set_focus(self.view.focus_target())

    def tick(self) -> None:
        if not self.is_running:
            return
        samples = self.host.take()
        if samples:
            self.store.apply_many(list(samples))
        if self.store.version != self._painted:
            self._painted = self.store.version
            self.view.update_from(self.store)
        self.view.follow_status()

    def _theme_changed(self, theme: object) -> None:
        # The view colours its text from theme variables, which arrive after the
        # first paint (as in AclmonApp): paint again in the theme's colours.
        self._painted = -1
        self.view.vlist.clear_cache()
        self.view.forget_drawn()
        self.tick()

    def help_sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        keymap = self.user_keymap
        return [
            ("Everywhere", binding_rows(list(TopApp.BINDINGS), keymap)),
            ("Processes", binding_rows([*VirtualList.BINDINGS, *HostView.BINDINGS], keymap)),
            ("Filter and sort", binding_rows([*FilteredView.BINDINGS, *ListView.BINDINGS], keymap)),
            ("Filter line (after /)", binding_rows(list(FilterBar.BINDINGS), keymap)),
            ("Before a signal", binding_rows(list(SignalConfirm.BINDINGS), keymap)),
        ]

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_sections(), str(keymap_path())))

    @on(HostView.AttachRequested)
    def _attach_requested(self, message: HostView.AttachRequested) -> None:
        self.open_pid = message.pid
        self.exit(0)


class HomeApp(AclmonApp):
    """The job ``attach``/``demo`` watches, whose Host view can open other jobs;
    ``note`` says in its Host view why the last one could not be opened."""

    def __init__(self, *args: Any, note: str = "", **kwargs: Any) -> None:
        super().__init__(*args, open_jobs=True, **kwargs)
        self._note = note

    def on_mount(self) -> None:  # before AclmonApp's own (Textual calls both)
        self.host_view.note = self._note


class JobApp(AclmonApp):
    """A job's screens opened from a Host view: Esc goes back (``went_back``)."""

    BINDINGS: ClassVar[list[BindingType]] = [*AclmonApp.BINDINGS, BACK_BINDING]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, open_jobs=True, **kwargs)
        self.went_back = False

    def action_go_back(self) -> None:  # not App.action_back, Textual's own
        self.went_back = True
        self.exit(0)


#: runs one app to its end (``lifetime.run_app`` in the command, ``App.run`` in tests)
Runner = Callable[[App[Any]], int]


def run_screens(
    home: Callable[[str], App[Any]], job: Callable[[int], App[Any]], run: Runner
) -> int:
    """``home`` (a note to show: why a job could not be opened) until the user quits;
    a pid it asks for opens ``job(pid)``, whose Esc comes back home and whose own
    Host view may move on to another job."""
    app = home("")
    code = run(app)
    home_pid = job_pid(app)
    while True:
        pid: int | None = getattr(app, "open_pid", None)
        if getattr(app, "went_back", False) or (pid is not None and pid == home_pid):
            app = home("")
        elif pid is not None:
            try:
                app = job(pid)
            except Exception as exc:  # no agent there any more: say so at home
                app = home(f"pid {pid}: {exc}")
        else:
            return code
        code = run(app)


def job_pid(app: App[Any]) -> int | None:
    """The pid of the job an app shows (None: no job, or not known yet)."""
    hello = app.store.state.hello if isinstance(app, AclmonApp) else None
    return hello.pid if hello is not None else None


def job_opener(
    feed: HostFeed, *, readonly: bool, token: str | None = None, **app_options: Any
) -> Callable[[int], App[Any]]:
    """``job(pid)`` for :func:`run_screens`: that agent's screens, the host included."""
    from aclmon.bus import registry
    from aclmon.sources.live import LiveSource

    def job(pid: int) -> App[Any]:
        if pid not in registry.agent_pids():
            # no agent: the job's logs, dumps and chips (aclmon watch)
            from aclmon.sources.watch import DevicesFromHost, WatchSource, find_target

            watched = WithHost(WatchSource(find_target(pid)), feed.reader())
            return JobApp(DevicesFromHost(watched, pid), **app_options)
        address = registry.resolve_target(str(pid))
        live = LiveSource(address, token=token, readonly=readonly)
        return JobApp(WithHost(live, feed.reader()), **app_options)

    return job


def run_top(
    feed: HostFeed,
    *,
    readonly: bool,
    theme: str | None,
    keymap: dict[str, str],
    interval: float = TOP_INTERVAL,
    run: Runner,
) -> int:
    """``aclmon top``: the host until the user quits, a job's screens in between."""
    store = Store()
    reader = feed.reader()

    def home(note: str) -> App[Any]:
        return TopApp(reader, store, readonly=readonly, interval=interval, theme=theme,
                      keymap=keymap, note=note)  # fmt: skip

    feed.start()
    try:
        return run_screens(
            home, job_opener(feed, readonly=readonly, theme=theme, keymap=keymap), run
        )
    finally:
        feed.close()


def run_job_screens(
    source: Any,
    feed: HostFeed,
    *,
    run: Runner,
    readonly: bool,
    token: str | None = None,
    home_options: dict[str, Any] | None = None,
    around_host: Callable[[Source], Source] | None = None,
    **app_options: Any,
) -> int:
    """``attach``/``demo``/``watch`` with the Host view: the job's screens are home,
    other jobs open from its Host view; the job's connection stays open meanwhile.
    ``home_options`` go to the job's own screens only (its compare, ``--golden``);
    ``around_host`` wraps the job's source with the host's readings in it (``watch``:
    the readings of the job's own chips as its device samples)."""
    kept = KeptOpen(source)
    home_source: Source = WithHost(kept, feed.reader())
    if around_host is not None:
        home_source = around_host(home_source)
    store = Store()

    def home(note: str) -> App[Any]:
        return HomeApp(home_source, store=store, note=note, **(home_options or {}), **app_options)

    feed.start()
    try:
        return run_screens(
            home, job_opener(feed, readonly=readonly, token=token, **app_options), run
        )
    finally:
        kept.release()
        feed.close()
