"""What a job's command line may show to others: secrets in it are masked.

A job's ``argv`` travels in its :class:`~aclmon.events.Hello` to every viewer,
into recordings and, through a relay, to everyone who may read the NATS
subjects of the job. Arguments that look like secrets are replaced by
:data:`MASK` before that: ``--password X`` and ``--api-key=X`` (an option whose
name says it holds a secret, with its value after ``=`` or as the next
argument), ``DB_TOKEN=X`` (an assignment whose name says so) and the password
in a URL (``nats://user:X@host``). A false positive costs one masked argument
on screen; a false negative would publish a secret.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MASK = "***"

#: words that name a secret, anywhere in an option or variable name
_SECRET_WORDS = ("token", "passw", "pwd", "secret", "key", "credential", "auth", "cookie")
_NAME = re.compile(r"^(-{0,2})([A-Za-z_][A-Za-z0-9_.\-]*)$")
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/@:\s]*:)[^/@\s]+(?P<at>@)")


def _names_a_secret(name: str) -> bool:
    lowered = name.lower()
    if lowered.startswith(("no-", "no_")):  # `--no-auth` is a switch, not a secret
        return False
    return any(word in lowered for word in _SECRET_WORDS)


def redact_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` with the values of secret-looking arguments replaced by ``***``."""
    out: list[str] = []
    mask_next = False
    for argument in argv:
        text = str(argument)
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        name, equals, _value = text.partition("=")
        named = _NAME.match(name)
        if equals and named and _names_a_secret(named.group(2)):
            out.append(f"{name}={MASK}")
            continue
        if not equals and named and named.group(1) and _names_a_secret(named.group(2)):
            out.append(text)  # `--password VALUE`: the value is the next argument
            mask_next = True
            continue
        out.append(_URL_PASSWORD.sub(rf"\g<head>{MASK}\g<at>", text))
    return tuple(out)
