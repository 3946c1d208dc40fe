"""The trace validator (``aclmon export --check FILE``): what makes a Chrome
trace-event JSON file misdrawn or refused by Perfetto and MindStudio Insight
(docs/reference/trace_formats.md, "Perfetto pitfalls").

One rule each, named in the report:

- ``ts``: a ``ts`` (or an ``X``'s ``dur``) that is not a finite JSON number
  (msprof's string timestamps, ``NaN``, ``Infinity``), a negative one (Perfetto
  refuses them) or one past what a 64-bit nanosecond clock holds;
- ``nesting``: two ``X`` (or ``B``/``E``) slices on one (pid, tid) that overlap
  without one holding the other;
- ``async``: an async ``b`` without its ``e`` or the other way round;
- ``flow``: a flow ``s`` without its ``f`` or the other way round;
- ``flow-id``: a flow id at or above 2^53 (JavaScript numbers lose it);
- ``control``: a raw control character inside a string;
- ``size``: a file above the size cap;
- ``syntax``: not JSON, or not a trace (no ``traceEvents``, an event that is not
  an object, a file that ends early).

The file is read as a stream, one event at a time (a 512 MiB trace is checked in
bounded memory apart from the slices' start and end times, 16 bytes a slice).
"""

from __future__ import annotations

import json
import math
import os
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from aclmon.errors import AclmonError

RULES = ("ts", "nesting", "async", "flow", "flow-id", "control", "size", "syntax")
#: the largest integer a JavaScript number holds exactly, plus one
FLOW_ID_LIMIT = 1 << 53
#: times (µs) from which a reader's int64 ns clock overflows
MAX_TS_US = float(1 << 63) / 1000
#: examples kept per rule
EXAMPLES = 5
_CHUNK = 1 << 20
#: the longest single event read (beyond it the file is refused)
MAX_EVENT = 64 << 20
_WHITESPACE = " \t\n\r"


@dataclass
class TraceCheck:
    """What one file broke: rule -> how many times, and a few examples."""

    path: str
    size: int = 0
    events: int = 0
    phases: dict[str, int] = field(default_factory=dict)
    problems: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def fail(self, rule: str, text: str) -> None:
        self.problems[rule] = self.problems.get(rule, 0) + 1
        shown = self.examples.setdefault(rule, [])
        if len(shown) < EXAMPLES:
            shown.append(text)

    def lines(self) -> list[str]:
        """The report as text lines."""
        phases = ", ".join(f"{n} {ph}" for ph, n in sorted(self.phases.items()))
        head = f"{self.path}: {self.events} events ({phases or 'none'}), {self.size} bytes"
        if self.ok:
            return [f"{head}: ok"]
        out = [f"{head}: {sum(self.problems.values())} problems"]
        for rule in RULES:
            if rule in self.problems:
                out.append(f"  {rule}: {self.problems[rule]}")
                out.extend(f"    {text}" for text in self.examples.get(rule, ()))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "size": self.size,
            "events": self.events,
            "phases": self.phases,
            "problems": self.problems,
            "examples": self.examples,
        }


class _Syntax(Exception):
    """The file is not JSON (or not a trace) from here on."""


