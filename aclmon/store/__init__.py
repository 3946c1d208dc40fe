"""Event-sourced state for the viewer (no Textual): see :mod:`aclmon.store.state`."""

from aclmon.store.state import (
    ContextState,
    Counters,
    DeviceState,
    ModelState,
    OpStats,
    Store,
    StoreState,
    StreamState,
)

__all__ = [
    "ContextState",
    "Counters",
    "DeviceState",
    "ModelState",
    "OpStats",
    "Store",
    "StoreState",
    "StreamState",
]
