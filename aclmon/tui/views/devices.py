"""The Devices view: device table, host process, models, log lines, and a
context -> stream tree per device."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from rich.console import RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from rich.tree import Tree
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from aclmon.acl_constants import error_name
from aclmon.store.state import (
    STREAM_BUSY,
    STREAM_DESTROYED,
    STREAM_IDLE,
    STREAM_SYNCHRONIZING,
    StoreState,
)
from aclmon.tui import fmt
from aclmon.tui.style import middle, theme_style
from aclmon.tui.views.listview import FilteredView


def command_line(argv: tuple[str, ...] | list[str]) -> str:
    """The job's command with the script named first: ``train.py --lr 0.1 (python)``.

    The interpreter and the script's directory say little; the script's name
    is what identifies the job, so it leads (and survives truncation).
    """
    args = list(argv)
    if len(args) >= 2 and os.path.basename(args[0]).startswith("python"):
        runner, args = os.path.basename(args[0]), args[1:]
        if args and args[0] == "-m" and len(args) > 1:
            args = [f"-m {args[1]}", *args[2:]]
        else:
            args = [os.path.basename(args[0]), *args[1:]] if args else args
        return " ".join(args) + f"  ({runner})"
    return " ".join([os.path.basename(args[0]), *args[1:]]) if args else ""


class DevicesView(FilteredView):
    """Devices table with sparklines and HBM bars, the host process, models, and
    a context -> stream tree per device."""

    FILTER_HINT = "tree lines: stream, state, model, error"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,j", "scroll(1)", "Down", show=False, id="devices.down"),
        Binding("up,k", "scroll(-1)", "Up", show=False, id="devices.up"),
        Binding("d", "toggle_destroyed", "Destroyed", id="devices.destroyed"),
    ]
    can_focus = True
    REDRAWN_BY = ("show_destroyed",)

    show_destroyed: reactive[bool] = reactive(False)
    """Destroyed contexts and streams are listed (hidden by default)."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="devices-scroll"):
            yield Static(id="device-table", classes="panel")
            yield Static(id="host-line", classes="panel")
            yield Static(id="models", classes="panel")
            yield Static(id="device-logs", classes="panel")
            yield Vertical(id="trees")
        yield self.filter_bar()

    def action_toggle_destroyed(self) -> None:
        self.show_destroyed = not self.show_destroyed

    def _shown(self, line: Text) -> bool:
        return not self.filtered or self.filter_text in line.plain.lower()

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

    def redraw(self) -> None:
        if self.store is None or not self.is_mounted:
            return
        s = self.store.state
        self.query_one("#device-table", Static).update(self._device_table(s))
        self.query_one("#host-line", Static).update(self._host_line(s))
        self.query_one("#models", Static).update(self._models(s))
        logs = self.query_one("#device-logs", Static)
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
        width = self.width
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
        """pid, host and the job's command (its script first, cut in the middle to
        fit), then the process's usage; on two lines when one would wrap."""
        dim = theme_style(self, "aclmon-dim")
        width = max(40, (self.size.width or 160) - 4)  # the panel's padding, the scrollbar
        text = Text("HOST  ", style=dim + Style(bold=True), no_wrap=True, overflow="ellipsis")
        usage = Text()
        if s.host is None:
            usage.append("no host sample yet", style=dim)
        else:
            usage.append("cpu ")
            usage.append(
                fmt.sparkline(s.host_cpu_history, 12, top=100.0),
                style=theme_style(self, "aclmon-spark"),
            )
            usage.append(
                f" {s.host.cpu_percent:5.1f}%   rss {fmt.size(s.host.rss)}"
                f"   threads {s.host.threads}"
            )
        if s.hello:
            text.append(f"pid {s.hello.pid} on {s.hello.host}  ")
            command = command_line(s.hello.argv)
            room = width - len(text) - 2 - len(usage)
            if room < min(len(command), 24):  # the command keeps the first line's rest
                text.append(middle(command, width - len(text)), style=dim)
                text.append("\n      ")
            else:
                text.append(middle(command, room), style=dim)
                text.append("  ")
        text.append_text(usage)
        return text

    def _logs(self, s: StoreState) -> RenderableType:
        """The agent's newest log lines (warnings and errors stand out), one line
        each (cut at the end: a message reads from its start)."""
        dim = theme_style(self, "aclmon-dim")
        styles = {"error": theme_style(self, "aclmon-bad", bold=True),
                  "warning": theme_style(self, "aclmon-busy")}  # fmt: skip
        text = Text("LOG  ", style=dim + Style(bold=True), no_wrap=True, overflow="ellipsis")
        for n, line in enumerate(list(s.logs)[-3:]):
            if n:
                text.append("\n     ")
            text.append(f"{fmt.utc_time(line.ts_ns, with_ms=False)} {line.level:<7} ", style=dim)
            first = line.text.split("\n", 1)[0][:300]
            text.append(first, style=styles.get(line.level, Style()))
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
        hidden = 0
        for ctx in contexts:
            if ctx.destroyed and not self.show_destroyed:
                hidden += 1
                continue
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
                if stream.state == STREAM_DESTROYED and not self.show_destroyed:
                    hidden += 1
                    continue
                line = Text(f"stream {stream.stream_id:<3d} ")
                line.append(f"{stream.state:<13}", style=state_styles.get(stream.state, dim))
                if stream.busy_model is not None:
                    line.append(f" model #{stream.busy_model}", style=dim)
                line.append(f" last sync {fmt.duration_ns(stream.last_sync_ns):>9}", style=dim)
                line.append(f"  {stream.syncs} syncs", style=dim)
                if stream.errors or stream.exceptions:
                    counts = [f"{stream.errors} error(s)"] if stream.errors else []
                    if stream.exceptions:  # counted apart from the failed calls they cause
                        counts.append(f"{stream.exceptions} exception(s)")
                    # narrow: on a line of their own, not broken where the width ends
                    gap = "\n" if (self.size.width or 160) < 130 else "  "
                    line.append(
                        f"{gap}{', '.join(counts)}, last {error_name(stream.last_error)}", style=bad
                    )
                    if stream.last_error_message:
                        # its telling line: the exception detail shows the whole message
                        first = fmt.runtime_headline(stream.last_error_message)
                        line.append(f": {first[:80]}", style=bad)
                if self._shown(line) or self._shown(ctx_label):
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
                if self._shown(line):
                    branch.add(line)
        if hidden:
            tree.add(
                Text(
                    f"{hidden} destroyed context(s)/stream(s) hidden"
                    f" ({self.key('devices.destroyed', 'd')} shows)",
                    style=dim,
                )
            )
        return tree
