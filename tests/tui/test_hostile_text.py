"""Text from outside never steers the terminal: escape sequences and markup in
every string field of every event kind, through every view, detail, the header,
toasts, the palette and the fleet screen.

What is checked is what Textual hands the terminal driver (the bytes a real
terminal would get), not the Rich segments: every escape sequence in it must be
one Textual writes itself (colours, cursor moves, the pointer shape), and no
other control character may be there. Markup in event text shows literally; a
stray closing tag in every string would crash any screen that read it as markup.
"""

from __future__ import annotations

import re
import threading
import types
import typing
from typing import Any

from textual.drivers.headless_driver import HeadlessDriver
from tui_helpers import SIZE, screen_text, wait_for
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.events import schema
from aclmon.events.names import short_host
from aclmon.sources.base import ListSource
from aclmon.store.fleet import FleetStore
from aclmon.tui.app import AclmonApp
from aclmon.tui.fleet import FleetApp
from aclmon.tui.screens import CallFailureDetail, HelpScreen, PickerApp

#: what a hostile job, file or peer may put in any string
PAYLOAD = (
    "[bold]b[/bold][link=https://evil.example/]l[/link][/nope]"  # markup, a stray closing tag
    "\x1b]0;pwned-title\x07"  # OSC 0: the window title (BEL-terminated)
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # OSC 8: a hyperlink (ST)
    "\x1b[2J\x1b[H\x1b[31;5m"  # CSI: clear the screen, cursor home, red blinking
    "\x1bc"  # RIS: reset the terminal
    "\x9b2J\x9d0;c1-title\x9c\x90q\x9c"  # C1: CSI, OSC, ST, DCS
    "\x07\x08\r\x0b\x0c\x00\x7f\t\n"  # BEL, BS, CR, VT, FF, NUL, DEL, TAB, LF
    "\u202eevil\u202c"  # a right-to-left override
)
#: what a screen shows of it: the markup as it is, the first escape sequence escaped
LITERAL = "[bold]b[/bold][link=https://evil.example/]l[/link][/nope]\\x1b]0;pwned"

#: a control character shown escaped on a screen
ESCAPED = re.compile(r"\\x[0-9a-f]{2}|\\u202e")
#: fields whose exact value picks how an event is shown: a hostile copy keeps them,
#: so those paths draw hostile neighbours too (the schema's events make them hostile)
SELECTORS = {
    (ev.LogLine, "level"),
    (ev.DumpFileSeen, "kind"),
    (ev.DeviceSample, "health"),
    (ev.Hello, "runtime"),
    (ev.ProfilingState, "owner"),
}
HOST = "node-" + PAYLOAD
PID = 4242

# ---------------------------------------------------------------- hostile events


