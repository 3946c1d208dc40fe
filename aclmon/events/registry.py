"""How an event kind is declared: :func:`register` on its class gives it a wire
number and a name and records both in :data:`KINDS` and :data:`KIND_NAMES`. The
declarations themselves are in :mod:`aclmon.events.schema`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

#: wire kind number -> class. Numbers are part of the format: never reuse one.
KINDS: dict[int, type[Any]] = {}
#: snake_case name of each kind, as used in JSON output and docs.
KIND_NAMES: dict[type[Any], str] = {}
#: the kinds registered with ``command=True`` (the schema's ``COMMAND_KINDS``).
_COMMANDS: set[type[Any]] = set()

_T = TypeVar("_T", bound=type)


def register(kind: int, name: str, *, command: bool = False) -> Callable[[_T], _T]:
    """Declare ``cls`` as wire kind ``kind`` named ``name`` (``command``: a
    viewer may send it). Sets ``cls.KIND`` and ``cls.KIND_TUPLE`` (``(kind,)``:
    ``(kind,) + event`` is the wire array; encoders batch it with C-level
    ``map()`` calls instead of a Python loop). Reusing a number or a name is an
    error at import time."""

    def add(cls: _T) -> _T:
        if kind in KINDS:
            raise ValueError(f"kind {kind} declared twice ({KINDS[kind].__name__}, {cls.__name__})")
        if name in KIND_NAMES.values():
            raise ValueError(f"kind name {name!r} declared twice")
        KINDS[kind] = cls
        KIND_NAMES[cls] = name
        if command:
            _COMMANDS.add(cls)
        cls.KIND = kind  # type: ignore[attr-defined]  # the class attribute this decorator adds
        cls.KIND_TUPLE = (kind,)  # type: ignore[attr-defined]  # likewise
        return cls

    return add


def declared_commands() -> frozenset[type[Any]]:
    """The kinds declared so far with ``command=True``."""
    return frozenset(_COMMANDS)


def kind_of(cls: type[Any]) -> int:
    """The wire kind number of an event class (what :func:`register` declared)."""
    return int(cls.KIND)
