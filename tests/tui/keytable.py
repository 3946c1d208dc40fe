"""The table of every key, mouse action and palette entry in docs/usage.md,
built from the code: the apps' and screens' BINDINGS and the palette's
commands. ``make_key_table.py`` writes it; ``test_key_table.py`` checks that
the page still says exactly this."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from aclmon.tui.app import AclmonApp
from aclmon.tui.fleet import BACK_BINDING, FleetApp
from aclmon.tui.keys import key_display
from aclmon.tui.replay.app import ReplayApp
from aclmon.tui.replay.timeline import SeekTimeScreen
from aclmon.tui.screens import TargetPicker
from aclmon.tui.top import BACK_BINDING as JOB_BACK_BINDING
from aclmon.tui.top import TopApp
from aclmon.tui.views.host import SignalConfirm

USAGE = Path(__file__).resolve().parents[2] / "docs" / "usage.md"
START = "<!-- key table: written by tests/tui/make_key_table.py, checked by test_key_table.py -->"
END = "<!-- end of key table -->"

#: (where, what you do, what it does, the test that does it)
MOUSE = [
    ("frame", "click a tab", "switches to that view", "test_a_click_on_a_tab_switches_view"),
    ("lists", "click a row", "selects it", "test_click_selects_a_row_and_q_closes_the_detail"),
    ("lists", "double-click a row", "opens it (as Enter)",
     "test_a_double_click_opens_the_row_and_a_header_click_sorts"),
    ("Exceptions, Dumps, Logs", "click a column heading",
     "sorts by it (again: reverses)", "test_a_double_click_opens_the_row_and_a_header_click_sorts"),
    ("Profiling view", "click an operator table heading", "sorts by it (again: reverses)",
     "test_a_click_on_a_header_sorts_by_it_and_a_second_click_reverses"),
    ("Profiling view", "click a flag", "checks or unchecks it",
     "test_each_flag_is_checked_by_space_or_a_click_and_sent_by_enter"),
    ("exception detail", "double-click a file", "decodes it in place",
     "test_a_double_click_on_a_file_in_the_detail_decodes_it"),
    ("Timeline view", "click a row", "selects it and puts the cursor there (again: opens)",
     "test_a_click_puts_the_cursor_and_a_second_opens"),
    ("Timeline view", "mouse wheel", "zooms in (up) or out at the pointer",
     "test_w_s_plus_minus_and_the_wheel_zoom_keeping_the_time_under_the_cursor"),
    ("footer", "click a key", "does what the key does",
     "test_a_click_on_a_footer_key_does_what_the_key_does"),
]  # fmt: skip

#: palette entries that are one per flag, metric, device or theme: one row each
PALETTE_PATTERNS = [
    (re.compile(r"^Profiling: toggle ACL_PROF_\w+$"), "Profiling: toggle ACL_PROF_…"),
    (re.compile(r"^Profiling: AI Core metric .+$"), "Profiling: AI Core metric …"),
    (re.compile(r"^Device \d+: jump to it$"), "Device N: jump to it"),
    (re.compile(r"^Theme: .+$"), "Theme: …"),
    (re.compile(r"^Rank \d+ on \S+: open its screens$"), "Rank N on HOST: open its screens"),
    (re.compile(r"^PID \d+ on \S+: open its screens$"), "PID N on HOST: open its screens"),
]


def keys_typed(keys: str) -> str:
    return " ".join(f"`{key_display(k)}`" for k in keys.split(","))


def binding_sections(app: AclmonApp) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(where, [(keys, description, id)]): the app's help sections, then replay, fleet,
    picker, the Host view's question before a signal, ``aclmon top``."""
    extra = [
        ("Replay timeline", ReplayApp.BINDINGS),
        ("Replay: go to time", SeekTimeScreen.BINDINGS),
        ("Fleet screen", FleetApp.BINDINGS),
        ("Fleet: one rank's screens", [BACK_BINDING]),
        ("Agent picker", TargetPicker.BINDINGS),
        ("Host view: before a signal", SignalConfirm.BINDINGS),
        ("aclmon top", TopApp.BINDINGS),
        ("A job opened from a Host view", [JOB_BACK_BINDING]),
    ]
    return [
        *app.help_sections(),
        *(
            (
                title,
                [(b.key, b.description, b.id or "") for b in bindings if isinstance(b, Binding)],
            )
            for title, bindings in extra
        ),
    ]


