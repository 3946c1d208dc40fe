"""The four views. Each one reads the store when the app asks it to (on the
refresh timer, only while visible) and turns keys into app actions."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from rich.tree import Tree
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from aclmon import events as ev
from aclmon.acl_constants import (
    AICORE_METRICS,
    PROF_FLAGS,
    data_type_name,
    error_name,
    error_text,
    format_name,
)
from aclmon.store import Store
from aclmon.store.state import (
    STREAM_BUSY,
    STREAM_DESTROYED,
    STREAM_IDLE,
    STREAM_SYNCHRONIZING,
    StoreState,
)
from aclmon.tui import fmt
from aclmon.tui.dumpdetail import render_summary
from aclmon.tui.vlist import VirtualList

if TYPE_CHECKING:
    from aclmon.tui.app import AclmonApp

#: the key of each ACL_PROF_* toggle, in header order (p, m, v and q are taken).
FLAG_KEYS: tuple[str, ...] = tuple("abcdefghijklnorstu")
assert len(FLAG_KEYS) == len(PROF_FLAGS)
#: metric cycle order for the selector.
METRIC_ORDER: tuple[int, ...] = tuple(AICORE_METRICS)
TOP_OPS = 25


def theme_style(widget: Widget, variable: str, **extra: Any) -> Style:
    """A Rich style coloured by one of the current theme's variables."""
    value = widget.app.theme_variables.get(variable)
    color = None
    if value:
        try:
            color = Color.parse(value).rich_color
        except Exception:  # a theme with an unparseable value: fall back to no colour
            color = None
    return Style(color=color, **extra)


class View(Vertical):
    """Base of a view: ``update_from`` is called with the store when it changed."""

    def update_from(self, store: Store) -> None:
        raise NotImplementedError

    @property
    def aclmon(self) -> AclmonApp:
        return self.app  # type: ignore[return-value]


