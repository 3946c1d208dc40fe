"""Operator records read back from the files of a running profiling session.

Profiling to files (API mode, or the job's acl.json) streams nothing live; the
per-operator records, with the selected AI Core metric's values, are written
under ``PROF_*/device_{n}/data/``. Where those records are JSON lines (the
simulator writes ``aicore.jsonl`` with the metric values, ``task_time.jsonl``
without) this reader follows them and publishes each as an
:class:`~aclmon.events.OpTiming` carrying its device and ``metrics``. CANN's
own files are binary and need msprof to decode: the reader finds no JSON
lines there and publishes nothing, so the operator table shows what live
operator timings give.

Runs on the agent's control thread, a bounded amount per poll; a line it cannot
read is counted and skipped.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import (
    ACL_PROF_AICORE_METRICS,
    ACL_PROF_TASK_TIME,
    ACL_PROF_TASK_TIME_L0,
)
from aclmon.events import OpTiming
from aclmon.growing_file import GrowingFile

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

#: bytes read per file and per poll, at most; session directories followed at most
READ_PER_FILE = 256 * 1024
MAX_SESSIONS = 8
#: a session that started this long before the reader is someone else's
START_SLACK_US = 5_000_000


class _File(GrowingFile):
    __slots__ = ("device",)

    def __init__(self, path: Path, device: int) -> None:
        super().__init__(path, READ_PER_FILE)
        self.device = device


class SessionFiles:
    """Follows the sessions this process writes under ``root`` from now on."""

    def __init__(self, ctx: AgentContext, root: str) -> None:
        self.ctx = ctx
        self.root = Path(root)
        self.pid = os.getpid()
        self.since_us = time.time_ns() // 1000 - START_SLACK_US
        self.sessions: dict[Path, str | None] = {}  # directory -> record file name (None: none)
        self.files: dict[Path, _File] = {}
        self.published = 0
        self.bad_lines = 0

    def poll(self) -> int:
        """New sessions and devices, new records; returns the records published."""
        self._discover()
        return sum(self._read(followed) for followed in list(self.files.values()))

    def _discover(self) -> None:
        try:
            candidates = [p for p in self.root.iterdir() if p.name.startswith("PROF_")]
        except OSError:
            return
        for directory in candidates:
            if directory not in self.sessions and len(self.sessions) < MAX_SESSIONS:
                info = _read_info(directory / "info.json")
                if info is None:
                    continue  # not written yet, or not a session we can read
                self.sessions[directory] = self._records_of(info)
            name = self.sessions.get(directory)
            if name is None:
                continue
            for path in directory.glob(f"device_*/data/{name}"):
                if path not in self.files:
                    device = path.parent.parent.name.removeprefix("device_")
                    self.files[path] = _File(path, int(device) if device.isdigit() else -1)

    def _records_of(self, info: dict[str, Any]) -> str | None:
        """Which file of this session holds its operator records, if it is ours."""
        if info.get("pid") != self.pid:
            return None
        start = info.get("start_time_us")
        if not isinstance(start, int) or start < self.since_us:
            return None
        flags = info.get("data_type_config")
        if not isinstance(flags, int):
            return None
        if flags & ACL_PROF_AICORE_METRICS:
            return "aicore.jsonl"
        if flags & (ACL_PROF_TASK_TIME | ACL_PROF_TASK_TIME_L0):
            return "task_time.jsonl"
        return None

    def _read(self, followed: _File) -> int:
        try:
            with open(followed.path, "rb") as handle:
                handle.seek(followed.offset)
                data = handle.read(READ_PER_FILE)
        except OSError:
            return 0
        if not data:
            return 0
        published = 0
        for line in followed.whole_lines(data).splitlines():
            event = self._timing(line, followed.device)
            if event is None:
                self.bad_lines += 1
                continue
            self.ctx.emit(OpTiming, *event)
            published += 1
        self.published += published
        return published

    @staticmethod
    def _timing(line: bytes, device: int) -> tuple[Any, ...] | None:
        """The OpTiming fields (after seq and ts) of one record, or None."""
        try:
            record = json.loads(line)
            start, end = int(record["start_us"]), int(record["end_us"])
            duration = record.get("duration_ns")
            duration_us = int(duration) // 1000 if duration is not None else end - start
            values = record.get("values") or {}
            metrics = {str(k): float(v) for k, v in values.items() if type(v) in (int, float)}
            return (
                int(record["model_id"]), str(record["op_name"]), str(record.get("op_type", "")),
                start, end, max(duration_us, 1), device, metrics,
            )  # fmt: skip
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def _read_info(path: Path) -> dict[str, Any] | None:
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None
