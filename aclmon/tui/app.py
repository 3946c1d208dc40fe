"""The aclmon Textual app: a frame (header, view tabs, footer) around four views.

Data flow: a timer polls the source (never blocking) every ``interval``
seconds, applies the batch to the store in one go, updates the header, and
repaints the visible view only if the store changed. Keys that change what is
shown repaint at once instead of waiting for the timer. Commands go to the
agent from one background thread, in the order they were given; replies come
back to the UI thread and into the store.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import ContentSwitcher, Footer, Static

from aclmon import events as ev
from aclmon.acl_constants import AICORE_METRICS, PROF_FLAGS, error_text
from aclmon.errors import AclmonError
from aclmon.store import Store
from aclmon.tui import fmt
from aclmon.tui.dumpdetail import decode_for_view, render_report
from aclmon.tui.palette import VIEW_TITLES, AclmonCommands
from aclmon.tui.screens import ExceptionDetail, HelpScreen, related_dumps
from aclmon.tui.sources import CONNECTED, DISCONNECTED, ENDED, Source
from aclmon.tui.themes import DEFAULT_DARK, VARIABLE_DEFAULTS, load_themes
from aclmon.tui.views import (
    METRIC_ORDER,
    DevicesView,
    DumpsView,
    ExceptionsView,
    ProfilingView,
    View,
    theme_style,
)
from aclmon.tui.vlist import VirtualList

DEFAULT_INTERVAL = 0.25
#: events applied per refresh tick at most; the rest wait in the source's bounded queue.
MAX_BATCH = 50_000
COMMAND_TIMEOUT = 3.0
VIEWS = tuple(VIEW_TITLES)


def keymap_path() -> Path:
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "aclmon" / "keymap.json"


def load_keymap(path: Path, *, required: bool = False) -> dict[str, str]:
    """``{"binding id": "key[,key…]"}`` from a JSON file (missing and optional: empty)."""
    if not path.exists() and not required:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AclmonError(f"keymap {path}: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in data.items()
    ):
        raise AclmonError(f'keymap {path}: expected {{"binding id": "keys", …}}')
    return data


class AclmonApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "aclmon"
    COMMANDS: ClassVar[set[Any]] = App.COMMANDS | {AclmonCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "show_view('devices')", "Devices", id="view.devices"),
        Binding("2", "show_view('exceptions')", "Exceptions", id="view.exceptions"),
        Binding("3", "show_view('profiling')", "Profiling", id="view.profiling"),
        Binding("4", "show_view('dumps')", "Dumps", id="view.dumps"),
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("ctrl+t", "next_theme", "Theme", id="app.theme"),
        Binding("q", "quit", "Quit", id="app.quit"),
        # A monitor quits on Ctrl+C like any terminal tool (Textual's default only hints).
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="app.interrupt"),
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
    ) -> None:
        super().__init__()
        if interval <= 0:
            raise AclmonError(f"--interval must be positive, not {interval}")
        self.source = source
        self.store = store or Store()
        self.interval = interval
        self.max_batch = max_batch
        self._clock = clock
        self._wanted_theme = theme or DEFAULT_DARK
        self._theme_chosen = theme is not None
        self._keymap = dict(keymap or {})
        self._start_view = start_view if start_view in VIEWS else "devices"
        self.current_view = self._start_view
        self._painted_version = -1
        self._rate_samples: deque[tuple[float, int]] = deque(maxlen=64)
        self.events_per_s = 0.0
        self._command_numbers = itertools.count(1)
        self._last_command = 0
        self._commands = ThreadPoolExecutor(max_workers=1, thread_name_prefix="aclmon-commands")
        self.command_note = ""
        self.prof_flags = 0
        self.prof_metric = METRIC_ORDER[0]
        self.prof_devices: tuple[int, ...] = ()
        self._prof_seen: ev.ProfilingState | None = None
        self.dump_detail_shown = False
        self.theme_problems: list[str] = []
        self._header_text = ""
        self._started = False

    # ---------------------------------------------------------------- frame
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def get_css_variables(self) -> dict[str, str]:
        """Theme colours, with aclmon's own variables derived from the theme's
        palette when a theme (e.g. one of Textual's) does not set them."""
        variables = super().get_css_variables()
        theme = self.get_theme(self.theme)
        own = theme.variables if theme is not None else {}
        derived = {
            "aclmon-busy": "warning",
            "aclmon-sync": "secondary",
            "aclmon-idle": "success",
            "aclmon-dim": "foreground-muted",
            "aclmon-spark": "primary",
            "aclmon-bar": "primary",
            "aclmon-bar-empty": "panel-lighten-1",
            "aclmon-bad": "error",
            "aclmon-cursor": "primary-muted",
        }
        for name, source in derived.items():
            if name not in own and variables.get(source):
                variables[name] = variables[source]
        return variables

    def compose(self) -> ComposeResult:
        # Kept as attributes: while a modal screen is up, app queries search that screen.
        self._header = Static(id="header")
        self._tabs = Static(id="tabs")
        self._switcher = ContentSwitcher(initial=self._start_view, id="views")
        self.devices_view = DevicesView(id="devices")
        self.exceptions_view = ExceptionsView(id="exceptions")
        self.profiling_view = ProfilingView(id="profiling")
        self.dumps_view = DumpsView(id="dumps")
        self.views: dict[str, View] = {
            "devices": self.devices_view,
            "exceptions": self.exceptions_view,
            "profiling": self.profiling_view,
            "dumps": self.dumps_view,
        }
        yield self._header
        yield self._tabs
        with self._switcher:
            yield from self.views.values()
        yield Footer()

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
        self.theme = self._wanted_theme
        if self._keymap:
            self.set_keymap(self._keymap)
        self.source.start()
        self._started = True
        self.tick()
        self.set_interval(self.interval, self.tick)
        self._focus_view()

    def on_unmount(self) -> None:
        self._started = False
        self._commands.shutdown(wait=False, cancel_futures=True)
        self.source.close()

    def watch_theme(self, theme: str) -> None:
        # Views colour their text from theme variables: repaint them in the new colours.
        self._painted_version = -1
        if self._started:
            self.call_after_refresh(self._repaint)

    def on_resize(self) -> None:
        # The header and the device table fit their content to the width.
        if self._started:
            self.call_after_refresh(self._repaint)

    def _repaint(self) -> None:
        if not self._live:
            return
        self._header_text = ""  # same text, new colours: draw it again
        for vlist in (self.exceptions_view.vlist, self.dumps_view.vlist):
            vlist.clear_cache()
        self.refresh_view(force=True)
        self._update_header()

    # ---------------------------------------------------------------- refresh
    def tick(self) -> None:
        """One refresh: poll, fold, header, repaint the visible view if needed."""
        if not self._live:
            return
        events = self.source.poll(self.max_batch)
        if events:
            self.store.apply_many(events)
        self.store.note_decoder_counts(*self.source.decoder_counts())
        now = self._clock()
        self._rate_samples.append((now, self.store.state.counters.events))
        while len(self._rate_samples) > 2 and now - self._rate_samples[0][0] > 2.0:
            self._rate_samples.popleft()
        first_t, first_n = self._rate_samples[0]
        self.events_per_s = (
            (self.store.state.counters.events - first_n) / (now - first_t) if now > first_t else 0.0
        )
        self._sync_profiling()
        self._update_header()
        self.refresh_view()

    @property
    def _live(self) -> bool:
        """Mounted and not shutting down: a late timer tick or command reply
        must not touch widgets that are being removed. ``exit()`` sets ``_exit``;
        a shutdown that does not go through ``exit()`` (``run_test`` leaving its
        context, a driver closing) first stops the app running, then prunes the
        screens while timers may still fire, so both are checked."""
        return self._started and self.is_running and not getattr(self, "_exit", False)

    def refresh_view(self, force: bool = False) -> None:
        if not self._live:
            return
        version = self.store.version
        if not force and version == self._painted_version:
            return
        self._painted_version = version
        with self.batch_update():
            self.views[self.current_view].update_from(self.store)
            self._update_tabs()

    def _sync_profiling(self) -> None:
        prof = self.store.state.profiling
        if prof is not None and prof is not self._prof_seen:
            # The agent's state is the truth: what we asked for is now what it has.
            self._prof_seen = prof
            self.prof_flags = prof.flags
            self.prof_metric = prof.aicore_metrics
            self.prof_devices = tuple(prof.devices)

    def _update_header(self) -> None:
        s = self.store.state
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad", bold=True)
        good = theme_style(self, "aclmon-idle", bold=True)
        # Narrow terminals keep what matters most: target, connection, rate, losses.
        compact = self.size.width < 130
        text = Text(" aclmon ", style=Style(bold=True))
        if s.hello is not None:
            h = s.hello
            text.append(f" {h.host}:{h.pid} ", style=Style(bold=True))
            if compact:
                text.append(h.runtime, style=dim)
            else:
                text.append(f"{h.runtime} · {h.soc_name} ×{h.device_count}", style=dim)
        else:
            text.append(f" {self.source.description}", style=dim)
        state = self.source.state
        text.append("  │ ", style=dim)
        if state == CONNECTED:
            text.append("● connected", style=good)
        elif state == ENDED:
            text.append("■ ended", style=dim)
        elif state == DISCONNECTED:
            text.append("● disconnected, reconnecting…", style=bad)
        else:
            text.append(f"● {state}", style=theme_style(self, "aclmon-busy", bold=True))
        reason = getattr(self.source, "state_reason", "")
        if reason and state != CONNECTED:
            text.append(f" ({reason[:60]})", style=dim)
        c = s.counters
        text.append("  │ ", style=dim)
        text.append(f"{fmt.count(self.events_per_s)} ev/s", style=Style(bold=True))
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
        if self.source.recording:
            text.append("  │ ", style=dim)
            text.append("⏺ REC", style=bad)
        if self.source.readonly:
            text.append("  │ read-only", style=dim)
        if s.newest_ts_ns and not compact:
            text.append(f"  │ {fmt.utc_time(s.newest_ts_ns, with_ms=False)} UTC", style=dim)
        plain = text.plain
        if plain != self._header_text:
            self._header_text = plain
            self._header.update(text)

    def _update_tabs(self) -> None:
        s = self.store.state
        counts = {
            "exceptions": f" ({s.exceptions_total})" if s.exceptions_total else "",
            "dumps": f" ({s.dumps_total})" if s.dumps_total else "",
            "profiling": " ●" if s.profiling is not None and s.profiling.running else "",
            "devices": f" ({len(s.devices)})" if s.devices else "",
        }
        active = theme_style(self, "footer-key-foreground", bold=True, reverse=True)
        dim = theme_style(self, "aclmon-dim")
        text = Text()
        for n, view in enumerate(VIEWS, start=1):
            label = f" {n} {VIEW_TITLES[view]}{counts[view]} "
            text.append(label, style=active if view == self.current_view else dim)
            text.append(" ")
        self._tabs.update(text)

    # ---------------------------------------------------------------- views
    def action_show_view(self, view: str) -> None:
        if view not in VIEWS:
            return
        self.current_view = view
        self._switcher.current = view
        self._focus_view()
        self.refresh_view(force=True)

    def _focus_view(self) -> None:
        widget = self.views[self.current_view]
        vlists = widget.query(VirtualList)
        # set_focus now, not focus() (which waits a cycle): a key typed right
        # after the view key must reach the new view.
        self.set_focus(vlists.first() if vlists else widget)

    def jump_to_device(self, device_id: int) -> None:
        self.action_show_view("devices")
        self.call_after_refresh(self.devices_view.jump_to_device, device_id)

    def action_next_theme(self) -> None:
        names = sorted(self.available_themes)
        index = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(index + 1) % len(names)]
        self.notify(f"theme {self.theme}", timeout=2)

    def help_sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        def rows(bindings: list[Any]) -> list[tuple[str, str, str]]:
            out = []
            for b in bindings:
                if not isinstance(b, Binding):
                    continue
                keys = self._keymap.get(b.id or "", b.key)
                out.append((keys.replace("question_mark", "?"), b.description, b.id or ""))
            return out

        return [
            (
                "Everywhere",
                [
                    *rows(list(AclmonApp.BINDINGS)),
                    ("ctrl+p", "Command palette", ""),
                    ("ctrl+q", "Quit", ""),
                ],
            ),
            ("Lists (exceptions, dumps)", rows(list(VirtualList.BINDINGS))),
            ("Devices view", rows(list(DevicesView.BINDINGS))),
            ("Exceptions view", rows(list(ExceptionsView.BINDINGS))),
            ("Profiling view", rows(list(ProfilingView.BINDINGS))),
            ("Exception detail", rows(list(ExceptionDetail.BINDINGS))),
        ]

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_sections(), str(keymap_path())))

    @on(VirtualList.Selected, "#exceptions-list")
    def _open_exception(self, message: VirtualList.Selected) -> None:
        view = self.exceptions_view
        exception = view.exception_at(message.index)
        if exception is not None:
            dumps = related_dumps(exception, list(self.store.state.dumps))
            self.push_screen(ExceptionDetail(exception, dumps, self.store.state.newest_ts_ns))

    @on(VirtualList.Selected, "#dumps-list")
    def _open_dump(self, message: VirtualList.Selected) -> None:
        view = self.dumps_view
        dump = view.dump_at(message.index)
        if dump is None:
            return
        self.dump_detail_shown = True
        view.vlist.set_follow(False)  # new files must not replace what is being read
        view.show_detail(
            Text(f"decoding {os.path.basename(dump.path)}…", style=theme_style(self, "aclmon-dim"))
        )
        self._decode_dump(dump.path, dump.kind)

    @work(thread=True, exclusive=True, group="dump-decode")
    def _decode_dump(self, path: str, kind: str) -> None:
        report = decode_for_view(path, kind)
        self.call_from_thread(self._show_dump_report, report)

    def _show_dump_report(self, report: Any) -> None:
        styles = {
            "dim": theme_style(self, "aclmon-dim"),
            "bad": theme_style(self, "aclmon-bad", bold=True),
        }
        self.dumps_view.show_detail(render_report(report, styles))

    # ---------------------------------------------------------------- commands
    def send_command(self, cls: type, *fields: Any) -> int | None:
        """Send a command (fields after ``request_id``) to the agent in the
        background; the reply lands in the store. Returns the app's own number
        for it, or None when read-only."""
        if self.source.readonly:
            self.command_note = "read-only: command not sent"
            self.refresh_view(force=True)
            return None
        number = self._last_command = next(self._command_numbers)
        self.command_note = f"{ev.KIND_NAMES[cls]} sent, waiting for the agent…"
        self._commands.submit(self._send_blocking, cls, number, fields)
        self.refresh_view(force=True)
        return number

    def _send_blocking(self, cls: type, number: int, fields: tuple[Any, ...]) -> None:
        name = ev.KIND_NAMES[cls]
        try:
            reply = self.source.send_command(cls, *fields, timeout=COMMAND_TIMEOUT)
        except AclmonError as exc:
            self._call_ui(self._command_failed, number, f"{name}: {exc}")
        except Exception as exc:  # a broken connection must not kill the command thread
            self._call_ui(self._command_failed, number, f"{name}: {type(exc).__name__}: {exc}")
        else:
            self._call_ui(self._command_replied, number, reply)

    def _call_ui(self, fn: Callable[..., None], *args: Any) -> None:
        # RuntimeError: the app already stopped, nobody is left to show it to.
        with contextlib.suppress(RuntimeError):
            self.call_from_thread(fn, *args)

    def _command_replied(self, number: int, reply: ev.Reply) -> None:
        # The same reply also arrives in the event stream, in sequence; this copy
        # is applied out of band, so it must not take part in gap counting.
        self.store.apply(reply._replace(seq=0))
        if number == self._last_command:
            self.command_note = ""
        if reply.code != 0:
            self.notify(f"{error_text(reply.code)}\n{reply.message}", severity="error", timeout=6)
        self.refresh_view(force=True)

    def _command_failed(self, number: int, message: str) -> None:
        self.command_note = message
        self.refresh_view(force=True)

    def _send_config(self) -> None:
        self.send_command(
            ev.SetProfilingConfig, self.prof_flags, self.prof_metric, self.prof_devices, 0
        )

    def action_toggle_flag(self, value: int) -> None:
        if value not in {v for _, v in PROF_FLAGS}:
            return
        self.prof_flags ^= value
        self._send_config()

    def set_metric(self, metric: int) -> None:
        if metric in AICORE_METRICS:
            self.prof_metric = metric
            self._send_config()

    def action_next_metric(self) -> None:
        index = METRIC_ORDER.index(self.prof_metric) if self.prof_metric in METRIC_ORDER else -1
        self.set_metric(METRIC_ORDER[(index + 1) % len(METRIC_ORDER)])

    def action_next_devices(self) -> None:
        """Cycle: every device in use -> device 0 -> device 1 -> … -> every device."""
        ids = self.store.device_ids()
        if not ids:
            choices: list[tuple[int, ...]] = [()]
        else:
            choices = [(), *((i,) for i in ids)]
        index = choices.index(self.prof_devices) if self.prof_devices in choices else -1
        self.prof_devices = choices[(index + 1) % len(choices)]
        self._send_config()

    def action_toggle_profiling(self) -> None:
        prof = self.store.state.profiling
        if prof is not None and prof.running:
            self.send_command(ev.StopProfiling)
        else:
            self.send_command(ev.StartProfiling)