# -------------------------------------------------------------------- devices
class DevicesView(View):
    """Devices table with sparklines and HBM bars, the host process, models, and
    a context -> stream tree per device."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "scroll(1)", "Down", show=False, id="devices.down"),
        Binding("up,k", "scroll(-1)", "Up", show=False, id="devices.up"),
    ]
    can_focus = True

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="devices-scroll"):
            yield Static(id="device-table", classes="panel")
            yield Static(id="host-line", classes="panel")
            yield Static(id="models", classes="panel")
            yield Static(id="logs", classes="panel")
            yield Vertical(id="trees")

    def action_scroll(self, delta: int) -> None:
        self.query_one("#devices-scroll", VerticalScroll).scroll_relative(y=delta, animate=False)

    def jump_to_device(self, device_id: int) -> bool:
        trees = self.query(f"#device-tree-{device_id}")
        if not trees:
            return False
        self.query_one("#devices-scroll", VerticalScroll).scroll_to_widget(
            trees.first(), animate=False, top=True
        )
        return True

    def update_from(self, store: Store) -> None:
        s = store.state
        self.query_one("#device-table", Static).update(self._device_table(s))
        self.query_one("#host-line", Static).update(self._host_line(s))
        self.query_one("#models", Static).update(self._models(s))
        logs = self.query_one("#logs", Static)
        logs.display = bool(s.logs)
        if s.logs:
            logs.update(self._logs(s))
        trees = self.query_one("#trees", Vertical)
        wanted = {f"device-tree-{device_id}" for device_id in s.devices}
        for child in list(trees.children):
            if child.id not in wanted:  # the state started afresh (another process)
                child.remove()
        for device_id in sorted(s.devices):
            renderable = self._tree(s, device_id)
            found = trees.query(f"#device-tree-{device_id}")
            if found:
                found.first(Static).update(renderable)
            else:
                trees.mount(Static(renderable, id=f"device-tree-{device_id}", classes="tree"))

    def _device_table(self, s: StoreState) -> RenderableType:
        dim = theme_style(self, "aclmon-dim")
        spark = theme_style(self, "aclmon-spark")
        bar_style = theme_style(self, "aclmon-bar")
        empty = theme_style(self, "aclmon-bar-empty")
        bad = theme_style(self, "aclmon-bad", bold=True)
        good = theme_style(self, "aclmon-idle")
        # Fit the width: the SoC column only when wide (the header names it too),
        # sparklines take what is left (4..24 samples).
        width = self.size.width or 140
        show_soc = width >= 140
        fixed = 75 + (14 if show_soc else 0)
        spark_width = max(4, min(24, (width - fixed) // 3))
        table = Table(box=None, expand=True, pad_edge=False, header_style=dim + Style(bold=True))
        columns = [("DEV", "right", 3), ("SoC", "left", 10), ("HEALTH", "left", 6),
                   ("AI CORE", "left", spark_width + 5), ("VECTOR", "left", spark_width + 5),
                   ("AI CPU", "left", spark_width + 5), ("HBM used / total", "left", 24),
                   ("TEMP", "right", 4), ("POWER", "right", 5)]  # fmt: skip
        if not show_soc:
            del columns[1]
        for name, justify, min_width in columns:
            table.add_column(name, justify=justify, no_wrap=True, min_width=min_width)  # type: ignore[arg-type]
        soc = [s.hello.soc_name if s.hello else "?"] if show_soc else []
        if not s.devices:
            table.add_row("", Text("waiting for the first device sample…", style=dim))
        for device_id in sorted(s.devices):
            d = s.devices[device_id]
            sample = d.sample
            if sample is None:
                state = "reset" if d.reset else ("set" if d.set_ret == 0 else "no sample yet")
                table.add_row(str(device_id), *soc, Text(state, style=dim))
                continue
            health = Text(sample.health, style=good if sample.health == "OK" else bad)

            def util(history: Any, latest: int) -> Text:
                if latest < 0:
                    return Text("n/a", style=dim)
                text = Text(fmt.sparkline(history, spark_width), style=spark)
                text.append(f" {latest:3d}%")
                return text

            filled, rest = fmt.bar(
                sample.hbm_used / sample.hbm_total if sample.hbm_total else 0, 10
            )
            hbm = Text(filled, style=bar_style)
            hbm.append(rest.replace(" ", "░"), style=empty)
            hbm.append(f" {fmt.size_pair(sample.hbm_used, sample.hbm_total)}")
            table.add_row(
                str(device_id),
                *soc,
                health,
                util(d.cube_history, sample.cube_util),
                util(d.vector_history, sample.vector_util),
                util(d.aicpu_history, sample.aicpu_util),
                hbm,
                "–" if sample.temperature_c is None else f"{sample.temperature_c:.0f}°C",
                "–" if sample.power_w is None else f"{sample.power_w:.0f} W",
            )
        return table

    def _host_line(self, s: StoreState) -> RenderableType:
        dim = theme_style(self, "aclmon-dim")
        text = Text("HOST  ", style=dim + Style(bold=True))
        if s.hello:
            text.append(f"pid {s.hello.pid} on {s.hello.host}  ")
            text.append(" ".join(s.hello.argv)[:60], style=dim)
            text.append("  ")
        if s.host is None:
            text.append("no host sample yet", style=dim)
            return text
        text.append("cpu ")
        text.append(
            fmt.sparkline(s.host_cpu_history, 12, top=100.0),
            style=theme_style(self, "aclmon-spark"),
        )
        text.append(
            f" {s.host.cpu_percent:5.1f}%   rss {fmt.size(s.host.rss)}   threads {s.host.threads}"
        )
        return text

    def _logs(self, s: StoreState) -> RenderableType:
        """The agent's newest log lines (warnings and errors stand out)."""
        dim = theme_style(self, "aclmon-dim")
        styles = {"error": theme_style(self, "aclmon-bad", bold=True),
                  "warning": theme_style(self, "aclmon-busy")}  # fmt: skip
        text = Text("LOG  ", style=dim + Style(bold=True))
        for n, line in enumerate(list(s.logs)[-3:]):
            if n:
                text.append("\n     ")
            text.append(f"{fmt.utc_time(line.ts_ns, with_ms=False)} {line.level:<7} ", style=dim)
            text.append(line.text[:200], style=styles.get(line.level, Style()))
        return text

    def _models(self, s: StoreState) -> RenderableType:
        dim = theme_style(self, "aclmon-dim")
        text = Text("MODELS  ", style=dim + Style(bold=True))
        loaded = [m for m in s.models.values() if m.loaded]
        if not loaded:
            text.append("none loaded", style=dim)
            return text
        running = sum(1 for m in loaded if m.running)
        runs = sum(m.executions for m in loaded)
        failed = sum(m.failures for m in loaded)
        text.append(f"{len(loaded)} loaded · ")
        text.append(
            f"{running} running", style=theme_style(self, "aclmon-busy") if running else dim
        )
        text.append(f" · {runs} runs · ")
        text.append(f"{failed} failed", style=theme_style(self, "aclmon-bad") if failed else dim)
        text.append("   (per device below)", style=dim)
        return text

    def _tree(self, s: StoreState, device_id: int) -> RenderableType:
        dim = theme_style(self, "aclmon-dim")
        bad = theme_style(self, "aclmon-bad")
        state_styles = {
            STREAM_IDLE: theme_style(self, "aclmon-idle"),
            STREAM_BUSY: theme_style(self, "aclmon-busy", bold=True),
            STREAM_SYNCHRONIZING: theme_style(self, "aclmon-sync", bold=True),
            STREAM_DESTROYED: dim,
        }
        device = s.devices[device_id]
        label = Text(f"device {device_id}", style=Style(bold=True))
        if device.set_ret not in (None, 0):
            label.append(f"  set_device failed: {error_name(device.set_ret)}", style=bad)
        if device.reset:
            label.append("  (reset)", style=dim)
        tree = Tree(label, guide_style=dim)
        contexts = [c for c in s.contexts.values() if c.device_id == device_id]
        if not contexts:
            tree.add(Text("no contexts yet", style=dim))
        for ctx in contexts:
            ctx_label = Text(f"context 0x{ctx.context:x}")
            if ctx.is_default:
                ctx_label.append(" default", style=dim)
            if ctx.destroyed:
                ctx_label.append(" destroyed", style=dim)
            if ctx.threads:
                ctx_label.append(f"  {len(ctx.threads)} thread(s)", style=dim)
            branch = tree.add(ctx_label)
            for handle in ctx.streams:
                stream = s.streams.get((ctx.context, handle))
                if stream is None:
                    continue
                line = Text(f"stream {stream.stream_id:<3d} ")
                line.append(f"{stream.state:<13}", style=state_styles.get(stream.state, dim))
                if stream.busy_model is not None:
                    line.append(f" model #{stream.busy_model}", style=dim)
                line.append(f" last sync {fmt.duration_ns(stream.last_sync_ns):>9}", style=dim)
                line.append(f"  {stream.syncs} syncs", style=dim)
                if stream.errors:
                    line.append(
                        f"  {stream.errors} error(s), last {error_name(stream.last_error)}",
                        style=bad,
                    )
                branch.add(line)
        models = [m for m in s.models.values() if m.loaded and m.device_id == device_id]
        if models:
            branch = tree.add(Text(f"models ({len(models)})", style=dim))
            for m in models:
                line = Text(m.name, style=Style(bold=True))
                line.append(f" #{m.model_id}", style=dim)
                line.append(
                    f"  {m.executions} runs  last {fmt.duration_ns(m.last_duration_ns)}", style=dim
                )
                if m.op_count:
                    line.append(f"  {m.op_count} ops", style=dim)
                if m.running:
                    line.append("  running", style=state_styles[STREAM_BUSY])
                if m.failures:
                    line.append(f"  {m.failures} failed", style=bad)
                branch.add(line)
        return tree


