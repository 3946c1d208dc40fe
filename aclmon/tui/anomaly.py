"""The fleet screen's alert line: where the job first went wrong, and going there.

:meth:`~aclmon.store.fleet.FleetStore.anomaly_order` puts each rank's first
exception, overflow or NaN/Inf on the server's clock (each host corrected by
its measured offset); the alert line names the first of them (rank, host,
device, kind, operator, time) and how many ranks followed, and a key opens that
rank's screens on it (:func:`reveal`): the exception's detail, the overflow
file in the Dumps view, or the failed call's detail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.text import Text
from textual.app import App

from aclmon import events as ev
from aclmon.store.fleet import NAN_INF, OVERFLOW, Anomaly
from aclmon.store.state import CallFailure
from aclmon.tui import fmt
from aclmon.tui.keys import key_display
from aclmon.tui.names import fit_name

if TYPE_CHECKING:
    from aclmon.tui.app import AclmonApp

KIND_WORDS = {OVERFLOW: "overflow", NAN_INF: "NaN/Inf input"}
#: at least this wide: the verdict and the ranks that followed fit on the line
WIDE = 120
#: the operator's room on the alert line when the rest takes the width
LEAST_OPERATOR = 12


def alert_text(order: list[Anomaly], width: int, bad: Style, dim: Style, key: str) -> Text:
    """The alert line for ``order`` (the first anomaly first); empty when there is none.
    Wide: the host, the kind in words, the time on the server's clock and the rank
    that followed; at 80 columns, the rank, device, kind, operator and time. The
    operator's name gets the room the rest leaves, cut by path segments."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if not order:
        return text
    first, after = order[0], order[1:]
    device = f" dev {first.device_id}" if first.device_id is not None else ""
    kind = KIND_WORDS.get(first.kind, "exception")
    when = fmt.utc_time(first.server_ns)
    hint = f"  {key}: go to it"
    if width >= WIDE:
        clock = "UTC" if first.offset_ns is not None else "UTC, host clock"
        then = ""
        if after:
            gap = fmt.duration_ns(max(0, after[0].server_ns - first.server_ns))
            more = f" and {len(after) - 1} more" if len(after) > 1 else ""
            then = f" · then {_who(after[0])} +{gap}{more}"
        head = f" {_who(first)} ({first.key[0]}){device} · {kind} · "
        tail = f" · {when} {clock}"
        operator = _operator(first, width - len(" ▲ FIRST ANOMALY " + head + tail + then + hint))
        text.append(" ▲ FIRST ANOMALY ", style=bad + Style(reverse=True))
        text.append(f" {_who(first)}", style=bad)
        text.append(f" ({first.key[0]}){device} · {kind} · ")
        text.append(operator, style=Style(bold=True))
        text.append(tail)
        text.append(then, style=dim)
    else:
        more = f" +{len(after)} rank{'s' if len(after) > 1 else ''}" if after else ""
        head = f" {_who(first)}{device} {kind} "
        operator = _operator(first, width - len(" ▲ first " + head + f" {when}" + more + hint))
        text.append(" ▲ first ", style=bad + Style(reverse=True))
        text.append(f" {_who(first)}", style=bad)
        text.append(f"{device} {kind} ")
        text.append(operator, style=Style(bold=True))
        text.append(f" {when}")
        text.append(more, style=dim)
    text.append(hint, style=dim)
    return text


def _operator(anomaly: Anomaly, room: int) -> str:
    """The anomaly's operator type and name in ``room`` characters (at least
    :data:`LEAST_OPERATOR`), its name cut by path segments; the type only when the
    name does not end with it."""
    room = max(room, LEAST_OPERATOR)
    op_type = anomaly.op_type
    if anomaly.op_name.rsplit("/", 1)[-1] == op_type:
        op_type = ""
    name_room = room - len(op_type) - 1 if op_type else room
    operator = f"{op_type} {fit_name(anomaly.op_name, name_room)}".strip()
    return operator or "–"


def _who(anomaly: Anomaly) -> str:
    return f"rank {anomaly.rank}" if anomaly.rank is not None else f"pid {anomaly.key[1]}"


def bound_key(app: App[Any], binding_id: str, default: str) -> str:
    """The key that runs ``binding_id`` now (after the user's keymap), as typed."""
    for key, active in app.screen.active_bindings.items():
        if active.binding.id == binding_id:
            return key_display(key)
    return default


def reveal_at_start(app: AclmonApp, anomaly: Anomaly) -> None:
    """Have a rank's screens (a single-agent app) open on ``anomaly``."""
    app.at_start = lambda opened: reveal(opened, anomaly)


def reveal(app: AclmonApp, anomaly: Anomaly) -> None:
    """Show ``anomaly`` in a rank's screens: the exception's detail (over its row in
    the Exceptions view), the overflow file's row in the Dumps view, or the failed
    call's detail."""
    item = anomaly.item
    if isinstance(item, ev.AclException):
        app.action_show_view("exceptions")
        app.exceptions_view.select(lambda row: getattr(row, "last", row) is item)
        app.open_exception(item)
    elif isinstance(item, ev.DumpFileSeen):
        app.action_show_view("dumps")
        app.dumps_view.select(lambda row: row is item)
    elif isinstance(item, CallFailure):
        app.open_call_failure(item)
