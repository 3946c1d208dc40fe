"""Field values that stand for "not known" rather than for a value: the JSON form
shows them as null and text as "–"."""

from __future__ import annotations

from typing import Any

from aclmon.events.schema import (
    DEVICE_SYNC,
    AclException,
    CallFailed,
    DeviceSample,
    Event,
    Goodbye,
    Hello,
    LogLine,
    OpTiming,
    StreamSyncBegin,
    StreamSynchronized,
    TxMark,
    TxRange,
)

#: Field values that stand for "not known" (or "none") rather than for a value, per
#: event kind: the JSON form shows them as null and text as "–", so that nobody reads
#: a rank of -1 or a utilization of -1 % as a figure. The wire keeps the numbers
#: (msgpack arrays of fixed types).
UNKNOWN_VALUES: dict[type, dict[str, object]] = {
    # device_count 0 / soc_name "": not asked yet (the agent started before acl.init)
    Hello: {
        "device_count": 0,
        "soc_name": "",
        "rank": -1,
        "rank_size": -1,
        "local_rank": -1,
        "device_id": -1,
    },
    DeviceSample: {"cube_util": -1, "vector_util": -1, "aicpu_util": -1},
    # stream DEVICE_SYNC: synchronize_device, about no one stream; timeout_ms -1: none
    StreamSyncBegin: {"stream": DEVICE_SYNC},
    StreamSynchronized: {"stream": DEVICE_SYNC, "timeout_ms": -1},
    AclException: {"execution": 0},
    OpTiming: {"device_id": -1, "stream_id": -1, "task_id": -1},
    TxMark: {"thread_id": 0},
    TxRange: {"thread_id": 0, "end_thread_id": 0},
    LogLine: {"pid": 0, "logged_ns": 0},
    CallFailed: {"stream": -1},  # a call about no stream
}


def known(event: Event, name: str) -> Any:
    """``event.name``, or None when its value is the kind's "not known" value
    (:data:`UNKNOWN_VALUES`); a Goodbye's exit status is None unless known."""
    value = getattr(event, name)
    if type(event) is Goodbye and name == "exit_status" and not event.status_known:
        return None
    unknown = UNKNOWN_VALUES.get(type(event))
    if unknown is not None and name in unknown and value == unknown[name]:
        return None
    return value
