"""Text from outside drawn as text: nothing in it can steer the terminal or the markup.

Almost every string a screen shows comes from outside aclmon: the job (its
stdout under ``--capture-output``, its CANN log), a dump file's name or
contents, a peer on the bus or on NATS. Written as it is, an escape sequence in
one (ESC, CSI, OSC, BEL, a C1 control) would set the window title, clear the
screen or rewrite what is drawn; markup in one (``[bold]``, ``[link=…]``) would
style it, make a link, or (a stray closing tag) crash the screen.

The rules, all here:

- :func:`inert` and :func:`inert_line` make a string drawable: control
  characters shown as escapes (``\\x1b``), tabs as spaces; a line is cut to
  :data:`LINE_LIMIT` characters first, so a 1 MB log line costs a row no more
  than a short one (the store keeps it whole; a detail shows it all).
- Markup is never parsed in text from outside: views build ``Text`` (or
  ``Content``) objects, never markup strings; the apps' Rich console renders
  plain strings as they are (Table cells, titles); toasts are never markup
  (:class:`InertApp`), and palette entries are highlighted as plain text.
- Under everything, :class:`InertFilter`: every line Textual draws, from any
  widget (Textual's own toasts and palette included), has any control
  character left in its text escaped before it goes to the terminal. A view
  that forgets :func:`inert` shows an escape; it never sends one.
  :class:`VirtualList` rows go through :func:`inert_text` already, so a cut
  row still ends with its ellipsis.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

from rich.segment import Segment
from rich.text import Text
from textual.app import App
from textual.color import Color
from textual.content import Content
from textual.filter import LineFilter
from textual.fuzzy import Matcher
from textual.notifications import SeverityLevel

from aclmon.terminal_text import escape_controls, escape_line_controls

#: characters of one line a row shows at most (more than any terminal is wide);
#: the rest of a longer line is left out of the row, not processed and cut
LINE_LIMIT = 1024
#: a tab in text from outside: spaces up to the next multiple of this
TAB_SIZE = 8
#: what :func:`inert_text` and :class:`InertFilter` escape: every C0 control,
#: DEL, C1 and the bidirectional overrides (one line of a screen holds no
#: tab, newline or carriage return either)
_UNSAFE_IN_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]+")

ResultT = TypeVar("ResultT")


def inert(text: str) -> str:
    """``text`` as a screen may draw it (lines kept): control characters shown
    escaped, tabs as spaces."""
    text = escape_controls(text)
    return text.expandtabs(TAB_SIZE) if "\t" in text else text


def inert_line(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` for one line of a row: its first ``limit`` characters only
    (then ``…``), tabs as spaces, every control character shown escaped,
    line breaks too."""
    cut = text[:limit]
    if "\t" in cut:
        cut = cut.expandtabs(TAB_SIZE)
    cut = escape_line_controls(cut)
    return cut + "…" if len(text) > limit else cut


def inert_text(text: Text) -> Text:
    """``text`` (a Rich Text, its styles kept) with every control character
    in it shown escaped."""
    plain = text.plain
    if _UNSAFE_IN_LINE.search(plain) is None:
        return text
    runs = [(m.start(), m.end()) for m in _UNSAFE_IN_LINE.finditer(plain)]
    cuts = [offset for run in runs for offset in run]
    unsafe = {start for start, _end in runs}
    out = text.blank_copy()
    for start, piece in zip([0, *cuts], text.divide(cuts), strict=True):
        if start in unsafe:
            escaped = Text(escape_line_controls(piece.plain), style=piece.style)
            for span in piece.spans:  # the run takes the styles over any part of it
                escaped.stylize(span.style, 0, len(escaped))
            piece = escaped
        out.append_text(piece)
    return out


class InertFilter(LineFilter):
    """The last rule before the terminal: control characters left in a drawn
    line's text are shown escaped (the line keeps its width: what the escapes
    push past its end is cut)."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        # One search over the whole line first: every line of every widget comes
        # here each time it is drawn again (a following Timeline's rows once a
        # second). A control segment's own escapes match too, and are then told
        # apart from the text's below.
        if _UNSAFE_IN_LINE.search("".join([segment[0] for segment in segments])) is None:
            return segments
        if not any(
            _UNSAFE_IN_LINE.search(segment.text) for segment in segments if not segment.control
        ):
            return segments
        width = Segment.get_line_length(segments)
        escaped = [
            segment
            if segment.control or _UNSAFE_IN_LINE.search(segment.text) is None
            else Segment(escape_line_controls(segment.text), segment.style)
            for segment in segments
        ]
        return Segment.adjust_line_length(escaped, width)


INERT_FILTER = InertFilter()


def literal_highlight(matcher: Matcher, candidate: str) -> Content:
    """A palette entry's name with the typed letters highlighted, as plain text
    (Textual's own ``Matcher.highlight`` reads the name as markup)."""
    content = Content(inert_line(candidate))
    _score, offsets = matcher.fuzzy_search.match(matcher.query, content.plain)
    for offset in offsets:
        if not content.plain[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class InertApp(App[ResultT]):
    """An app that draws text from outside as text (see the module docstring):
    :class:`InertFilter` on every line, Rich's console without markup, toasts
    plain and inert."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Rich offers no setter: strings in Rich renderables (Table cells,
        # titles) are drawn as they are, never read as markup.
        self.console._markup = False

    def get_line_filters(self) -> Sequence[LineFilter]:
        return [*super().get_line_filters(), INERT_FILTER]

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast as plain text (``markup`` is ignored: aclmon's toasts
        carry names and messages from outside)."""
        super().notify(
            inert(message), title=inert(title), severity=severity, timeout=timeout, markup=False
        )
