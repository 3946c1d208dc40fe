"""The dump file-name grammar (writer: RT ``OpDumpTask::DumpPath``).

``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`` with an optional FFTS+
suffix ``.{task_type}.{context_id}.{thread_id}.{device_id}``; old writers omit
the stream id (``{op_type}.{op_name}.{task_id}.{timestamp}``). The writer has
already replaced ``.`` in names with ``_``, so the fields split cleanly.
Overflow files are ``Opdebug.Node_OpDebug.{task}.{stream}.{ts}[...]``, matched
case-insensitively because CANN's own docs spell it both ways.
"""

from __future__ import annotations

import re
from typing import NamedTuple

OPDEBUG_PREFIX = "opdebug.node_opdebug."

# The op name is matched lazily so trailing numeric fields are taken as ids;
# the stream id is optional (old names), at most four numeric extras follow.
_DUMP_NAME = re.compile(
    r"^(?P<op_type>[^.]+)\.(?P<op_name>.+?)\.(?P<task>\d+)(?:\.(?P<stream>\d+))?"
    r"\.(?P<ts>\d+)(?P<extra>(?:\.\d+){0,4})$"
)


class DumpName(NamedTuple):
    op_type: str
    op_name: str
    task_id: int
    stream_id: int | None  # None for old 4-field names
    timestamp: int  # microseconds since the epoch
    task_type: int | None = None  # FFTS+ suffix (4 = FFTSPLUS)
    context_id: int | None = None
    thread_id: int | None = None
    device_id: int | None = None
    is_overflow: bool = False


def sanitize_name(name: str) -> str:
    """An op type or name as dump file names spell it: space ``.`` ``/`` ``\\`` become ``_``
    (RT ``dump_task.h``); msaccucmp looks goldens up under the same spelling."""
    return name.replace(" ", "_").replace(".", "_").replace("/", "_").replace("\\", "_")


def is_opdebug_name(name: str) -> bool:
    return name.lower().startswith(OPDEBUG_PREFIX)


def parse_dump_name(name: str) -> DumpName | None:
    """Parse a base name (no directory); ``None`` if it does not follow the grammar."""
    match = _DUMP_NAME.match(name)
    if match is None:
        return None
    extra = [int(x) for x in match.group("extra").split(".")[1:]]
    ffts: list[int | None] = [None, None, None, None]
    if len(extra) == 4:
        ffts = list(extra)
    stream = match.group("stream")
    return DumpName(
        op_type=match.group("op_type"),
        op_name=match.group("op_name"),
        task_id=int(match.group("task")),
        stream_id=int(stream) if stream is not None else None,
        timestamp=int(match.group("ts")),
        task_type=ffts[0],
        context_id=ffts[1],
        thread_id=ffts[2],
        device_id=ffts[3],
        is_overflow=is_opdebug_name(name),
    )
