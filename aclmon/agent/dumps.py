"""What the job's acl.json asks for, and the watcher of its dump directory.

``acl.init(config_path)`` is where a job hands CANN its acl.json. The agent
reads the same file (hostile input: size-capped, any parse problem is one
warning) to learn whether the profiler is switched on and where dumps go.

The watcher runs on the agent's control thread: it polls the dump tree, waits
until a new file's size is stable (the runtime may still be writing it),
classifies and summarises it with :mod:`aclmon.dump`, and publishes one
:class:`DumpFileSeen` per file. Files older than the watch are not announced.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import (
    ACL_AICORE_PIPE_UTILIZATION,
    ACL_PROF_ACL_API,
    ACL_PROF_AICORE_METRICS,
    ACL_PROF_AICPU,
    ACL_PROF_HCCL_TRACE,
    ACL_PROF_L2CACHE,
    ACL_PROF_MSPROFTX,
    ACL_PROF_RUNTIME_API,
    ACL_PROF_TASK_MEMORY,
    ACL_PROF_TASK_TIME,
    ACL_PROF_TASK_TIME_L0,
    ACL_PROF_TASK_TIME_L2,
    ACL_PROF_TASK_TIME_L3,
    AICORE_METRICS,
)
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

#: an acl.json larger than this is not a config file
MAX_ACL_JSON_BYTES = 1 << 20
#: entries looked at per poll, and files remembered, so a huge tree cannot stall the agent
MAX_SCAN_ENTRIES = 20000
MAX_REMEMBERED = 200000
MAX_DEPTH = 12
#: how much older than the watch start a file may be and still count as new (clock slack)
MTIME_SLACK_S = 2.0

_OPDEBUG = re.compile(r"opdebug\.node_opdebug\.", re.IGNORECASE)


#: acl.json "profiler" on/off switches -> the ACL_PROF_* data type they collect
PROFILER_SWITCH_FLAGS = {
    "ascendcl": ACL_PROF_ACL_API,
    "aicpu": ACL_PROF_AICPU,
    "l2": ACL_PROF_L2CACHE,
    "hccl": ACL_PROF_HCCL_TRACE,
    "msproftx": ACL_PROF_MSPROFTX,
    "runtime_api": ACL_PROF_RUNTIME_API,
    "task_memory": ACL_PROF_TASK_MEMORY,
}
#: acl.json "task_time" values -> flags (levels by the flag names: "on" = level 1)
TASK_TIME_FLAGS = {
    "on": ACL_PROF_TASK_TIME,
    "l1": ACL_PROF_TASK_TIME,
    "l0": ACL_PROF_TASK_TIME_L0,
    "l2": ACL_PROF_TASK_TIME_L2,
    "l3": ACL_PROF_TASK_TIME_L3,
}
_METRICS_BY_NAME = {name: value for value, (_, name) in AICORE_METRICS.items()}


@dataclass(frozen=True)
class AclJson:
    """The parts of an acl.json that matter to the agent."""

    path: str
    dump_path: str = ""
    dump_debug: bool = False
    profiler_on: bool = False
    profiler_output: str = ""
    #: what the profiler section collects, as ACL_PROF_* flags and aclprofAicoreMetrics
    profiler_flags: int = 0
    profiler_metrics: int = ACL_AICORE_PIPE_UTILIZATION


def read_acl_json(path: str) -> tuple[AclJson, str]:
    """Parse acl.json; returns the config and a warning ("" if none)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ACL_JSON_BYTES + 1)
    except OSError as exc:
        return AclJson(path), f"cannot read acl.json {path}: {exc.strerror or exc}"
    if len(data) > MAX_ACL_JSON_BYTES:
        return AclJson(path), f"acl.json {path} is larger than {MAX_ACL_JSON_BYTES} bytes; ignored"
    if not data.strip():
        return AclJson(path), ""  # an empty acl.json is valid for CANN: nothing configured
    try:
        root = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return AclJson(path), f"acl.json {path} is not valid JSON: {exc}"
    if not isinstance(root, dict):
        return AclJson(path), f"acl.json {path} is not a JSON object"
    base = os.path.dirname(os.path.abspath(path))
    dump = root.get("dump")
    dump_path = ""
    dump_debug = False
    if isinstance(dump, dict):
        raw = dump.get("dump_path")
        if isinstance(raw, str) and raw.strip():
            # CANN resolves a relative dump_path against the working directory.
            dump_path = os.path.abspath(raw.strip())
        dump_debug = dump.get("dump_debug") == "on"
    profiler = root.get("profiler")
    profiler_on = False
    profiler_output = ""
    flags = 0
    metrics = ACL_AICORE_PIPE_UTILIZATION
    if isinstance(profiler, dict):
        profiler_on = profiler.get("switch") == "on"
        output = profiler.get("output")
        profiler_output = output if isinstance(output, str) and output else base
        flags, metrics = _profiler_collects(profiler)
    config = AclJson(path, dump_path, dump_debug, profiler_on, profiler_output, flags, metrics)
    return config, ""


def _profiler_collects(section: dict[str, Any]) -> tuple[int, int]:
    """ACL_PROF_* flags and AI Core metrics an acl.json "profiler" section asks for."""
    flags = 0
    for key, flag in PROFILER_SWITCH_FLAGS.items():
        if section.get(key) == "on":
            flags |= flag
    # Only what the file says: defaults of absent keys differ between CANN versions.
    task_time = section.get("task_time")
    if isinstance(task_time, str):
        flags |= TASK_TIME_FLAGS.get(task_time, 0)
    metrics = ACL_AICORE_PIPE_UTILIZATION
    name = section.get("aic_metrics")
    if isinstance(name, str) and name in _METRICS_BY_NAME:
        metrics = _METRICS_BY_NAME[name]
        flags |= ACL_PROF_AICORE_METRICS
    return flags, metrics


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