def hostile(value: Any) -> Any:
    """``value`` with the payload after every string in it (dict keys kept:
    views look summaries up by them)."""
    if isinstance(value, str):
        return value + PAYLOAD
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(hostile(v) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(hostile(v) for v in value)
    if isinstance(value, dict):
        return {k: hostile(v) for k, v in value.items()}
    return value


def hostile_copy(event: Any, seq: int, ts_ns: int) -> Any:
    fields = {
        name: value if (type(event), name) in SELECTORS else hostile(value)
        for name, value in zip(event._fields, event, strict=True)
    }
    return type(event)(**{**fields, "seq": seq, "ts_ns": ts_ns})


def _value_for(annotation: Any, n: int) -> Any:
    """A valid value of a schema field's type, every string in it the payload."""
    if annotation is str:
        return PAYLOAD
    if annotation is bool:
        return True
    if annotation is int:
        return n % 4  # ids, handles, codes: small, so they meet other events' ids
    if annotation is float:
        return 1.5
    if annotation is schema.Summary or typing.get_origin(annotation) is dict:
        return {PAYLOAD: PAYLOAD, "op_name": PAYLOAD, "nested": [PAYLOAD, {PAYLOAD: PAYLOAD}]}
    origin = typing.get_origin(annotation)
    if origin is tuple:
        element = typing.get_args(annotation)[0]
        if element is ev.TensorDesc:
            return (_schema_instance(ev.TensorDesc, n),)
        return (_value_for(element, n), _value_for(element, n + 1))
    if origin in (typing.Union, types.UnionType):
        return _value_for(next(a for a in typing.get_args(annotation) if a is not type(None)), n)
    raise TypeError(f"no hostile value for {annotation!r}: teach the test this field type")


def _schema_instance(cls: type, n: int, **given: Any) -> Any:
    hints = typing.get_type_hints(cls, globalns=vars(schema))
    return cls(*(given.get(name, _value_for(hints[name], n + i)) for i, name in enumerate(cls._fields)))  # type: ignore[attr-defined]  # fmt: skip


def schema_events(first_seq: int, first_ts: int) -> list[Any]:
    """One event of every kind the schema declares (a new kind or field is in at
    once), every string in it the payload; the Goodbye last."""
    out = []
    kinds = sorted(ev.KINDS.items(), key=lambda item: item[1] is ev.Goodbye)
    for n, (_kind, cls) in enumerate(kinds):
        if cls is ev.Hello:
            continue  # the Hello opens the session (hostile_session)
        seq, ts = first_seq + n, first_ts + n * 1_000_000
        out.append(_schema_instance(cls, n, seq=seq, ts_ns=ts))
    return out


def hostile_session() -> list[Any]:
    """A hostile Hello, the fixed scenario, a hostile copy of each of its events,
    and one all-hostile event of every kind."""
    scenario = build_events()
    hello = _schema_instance(ev.Hello, 0, seq=1, ts_ns=T0, pid=PID, host=HOST)
    events: list[Any] = [hello, *scenario[1:]]
    seq, ts = len(scenario) + 1, max(e.ts_ns for e in scenario) + 1_000_000
    for event in scenario[1:]:
        events.append(hostile_copy(event, seq, ts))
        seq, ts = seq + 1, ts + 1_000
    # the failed call's message names a code: Enter on the log line finds it
    events.append(ev.CallFailed(seq, ts, "rt.synchronize_stream" + PAYLOAD, 507015,
                                PAYLOAD + "result = 507015", 7, -1))  # fmt: skip
    events.append(ev.LogLine(seq + 1, ts + 1, "error", PAYLOAD + " result = 507015", "RUNTIME"))
    events += schema_events(seq + 2, ts + 1_000_000)
    return events


# ---------------------------------------------------------------- the terminal's bytes


class RecordingDriver(HeadlessDriver):
    """Textual's headless driver, except that the app draws for it: every
    string the app hands the driver (what a real one writes to the terminal)
    is kept, one write each."""

    writes: list[str]

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        type(self).writes.append(data)


def recording_driver() -> type[RecordingDriver]:
    return type("Recording", (RecordingDriver,), {"writes": []})


#: what Textual writes itself: SGR (colours), cursor positions (a full update's
#: lines each end with a newline before the next one's), the pointer shape
_OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;]*[mH]|\n(?=\x1b\[[0-9]+;[0-9]+H)|\x1b\]22;[a-z-]+\x07")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def check_terminal_output(writes: list[str], where: str) -> None:
    """No escape sequence but Textual's own, no other control character, no link."""
    for data in writes:
        if data == "\x07":  # the app's own bell, written alone
            continue
        rest = _OWN_SEQUENCES.sub("", data)
        found = _CONTROL.search(rest)
        assert found is None, (
            f"{where}: {found.group()!r} reached the terminal: "
            f"{rest[max(0, found.start() - 40) : found.end() + 40]!r}"
        )


class HostileSource(ListSource):
    """The session, from a source whose description and state reason are hostile too."""

    title = "rank " + PAYLOAD

    @property
    def state_reason(self) -> str:
        return PAYLOAD


def hostile_agent(command: Any) -> ev.Reply:
    """An agent refusing every command with a hostile message (a toast shows it)."""
    return ev.Reply(0, 0, command.request_id, 500000, PAYLOAD, {PAYLOAD: PAYLOAD})