def check_trace(path: str | os.PathLike[str], max_bytes: int | None = None) -> TraceCheck:
    """Checks one file against every rule; ``max_bytes``: the size cap (None: none).
    Raises :class:`~aclmon.errors.AclmonError` only when the file cannot be read."""
    name = os.fspath(path)
    report = TraceCheck(name)
    try:
        report.size = os.path.getsize(name)
        handle = open(name, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    except OSError as exc:
        raise AclmonError(f"{name}: {exc.strerror or exc}") from None
    if max_bytes is not None and report.size > max_bytes:
        report.fail("size", f"{report.size} bytes, over the cap of {max_bytes}")
    checker = _Checker(report)
    with handle:
        reader = _Reader(handle)
        try:
            for event in _trace_events(reader):
                checker.event(event)
        except _Syntax as exc:
            rule = "control" if "control character" in str(exc) else "syntax"
            report.fail(rule, str(exc))
        except OSError as exc:
            raise AclmonError(f"{name}: {exc.strerror or exc}") from None
    checker.finish()
    return report


# ---------------------------------------------------------------- reading
class _Reader:
    """A text file read in chunks, decoded one JSON value at a time."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.buffer = ""
        self.pos = 0
        self.consumed = 0  # characters dropped from the front of the buffer
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self.handle.read(_CHUNK)
        if not chunk:
            self.eof = True
            return False
        if self.pos:
            self.consumed += self.pos
            self.buffer = self.buffer[self.pos :]
            self.pos = 0
        self.buffer += chunk
        return True

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end)."""
        while True:
            buffer, pos = self.buffer, self.pos
            while pos < len(buffer) and buffer[pos] in _WHITESPACE:
                pos += 1
            self.pos = pos
            if pos < len(buffer):
                return buffer[pos]
            if not self._more():
                return ""

    def expect(self, char: str) -> None:
        found = self.peek()
        if found != char:
            raise _Syntax(f"at character {self.where()}: expected {char!r}, found {found!r}")
        self.pos += 1

    def where(self) -> int:
        return self.consumed + self.pos

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as exc:
                # A value cut by the end of the buffer: read on and try again.
                if len(self.buffer) - self.pos < MAX_EVENT and self._more():
                    continue
                raise _Syntax(f"at character {self.consumed + exc.pos}: {exc.msg}") from None
            if end == len(self.buffer) and self._more():
                continue  # a number may go on in the next chunk
            self.pos = end
            return value


def _trace_events(reader: _Reader) -> Iterator[Any]:
    first = reader.peek()
    if first == "[":
        yield from _array(reader, "the top-level array")
        return
    if first != "{":
        raise _Syntax("not a trace: neither a JSON object nor an array")
    reader.expect("{")
    found = False
    while True:
        if reader.peek() == "}":
            reader.pos += 1
            break
        key = reader.value()
        if not isinstance(key, str):
            raise _Syntax(f"at character {reader.where()}: a key that is not a string")
        reader.expect(":")
        if key == "traceEvents":
            found = True
            if reader.peek() != "[":
                raise _Syntax("traceEvents is not an array")
            yield from _array(reader, "traceEvents")
        else:
            reader.value()
        if reader.peek() == ",":
            reader.pos += 1
        elif reader.peek() != "}":
            raise _Syntax(f"at character {reader.where()}: expected ',' or '}}'")
    if not found:
        raise _Syntax("not a trace: the object has no traceEvents")
    if reader.peek():
        raise _Syntax(f"at character {reader.where()}: more after the end of the trace")


def _array(reader: _Reader, what: str) -> Iterator[Any]:
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    while True:
        if not reader.peek():
            raise _Syntax(f"the file ends inside {what} (no closing ']')")
        yield reader.value()
        following = reader.peek()
        if following == ",":
            reader.pos += 1
        elif following == "]":
            reader.pos += 1
            return
        elif not following:
            raise _Syntax(f"the file ends inside {what} (no closing ']')")
        else:
            raise _Syntax(f"at character {reader.where()}: expected ',' or ']' in {what}")


# ---------------------------------------------------------------- rules
def _finite(value: object) -> TypeGuard[float]:
    """A JSON number that is finite (a bool is not a number here)."""
    return (type(value) is int or type(value) is float) and math.isfinite(value)


class _Checker:
    def __init__(self, report: TraceCheck) -> None:
        self.report = report
        #: (pid, tid) -> starts and ends (ns) of its X slices, interleaved
        self.slices: dict[tuple[Any, Any], array[int]] = {}
        #: (pid, tid) -> starts (ns) of its open B slices
        self.open_b: dict[tuple[Any, Any], list[int]] = {}
        #: (cat, id, scope) -> b count minus e count
        self.async_open: dict[tuple[Any, ...], int] = {}
        #: (cat, id) -> s count minus f count
        self.flows_open: dict[tuple[Any, ...], int] = {}

    def event(self, event: Any) -> None:
        report = self.report
        report.events += 1
        if not isinstance(event, dict):
            report.fail("syntax", f"event {report.events} is not an object")
            return
        ph = event.get("ph")
        if not isinstance(ph, str):
            report.fail("syntax", f"event {report.events} has no phase")
            return
        report.phases[ph] = report.phases.get(ph, 0) + 1
        if ph == "M":
            return
        ts = event.get("ts")
        if not _finite(ts) or not 0 <= ts < MAX_TS_US:
            report.fail("ts", f"event {report.events} ({ph} {_name(event)}): ts {ts!r}")
            return
        start = round(ts * 1000)
        track = (event.get("pid"), event.get("tid"))
        if ph == "X":
            dur = event.get("dur")
            if not _finite(dur) or not 0 <= dur < MAX_TS_US - ts:
                report.fail("ts", f"event {report.events} (X {_name(event)}): dur {dur!r}")
                return
            spans = self.slices.get(track)
            if spans is None:
                spans = self.slices[track] = array("q")
            spans.append(start)
            spans.append(start + round(dur * 1000))
        elif ph == "B":
            self.open_b.setdefault(track, []).append(start)
        elif ph == "E":
            opened = self.open_b.get(track)
            if not opened:
                report.fail("async", f"event {report.events}: E on {track} without a B")
                return
            begin = opened.pop()
            spans = self.slices.setdefault(track, array("q"))
            spans.append(begin)
            spans.append(max(start, begin))
        elif ph in ("b", "e"):
            key = (event.get("cat"), _hashable(event.get("id")), _hashable(event.get("scope")))
            count = self.async_open.get(key, 0) + (1 if ph == "b" else -1)
            if count:
                self.async_open[key] = count
            else:
                self.async_open.pop(key, None)
        elif ph in ("s", "t", "f"):
            flow_id = event.get("id")
            if _flow_id_too_big(flow_id):
                report.fail("flow-id", f"event {report.events} ({ph}): id {flow_id!r} ≥ 2^53")
            if ph != "t":
                flow = (event.get("cat"), _hashable(flow_id))
                count = self.flows_open.get(flow, 0) + (1 if ph == "s" else -1)
                if count:
                    self.flows_open[flow] = count
                else:
                    self.flows_open.pop(flow, None)

    def finish(self) -> None:
        report = self.report
        for (cat, async_id, _scope), count in self.async_open.items():
            what = "b without e" if count > 0 else "e without b"
            report.fail("async", f"{what}: cat {cat!r}, id {async_id!r} ({abs(count)})")
        for (cat, flow_id), count in self.flows_open.items():
            what = "s without f" if count > 0 else "f without s"
            report.fail("flow", f"{what}: cat {cat!r}, id {flow_id!r} ({abs(count)})")
        for track, opened in self.open_b.items():
            if opened:
                report.fail("async", f"{len(opened)} B without E on {track}")
        for track, spans in self.slices.items():
            _check_nesting(report, track, spans)


def _check_nesting(report: TraceCheck, track: tuple[Any, Any], spans: array[int]) -> None:
    pairs = sorted(zip(spans[::2], spans[1::2], strict=True), key=lambda p: (p[0], -p[1]))
    stack: list[int] = []  # ends of the slices holding the current one
    for start, end in pairs:
        while stack and stack[-1] <= start:
            stack.pop()
        if stack and end > stack[-1]:
            report.fail(
                "nesting",
                f"pid {track[0]} tid {track[1]}: a slice at {start / 1000} µs"
                f" ends at {end / 1000} µs, after the one holding it ({stack[-1] / 1000} µs)",
            )
            continue
        stack.append(end)


def _name(event: dict[str, Any]) -> str:
    return repr(str(event.get("name", ""))[:60])


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def _flow_id_too_big(value: Any) -> bool:
    if type(value) is int:
        return value >= FLOW_ID_LIMIT
    if type(value) is float:
        return value >= FLOW_ID_LIMIT
    if isinstance(value, str) and value.isdigit():
        return len(value) > 16 or int(value) >= FLOW_ID_LIMIT
    return False
