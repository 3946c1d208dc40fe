"""The watcher of the job's dump directory (the one its acl.json names:
:mod:`aclmon.dump.acljson` reads it).

The watcher runs on the agent's control thread: it polls the dump tree, waits
until a new file's size is stable (the runtime may still be writing it),
classifies and summarises it with :mod:`aclmon.dump`, and publishes one
:class:`DumpFileSeen` per file. Files older than the watch are not announced.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from typing import TYPE_CHECKING, Any

from aclmon.agent.triage import REPRO_DIR
from aclmon.dump.walk import walk_files
from aclmon.events import (
    EXCEPTION_DUMP,
    NANO_DUMP,
    OP_DUMP,
    OVERFLOW_DUMP,
    STATS_DUMP,
    DumpFileSeen,
    optypes,
)

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

#: entries looked at per poll, and files remembered, so a huge tree cannot stall the agent
MAX_SCAN_ENTRIES = 20000
MAX_REMEMBERED = 200000
MAX_DEPTH = 12
#: how much older than the watch start a file may be and still count as new (clock slack)
MTIME_SLACK_S = 2.0

_OPDEBUG = re.compile(r"opdebug\.node_opdebug\.", re.IGNORECASE)


#: exception dumps are named ``exception_info.{op_name}.{task_id}.{timestamp}``:
#: their first field is not an op type and must never be learned as one
EXCEPTION_DUMP_PREFIX = "exception_info."


def classify_name(name: str) -> str:
    """The DumpFileSeen kind from a file name alone (used when aclmon.dump cannot say)."""
    if _OPDEBUG.search(name):
        return OVERFLOW_DUMP
    if name.endswith(".csv"):
        return STATS_DUMP
    if name.startswith(EXCEPTION_DUMP_PREFIX):
        return EXCEPTION_DUMP
    return OP_DUMP


class DumpWatcher:
    """Polls one dump directory tree and publishes each new, complete file."""

    def __init__(self, ctx: AgentContext, root: str) -> None:
        self.ctx = ctx
        self.root = root
        self.started = time.time() - MTIME_SLACK_S
        #: path -> size at the last poll, for files not yet announced
        self._pending: dict[str, int] = {}
        self._announced: set[str] = set()
        self.announced = 0

    def poll(self, final: bool = False) -> int:
        """One pass over the tree; returns the number of files announced.

        A file is announced once its size is the same at two polls (the runtime may
        still be writing it); ``final`` announces every non-empty file at once.
        """
        if not os.path.isdir(self.root):
            return 0
        seen_now: dict[str, int] = {}
        self._scan(seen_now)
        count = 0
        for path, size in seen_now.items():
            previous = self._pending.get(path)
            if size == 0 or (not final and previous != size):
                self._pending[path] = size  # new or still growing: look again next poll
                continue
            self._pending.pop(path, None)
            if len(self._announced) < MAX_REMEMBERED:
                self._announced.add(path)
            self._announce(path, size)
            count += 1
        return count

    def _scan(self, out: dict[str, int]) -> None:
        """path -> size of the files below the root not announced yet."""
        ours = f"{os.sep}{REPRO_DIR}{os.sep}"
        for entry in walk_files(self.root, MAX_DEPTH, MAX_SCAN_ENTRIES):
            path = entry.path
            if path in self._announced or entry.name.endswith(".json") or ours in path:
                continue  # .json: msaccucmp's own output beside the dumps; ours: re-runs
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_mtime < self.started:
                if len(self._announced) < MAX_REMEMBERED:
                    self._announced.add(path)
                continue
            out[path] = info.st_size

    def _announce(self, path: str, size: int) -> None:
        name = os.path.basename(path)
        kind, summary = describe_dump(path, name)
        # operator dumps name the op type, exception dumps only when named after it
        op = (
            optypes.from_dump_name(name, exception_dump=kind == EXCEPTION_DUMP)
            if kind in (OP_DUMP, EXCEPTION_DUMP)
            else None
        )
        if op is not None:
            self.ctx.state.learn_op_type(op[1], op[0])
        self.announced += 1
        self.ctx.emit(DumpFileSeen, path, kind, size, summary)


def describe_dump(path: str, name: str) -> tuple[str, dict[str, Any]]:
    """(kind, summary) of one dump file, via aclmon.dump; never raises (the
    kind from the name alone when the file cannot say, its error in the summary)."""
    try:
        from aclmon.dump import classify, summarize
    except Exception as exc:  # the decoder's imports failed in this job: still announce it
        return classify_name(name), {"error": f"dump decoding is not available: {exc}"}
    kind = classify_name(name)
    with contextlib.suppress(Exception):  # classify() catches OSError; a bug must not reach the job
        classified = classify(path)
        if classified is not None:
            # a nano dump is an operator dump in a compact container: the views treat it as one
            kind = OP_DUMP if classified == NANO_DUMP else classified
    try:
        summary = _plain(summarize(path))
    except Exception as exc:  # summarize() never raises on a bad file; a bug must not either
        summary = {"error": str(exc)}
    return kind, summary


def _plain(value: Any, depth: int = 0) -> Any:
    """A msgpack-safe copy of a summary (str keys; int, float, str, bool, None, lists, dicts)."""
    if depth > 8:
        return None
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 64) else str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in list(value.items())[:256]}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in list(value)[:256]]
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        try:
            return _plain(item(), depth + 1)
        except Exception:
            return str(value)
    return str(value)
