"""How a source is named across a fleet: the tokens of job and host names.

A fleet source is ``(host, pid)``, and its NATS subjects are
``aclmon.<job>.<host>.<pid>.<class>``: both use the same host token, so that
a viewer can check that what a source says about itself (its Hello) agrees
with where it was published. A token cannot hold ``.``, ``*``, ``>`` or white
space (NATS subject syntax): those become ``_``. The full names stay in the
events.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[.*>\s]+")


def token(text: str) -> str:
    """``text`` as one subject token: ``.``, ``*``, ``>`` and whitespace become
    ``_`` (the full value stays in the events)."""
    cleaned = _UNSAFE.sub("_", text.strip())
    return cleaned or "_"


def short_host(host: str) -> str:
    """The token of a host name: its first label."""
    return token(host.split(".", 1)[0] if host else "")
