"""Text for a terminal, with the control characters it would obey made visible.

File names, op names, log lines and error messages can come from anywhere (a
hostile dump directory, a peer on the bus); written raw, an escape sequence in
one can set the window title, clear the screen or rewrite what was printed
before. :func:`escape_controls` shows such characters as ``\\x1b``-style
escapes; :class:`EscapingStream` does it to everything written to a text
stream (the CLI wraps stdout and stderr with it).
"""

from __future__ import annotations

import re
from typing import Any

#: C0 controls except tab, newline and carriage return; DEL; C1 controls; and the
#: bidirectional overrides and isolates, which reorder what the reader sees
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every character that would steer a terminal shown escaped."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


#: :data:`_UNSAFE` and tab, newline and carriage return: within one line of a
#: screen they move the cursor as well
_UNSAFE_IN_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def escape_line_controls(text: str) -> str:
    """``text`` for one line of a screen: :func:`escape_controls`, and tab,
    newline and carriage return shown escaped too."""
    if _UNSAFE_IN_LINE.search(text) is None:
        return text
    return _UNSAFE_IN_LINE.sub(_escape, text)


class EscapingStream:
    """A text stream that escapes control characters in what is written to it
    (everything else is the wrapped stream's)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._stream.write(escape_controls(text)))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