# -------------------------------------------------------------------- exceptions
class ExceptionsView(View):
    """Live tail of exceptions; Enter opens the detail."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "toggle_follow", "Follow", id="exceptions.follow"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._store: Store | None = None
        self._rows: list[ev.AclException] = []
        self._offset = 0
        self._total_when_left = 0

    def compose(self) -> ComposeResult:
        yield Static(id="exceptions-status", classes="status")
        yield Static(self._column_header(), id="exceptions-header", classes="colhead")
        yield VirtualList(self._render_row, id="exceptions-list")

    @staticmethod
    def _column_header() -> Text:
        return Text(
            f" {'TIME (UTC)':<12}  {'DEV':>3}  {'STREAM':>6}  {'TASK':>6}  {'CODE':>6}  "
            f"{'ERROR':<36}  {'OP TYPE':<16}  OP NAME",
            style="bold",
        )

    @property
    def vlist(self) -> VirtualList:
        return self.query_one("#exceptions-list", VirtualList)

    def on_focus(self) -> None:
        self.vlist.focus()

    def action_toggle_follow(self) -> None:
        vlist = self.vlist
        if vlist.follow:
            vlist.follow = False
            self._total_when_left = self._store.state.exceptions_total if self._store else 0
        else:
            vlist.follow = True
            vlist.action_last()
        self._update_status()

    def on_virtual_list_follow_changed(self, message: VirtualList.FollowChanged) -> None:
        if not message.follow and self._store is not None:
            self._total_when_left = self._store.state.exceptions_total
        self._update_status()

    def exception_at(self, index: int) -> ev.AclException | None:
        row = index - self._offset
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def update_from(self, store: Store) -> None:
        self._store = store
        s = store.state
        # One copy per refresh: deque indexing is O(n) away from the ends.
        self._rows = list(s.exceptions)
        self._offset = s.exceptions_dropped
        self.vlist.set_rows(self._offset, len(self._rows))
        self._update_status()

    def _update_status(self) -> None:
        if self._store is None:
            return
        s = self._store.state
        dim = theme_style(self, "aclmon-dim")
        text = Text()
        text.append(f"{s.exceptions_total} exception(s)", style=Style(bold=True))
        if s.exceptions_dropped:
            text.append(
                f"  ·  {s.exceptions_dropped} older dropped (keeping {s.exception_limit})",
                style=dim,
            )
        if self.vlist.follow:
            text.append("  ·  following", style=theme_style(self, "aclmon-idle"))
        else:
            new = s.exceptions_total - self._total_when_left
            text.append("  ·  paused", style=theme_style(self, "aclmon-busy"))
            if new > 0:
                text.append(f"  ·  {new} new", style=theme_style(self, "aclmon-bad", bold=True))
            text.append("  (f or End to follow)", style=dim)
        self.query_one("#exceptions-status", Static).update(text)

    def _render_row(self, index: int, width: int) -> Text:
        e = self.exception_at(index)
        if e is None:
            return Text("")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {fmt.utc_time(e.ts_ns):<12}  ", style=theme_style(self, "aclmon-dim"))
        text.append(f"{e.device_id:>3}  {e.stream_id:>6}  {e.task_id:>6}  {e.error_code:>6}  ")
        text.append(f"{error_name(e.error_code)[:36]:<36}  ", style=theme_style(self, "aclmon-bad"))
        text.append(f"{(e.op_type or '–')[:16]:<16}  ")
        text.append(e.op_name, style=Style(bold=True))
        return text


# -------------------------------------------------------------------- profiling
class ProfilingView(View):
    """ACL_PROF_* toggles, AI Core metric, devices, start/stop, reply, op timings."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "app.toggle_profiling", "Start/stop", id="profiling.start_stop"),
        Binding("m", "app.next_metric", "Metric", id="profiling.metric"),
        Binding("v", "app.next_devices", "Prof. devices", id="profiling.devices"),
        *(
            Binding(key, f"app.toggle_flag({value})", f"Toggle {name}",
                    show=False, id=f"profiling.flag.{name.removeprefix('ACL_PROF_').lower()}")
            for key, (name, value) in zip(FLAG_KEYS, PROF_FLAGS, strict=True)
        ),
    ]  # fmt: skip
    can_focus = True

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="prof-state", classes="panel")
            yield Static(id="prof-flags", classes="panel")
            yield Static(id="prof-reply", classes="panel")
            yield Static(id="prof-ops", classes="panel")

    def update_from(self, store: Store) -> None:
        app = self.aclmon
        s = store.state
        dim = theme_style(self, "aclmon-dim")
        good = theme_style(self, "aclmon-idle", bold=True)
        bad = theme_style(self, "aclmon-bad", bold=True)
        busy = theme_style(self, "aclmon-busy", bold=True)
        prof = s.profiling

        state = Text()
        state.append("PROFILING  ", style=Style(bold=True))
        if prof is None:
            state.append("no state from the agent yet", style=dim)
        else:
            if prof.running:
                state.append("● running", style=good)
            elif prof.initialized:
                state.append("○ stopped", style=busy)
            else:
                state.append("○ not initialized", style=dim)
            if prof.owner:
                owner = f"owned by {prof.owner}"
                state.append(f"   {owner}", style=bad if prof.owner in ("acl.json", "job") else dim)
            if prof.output_path:
                state.append(f"   output {prof.output_path}", style=dim)
            state.append("   live op timings " + ("on" if prof.subscribed else "off"), style=dim)
        if app.source.readonly:
            state.append("   read-only: commands are not sent", style=bad)
        state.append("\n")
        metric_name = AICORE_METRICS.get(app.prof_metric, (f"metric {app.prof_metric}", ""))[0]
        state.append("AI Core metric ", style=dim)
        state.append(metric_name, style=Style(bold=True))
        state.append(" (m)   ", style=dim)
        state.append("devices ", style=dim)
        devices = app.prof_devices
        state.append(
            "all in use" if not devices else ", ".join(map(str, devices)), style=Style(bold=True)
        )
        state.append(" (v)   ", style=dim)
        state.append("p ", style=Style(bold=True))
        state.append("stop" if prof is not None and prof.running else "start", style=dim)
        self.query_one("#prof-state", Static).update(state)

        agent_flags = prof.flags if prof else 0
        table = Table.grid(padding=(0, 3), expand=False)
        for _ in range(3):
            table.add_column(no_wrap=True)
        cells = []
        for key, (name, value) in zip(FLAG_KEYS, PROF_FLAGS, strict=True):
            wanted = bool(app.prof_flags & value)
            active = bool(agent_flags & value)
            mark = "[x]" if wanted and active else "[+]" if wanted else "[-]" if active else "[ ]"
            cell = Text()
            cell.append(key, style=theme_style(self, "footer-key-foreground", bold=True))
            cell.append(" ")
            cell.append(
                mark, style=good if wanted and active else busy if wanted != active else dim
            )
            cell.append(" " + name.removeprefix("ACL_PROF_"), style=Style() if wanted else dim)
            cells.append(cell)
        rows = (len(cells) + 2) // 3
        for r in range(rows):
            table.add_row(
                *(cells[c * rows + r] if c * rows + r < len(cells) else "" for c in range(3))
            )
        legend = Text(
            "[x] on   [+] asked, not yet on   [-] asked off, still on   ·   with no flag set,"
            " p turns on live operator timings instead of profiling to files",
            style=dim,
        )
        self.query_one("#prof-flags", Static).update(Group(table, legend))

        reply = Text()
        reply.append("AGENT  ", style=dim + Style(bold=True))
        if app.command_note:
            reply.append(app.command_note + "   ", style=busy)
        last = s.last_reply
        if last is None:
            reply.append("no reply yet", style=dim)
        else:
            reply.append("last reply: ")
            if last.code == 0:
                reply.append("ok", style=good)
            else:
                reply.append(error_text(last.code), style=bad)
            if last.message:
                reply.append(f" — {last.message}")
        self.query_one("#prof-reply", Static).update(reply)

        ops = Table(expand=True, box=None, header_style=dim + Style(bold=True), pad_edge=False)
        ops.add_column("OPERATOR", ratio=3, no_wrap=True, overflow="ellipsis")
        ops.add_column("TYPE", ratio=1, no_wrap=True)
        for column in ("COUNT", "TOTAL", "MEAN", "MAX"):
            ops.add_column(column, justify="right", no_wrap=True)
        top = store.top_ops(TOP_OPS)
        for o in top:
            ops.add_row(o.op_name, o.op_type, str(o.count), fmt.duration_us(o.total_us),
                        fmt.duration_us(o.mean_us), fmt.duration_us(o.max_us))  # fmt: skip
        title = Text("TOP OPERATORS BY TOTAL TIME  ", style=Style(bold=True))
        title.append(f"{s.op_timings_total} timings · {len(s.ops)} operators", style=dim)
        if s.op_timings_untracked:
            title.append(f" · {s.op_timings_untracked} timings of untracked operators", style=busy)
        if not top:
            hint = Text(
                "no operator timings yet: they arrive while live op timings are on", style=dim
            )
            self.query_one("#prof-ops", Static).update(Group(title, hint))
        else:
            self.query_one("#prof-ops", Static).update(Group(title, ops))


