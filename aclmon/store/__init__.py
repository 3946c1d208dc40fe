"""Event-sourced state for the viewer (no Textual).

- :mod:`aclmon.store.state`: the state model (records, bounds, :func:`clone`);
- :mod:`aclmon.store.fold`: :class:`Store`, which applies events to it;
- :mod:`aclmon.store.pairing`: which pending Begin an End takes back;
- :mod:`aclmon.store.ops`: operator timings (per device, model and op) and msproftx records;
- :mod:`aclmon.store.export`: the state as JSON;
- :mod:`aclmon.store.replay`: a cursor over a recording (snapshots, seeks);
- :mod:`aclmon.store.fleet`: one store per source of a fleet.
"""

from aclmon.store.fold import Store
from aclmon.store.state import (
    ContextState,
    Counters,
    DeviceState,
    ModelState,
    OpStats,
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