async def test_every_view_detail_header_toast_and_the_palette_draw_hostile_text_inert(
    tmp_path,
) -> None:
    source = HostileSource(hostile_session(), description="job " + PAYLOAD, agent=hostile_agent)
    app = AclmonApp(source, clock=lambda: 0.0, export_dir=str(tmp_path))
    driver = app.driver_class = recording_driver()
    shown: list[str] = []

    async def settle(pilot: Any, where: str) -> None:
        await pilot.pause(0.1)
        await app.workers.wait_for_complete()
        await pilot.pause(0.1)
        check_terminal_output(driver.writes, where)
        driver.writes.clear()
        shown.append(screen_text(app))

    async with app.run_test(headless=False, size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.store.state.goodbye is not None)
        for entry in app.view_entries:
            app.action_show_view(entry.id)
            await settle(pilot, f"the {entry.title} view")
            assert ESCAPED.search(shown[-1]), f"the {entry.title} view shows no hostile text"
            # what Enter opens on the newest row (a detail, a decoded dump, a toast)
            await pilot.press("end", "enter")
            await settle(pilot, f"Enter in the {entry.title} view")
            while app.screen is not app.screen_stack[0]:
                app.pop_screen()
                await settle(pilot, f"closing what Enter opened in the {entry.title} view")
        # every exception's detail (the hostile ones hold hostile tensors, dumps, logs)
        for exception in list(app.store.state.exceptions)[-3:]:
            app.open_exception(exception)
            await settle(pilot, f"the detail of exception {exception.seq}")
            assert ESCAPED.search(shown[-1])
            app.pop_screen()
        failure = app.store.state.call_failures[-1]
        app.push_screen(CallFailureDetail(failure, app.store.state.newest_ts_ns))
        await settle(pilot, "a failed call's detail")
        assert ESCAPED.search(shown[-1])
        app.pop_screen()
        app.push_screen(HelpScreen(app.help_sections(), "keymap.json"))
        await settle(pilot, "the help screen")
        app.pop_screen()
        # a refusal from the agent is a toast when its view is not shown
        app.action_show_view("logs")
        app.commands.send(ev.StartProfiling)
        await wait_for(pilot, lambda: bool(app._notifications))
        await settle(pilot, "a toast with the agent's refusal")
        assert ESCAPED.search(shown[-1])
        # the palette: every entry (a view's own may name what a job sent)
        await pilot.press("ctrl+p")
        await settle(pilot, "the command palette")
        for letter in "dlv":
            await pilot.press(letter)
            await settle(pilot, f"the command palette after {letter!r}")
        await pilot.press("escape")
        await settle(pilot, "the palette closed")
    assert app.return_code in (0, None), "a screen crashed on hostile text"
    assert LITERAL in "".join(shown), "the markup never showed as it is"


def fleet_batches() -> list[tuple[tuple[str, int], list[Any]]]:
    """Two ranks on a hostile host: one with a hostile exception, one exited."""
    batches = []
    for pid, rank in ((11, 0), (12, 1)):
        hello = _schema_instance(ev.Hello, 0, seq=1, ts_ns=T0, pid=pid, host=HOST, rank=rank)
        events = [
            hello,
            *(hostile_copy(e, 2 + i, T0 + i) for i, e in enumerate(build_events()[1:])),
        ]
        batches.append(((short_host(HOST), pid), events))
    return batches


class HostileFeed:
    """A fleet feed of fixed hostile batches, its description and reason hostile."""

    description = "nats://evil/" + PAYLOAD
    state = "disconnected"
    state_reason = PAYLOAD
    readonly = True

    def __init__(self) -> None:
        self.batches = fleet_batches()
        self.gone = {(short_host(HOST), 12)}
        self.caught_up = threading.Event()

    def start(self) -> None:
        pass

    def poll(self, max_events: int = 100_000) -> list[Any]:
        out, self.batches = self.batches, []
        return out

    def send_command(self, key: Any, cls: type, *fields: Any, timeout: float = 5.0) -> Any:
        raise AssertionError("no command in this test")

    def decoder_counts(self, key: Any = None) -> tuple[int, int]:
        return (0, 0)

    def close(self) -> None:
        pass


async def test_the_fleet_screen_draws_hostile_hosts_errors_and_reasons_inert() -> None:
    for size in ((160, 48), (80, 24)):
        app = FleetApp(HostileFeed(), FleetStore(), interval=0.05)  # type: ignore[arg-type]
        driver = app.driver_class = recording_driver()
        async with app.run_test(headless=False, size=size) as pilot:
            await wait_for(pilot, lambda app=app: len(app.rows) == 2)
            await pilot.press("slash", "e", "enter")
            await pilot.pause(0.2)
            check_terminal_output(driver.writes, f"the fleet screen at {size}")
            assert ESCAPED.search(screen_text(app))
        assert app.return_code in (0, None)


async def test_the_agent_picker_draws_hostile_command_lines_inert() -> None:
    class Agent:
        pid = PID
        host = HOST
        argv = ("python", "train.py " + PAYLOAD)
        address = "/run/" + PAYLOAD

    app = PickerApp([Agent(), Agent()])
    driver = app.driver_class = recording_driver()
    async with app.run_test(headless=False, size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: ESCAPED.search(screen_text(app)) is not None)
        check_terminal_output(driver.writes, "the agent picker")