# -------------------------------------------------------------------- dumps
class DumpsView(View):
    """Dump and overflow files; Enter decodes the selected one off the UI thread."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: list[ev.DumpFileSeen] = []
        self._offset = 0
        self._store: Store | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="dumps-status", classes="status")
        with Horizontal():
            with Vertical(id="dumps-left"):
                yield Static(
                    Text(f" {'TIME (UTC)':<12}  {'KIND':<9}  {'SIZE':>9}  FILE", style="bold"),
                    classes="colhead",
                )
                yield VirtualList(self._render_row, id="dumps-list")
            with VerticalScroll(id="dump-detail-scroll"):
                yield Static(id="dump-detail")

    @property
    def vlist(self) -> VirtualList:
        return self.query_one("#dumps-list", VirtualList)

    def on_focus(self) -> None:
        self.vlist.focus()

    def dump_at(self, index: int) -> ev.DumpFileSeen | None:
        row = index - self._offset
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def update_from(self, store: Store) -> None:
        self._store = store
        s = store.state
        self._rows = list(s.dumps)
        self._offset = s.dumps_dropped
        self.vlist.set_rows(self._offset, len(self._rows))
        text = Text(f"{s.dumps_total} dump file(s)", style=Style(bold=True))
        overflow = sum(1 for d in self._rows if d.kind == "overflow")
        if overflow:
            text.append(f"  ·  {overflow} overflow", style=theme_style(self, "aclmon-bad"))
        if s.dumps_dropped:
            text.append(
                f"  ·  {s.dumps_dropped} older dropped", style=theme_style(self, "aclmon-dim")
            )
        text.append("  ·  Enter decodes the selected file", style=theme_style(self, "aclmon-dim"))
        self.query_one("#dumps-status", Static).update(text)
        if not self.aclmon.dump_detail_shown:
            self._show_summary(self.vlist.cursor)

    def on_virtual_list_highlighted(self, message: VirtualList.Highlighted) -> None:
        self.aclmon.dump_detail_shown = False
        self._show_summary(message.index)

    def _show_summary(self, index: int) -> None:
        dump = self.dump_at(index)
        styles = {
            "dim": theme_style(self, "aclmon-dim"),
            "bad": theme_style(self, "aclmon-bad", bold=True),
        }
        if dump is None:
            renderable: RenderableType = Text("No dump files yet.", style=styles["dim"])
        else:
            renderable = render_summary(dump, styles)
        self.query_one("#dump-detail", Static).update(renderable)

    def show_detail(self, renderable: RenderableType) -> None:
        self.query_one("#dump-detail", Static).update(renderable)
        self.query_one("#dump-detail-scroll", VerticalScroll).scroll_home(animate=False)

    def _render_row(self, index: int, width: int) -> Text:
        d = self.dump_at(index)
        if d is None:
            return Text("")
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {fmt.utc_time(d.ts_ns):<12}  ", style=theme_style(self, "aclmon-dim"))
        style = theme_style(self, "aclmon-bad", bold=True) if d.kind == "overflow" else Style()
        # an exception dump: what the runtime saved of an operator that raised
        text.append(f"{'exception' if d.kind == 'exception-dump' else d.kind:<9}", style=style)
        text.append(f"  {fmt.size(d.size):>9}  {os.path.basename(d.path)}")
        return text


def tensor_table(title: str, tensors: tuple[ev.TensorDesc, ...], dim: Style) -> RenderableType:
    """Inputs or outputs of an operator: dtype and format by name, shape, address, size."""
    table = Table(title=title, title_justify="left", expand=True, box=None, header_style=dim)
    for column in ("#", "NAME", "DTYPE", "FORMAT", "SHAPE", "ADDRESS", "SIZE"):
        table.add_column(
            column, no_wrap=True, justify="right" if column in ("#", "SIZE") else "left"
        )
    if not tensors:
        table.add_row("", Text("none reported", style=dim))
    for i, t in enumerate(tensors):
        table.add_row(
            str(i), t.name or "–", data_type_name(t.dtype), format_name(t.format),
            fmt.shape(t.dims), f"0x{t.address:x}", fmt.size(t.size),
        )  # fmt: skip
    return table
