"""Device error text split into the runtime's messages: the known prefixes gone
(plog headers, error-message banners, other programs' log prefixes), a message
that ran over several lines joined, a ``[FUNC:…][FILE:…][LINE:…]`` trailer ending
a message. :mod:`aclmon.dump.device_errors.parser` reads the fields of each."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from aclmon.dump.plog import logged_ns

#: characters kept per message (hostile input)
MAX_MESSAGE_CHARS = 8192

VALUE = r"(0[xX][0-9a-fA-F]+|\d+)"
TRAILER = re.compile(
    r"\[\s*FUNC\s*:[^\]\[]*\]\s*\[\s*FILE\s*:[^\]\[]*\](?:\s*\[\s*LINE\s*:[\s\d]*\])?"
)
#: prefixes in front of the runtime's text, removed one after the other
_PREFIXES = (
    # a plog header, with the thread id, function and stage tags after [file:line]
    re.compile(
        r"\[(?:ERROR|WARNING|INFO|DEBUG|EVENT)\] [A-Za-z0-9_.\-]+\(\d+,[^)]*\):"
        r"[\d\-:.]+ ?(?:\[[^\]]*\])?\s*(?:\d+\s+)?(?:[A-Za-z_][\w:~]*:\s*)?(?:\[[A-Za-z]+\])*\s*"
    ),
    # the entry text of a plog parser: "<tid> <Function>:" (the header already gone)
    re.compile(r"\d{1,10}\s+[A-Za-z_][\w:~]*:\s*(?:\[[A-Za-z]+\])*\s*(?=\S)"),
    # error-message banners: "EZ9999[PID: 1] <time> (EZ9999):", "EZ9999: [PID: 1] <time>",
    # "EZ9999: <time>"
    re.compile(r"E[A-Z]\d{4}\[PID:\s*\d+\]\s*[\d\-:.]+\s*\(E[A-Z]\d{4}\):\s*"),
    re.compile(r"E[A-Z]\d{4}:\s*\[PID:\s*\d+\]\s*[\d\-:.]+\s+"),
    re.compile(r"E[A-Z]\d{4}:\s*\d{4}-\d\d-\d\d-[\d:.]+\s+"),
    # other programs' log prefixes (vLLM workers, launchers)
    re.compile(r"\[RAW SERVER\]\s*"),
    re.compile(
        r"\((?:[^()]|\([^()]*\))*\)\s+(?:ERROR|WARNING|INFO|DEBUG)\s+[\d\-]+\s+[\d:]+\s+\[[^\]]*\]\s*"
    ),
    re.compile(r"\[rank\d+\]:"),
    re.compile(r"\[[WEI]\d*\s[^\]]*\]\s*(?:Warning:\s*)?"),
)
CODE_BANNER = re.compile(r"\b(E[A-Z]\d{4})\b")
_TIME_IN_LINE = re.compile(r"(\d{4})-(\d\d)-(\d\d)-(\d\d):(\d\d):(\d\d)\.(\d{3})(?:\.(\d{3}))?")

# ---------------------------------------------------------------- message heads
_CORE_HEAD = re.compile(r"(?:The error from device|An error occurs on the device)\b")
_EXTEND_HEAD = re.compile(r"The extend info\b")
_HEADS = (
    _CORE_HEAD,
    _EXTEND_HEAD,
    re.compile(r"(?:Kernel task happen error|An error occurred in the kernel task)"),
    re.compile(r"(?:AICORE|AIV|AICPU|AIC|SDMA) Kernel (?:task )?happen error"),
    re.compile(
        r"(?:\[DFX_INFO\])?(?:Aicore kernel execute failed|AI Core kernel execution failed"
        r"|fftsplus task execute failed|model execute task failed)"
    ),
    re.compile(r"\[AIC_INFO\]"),
    re.compile(r"Task run failed\b"),
    re.compile(r"TraceBack \(most recent call last\)"),
    re.compile(r"\w+ execut(?:e|ion) failed, reason="),
    re.compile(r"[\w ]+ failed, runtime result = \d+"),
    re.compile(r"E[A-Z]\d{4}: Inner Error"),
    re.compile(r"\[Error\]:"),
)
#: kinds of message that a terminal or web page may have wrapped onto further lines
_WRAPPING = ("core", "extend", "fault")


# ---------------------------------------------------------------- reading values
def read_value(text: str) -> int:
    text = text.strip()
    return int(text, 16) if text[:2].lower() == "0x" else int(text)


def squeeze(text: str) -> str:
    """An identifier a wrap may have cut with a run of spaces, whole again."""
    return re.sub(r"\s+", "", text)


def one_line(text: str) -> str:
    """A message that ran over several lines, on one line (a wrap is one space)."""
    return re.sub(r"\s*\n\s*", " ", text).strip()


# ---------------------------------------------------------------- lines -> messages
@dataclass
class Message:
    kind: str
    text: str
    complete: bool
    codes: list[str]
    logged_ns: int


def _strip_prefixes(line: str) -> tuple[str, list[str], int]:
    """The runtime's text of a line, the error codes its prefixes named, and the time
    a prefix states (0: none)."""
    codes: list[str] = []
    logged = 0
    text = line.strip()
    changed = True
    while changed and text:
        changed = False
        for prefix in _PREFIXES:
            match = prefix.match(text)
            if match is None or not match.group(0):
                continue
            head = match.group(0)
            codes.extend(CODE_BANNER.findall(head))
            if not logged:
                logged = _time_of(head)
            text = text[match.end() :].lstrip()
            changed = True
    return text, codes, logged


def _time_of(text: str) -> int:
    match = _TIME_IN_LINE.search(text)
    return logged_ns(match.groups()) if match is not None else 0


def _kind(text: str) -> str:
    if _CORE_HEAD.match(text):
        return "core"
    if _EXTEND_HEAD.match(text):
        return "extend"
    for index, head in enumerate(_HEADS[2:], start=2):
        if head.match(text):
            return "fault" if index == 4 else "other"
    return ""


def _complete(kind: str, text: str) -> bool:
    """Whether a message of a wrapping kind has all of itself (else the next line,
    if it starts no message of its own, continues it)."""
    if TRAILER.search(text):
        return True
    flat = text.rstrip()
    if kind == "extend":
        return bool(re.search(r"subErrType\s*:\s*" + VALUE + r"\.?$", flat))
    if kind in ("core", "fault"):
        return flat.endswith(".")
    return True


def messages_of(lines: Iterable[str]) -> list[Message]:
    """Split text into the runtime's messages: prefixes gone, wrapped lines joined,
    a ``[FUNC:…][FILE:…][LINE:…]`` trailer ending a message."""
    out: list[Message] = []
    open_message: Message | None = None
    for raw in lines:
        text, codes, logged = _strip_prefixes(raw)
        if not text:
            if codes and open_message is not None:
                open_message.codes.extend(codes)
            continue
        pieces = _split_at_trailers(text)
        for index, piece in enumerate(pieces):
            kind = _kind(piece)
            continuing = (
                open_message is not None and not open_message.complete and not kind and (index == 0)
            )
            if continuing:
                assert open_message is not None
                if len(open_message.text) < MAX_MESSAGE_CHARS:
                    open_message.text += "\n" + piece
                open_message.complete = _complete(open_message.kind, open_message.text)
                open_message.codes.extend(codes)
                continue
            message = Message(
                kind or "text",
                piece[:MAX_MESSAGE_CHARS],
                True,
                list(codes) + CODE_BANNER.findall(piece[:200]) if index == 0 else [],
                logged,
            )
            message.complete = kind not in _WRAPPING or _complete(kind, piece)
            out.append(message)
            open_message = message
    return out


def _split_at_trailers(text: str) -> list[str]:
    """A line cut after each trailer (a message ends there; more text starts another)."""
    pieces: list[str] = []
    start = 0
    for match in TRAILER.finditer(text):
        pieces.append(text[start : match.end()])
        start = match.end()
    rest = text[start:].strip()
    if rest or not pieces:
        pieces.append(text[start:] if not pieces else rest)
    return [p.strip() for p in pieces if p.strip()]