def palette_rows(entries: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(entry, what it does): one row per entry, one per pattern; every entry a row
    stands for must say the same."""
    rows: dict[str, str] = {}
    for name, what in entries:
        for pattern, shown in PALETTE_PATTERNS:
            if pattern.match(name):
                name = shown
                break
        if not what:
            raise AssertionError(f"palette entry {name!r} has no description")
        if rows.setdefault(name, what) != what:
            raise AssertionError(f"palette entries of {name!r} differ: {rows[name]!r}, {what!r}")
    return list(rows.items())


def table(
    app: AclmonApp, palette: list[tuple[str, str]], fleet_palette: list[tuple[str, str]]
) -> str:
    """The markdown table (between the START and END markers)."""
    lines = [START, "", "| where | key, mouse or palette entry | what it does | binding id |",
             "|---|---|---|---|"]  # fmt: skip
    for title, rows in binding_sections(app):
        for keys, description, binding_id in rows:
            shown_id = f"`{binding_id}`" if binding_id else ""
            lines.append(f"| {title} | {keys_typed(keys)} | {description} | {shown_id} |")
    for where, action, what, _test in MOUSE:
        lines.append(f"| {where} (mouse) | {action} | {what} | |")
    for name, what in palette_rows(palette):
        lines.append(f"| palette (Ctrl+P) | `{name}` | {what} | |")
    for name, what in palette_rows(fleet_palette):
        lines.append(f"| fleet palette (Ctrl+P) | `{name}` | {what} | |")
    lines += ["", END]
    return "\n".join(lines)


def documented() -> str:
    """The table as the page has it now ("" when the markers are missing)."""
    text = USAGE.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return ""
    return text[text.index(START) : text.index(END) + len(END)]


def write(new_table: str) -> None:
    text = USAGE.read_text(encoding="utf-8")
    old = documented()
    if not old:
        raise SystemExit(f"{USAGE}: put the two marker lines where the table goes:\n{START}\n{END}")
    USAGE.write_text(text.replace(old, new_table), encoding="utf-8")


async def palette_entries(app: AclmonApp) -> list[tuple[str, str]]:
    """Every palette entry the scenario offers and what it does, with an overflow
    record selected (so the entries that act on one are there too)."""
    from aclmon.tui.palette import AclmonCommands

    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.press("4", "up")
        await pilot.pause()
        assert app.dumps_view.selected_dump() is not None
        return [(c.name, c.help) for c in AclmonCommands(app.screen)._commands()]


class _OneRankFeed:
    """A fleet feed with nothing more to say: the fleet store already holds its ranks."""

    description = "key table"
    state = "connected"
    state_reason = ""
    readonly = True

    def __init__(self) -> None:
        self.gone: set[tuple[str, int]] = set()

    def start(self) -> None:
        pass

    def poll(self, max_events: int = 0) -> list:
        return []

    def close(self) -> None:
        pass


async def fleet_palette_entries() -> list[tuple[str, str]]:
    """Every entry of the fleet screen's palette, with one rank and one process
    without a rank on screen."""
    from aclmon import events as ev
    from aclmon.store.fleet import FleetStore
    from aclmon.tui.fleet import FleetApp, FleetCommands

    fleet = FleetStore()
    for pid, rank in ((100, 0), (200, -1)):
        hello = ev.Hello(1, 1, ev.SCHEMA_VERSION, "0.1.0", pid, "node0", ("train.py",), "sim",
                         "Ascend910B1", 1, "train", rank)  # fmt: skip
        fleet.apply(("node0", pid), [hello])
    app = FleetApp(_OneRankFeed(), fleet)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.pause()
        return [(c.name, c.help) for c in FleetCommands(app.screen)._commands()]
