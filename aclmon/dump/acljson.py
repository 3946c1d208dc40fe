"""What a job's acl.json asks for: where dumps go and what the profiler collects.

``acl.init(config_path)`` is where a job hands CANN its acl.json. The agent
reads it inside the job, ``aclmon watch`` reads the file a job without the
agent names on its command line: the same hostile input for both (size-capped,
any parse problem is one warning, never an exception).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

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

#: an acl.json larger than this is not a config file
MAX_ACL_JSON_BYTES = 1 << 20


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
    """The parts of an acl.json that matter to aclmon."""

    path: str
    dump_path: str = ""
    dump_debug: bool = False
    profiler_on: bool = False
    profiler_output: str = ""
    #: what the profiler section collects, as ACL_PROF_* flags and aclprofAicoreMetrics
    profiler_flags: int = 0
    profiler_metrics: int = ACL_AICORE_PIPE_UTILIZATION


def read_acl_json(path: str, cwd: str | None = None) -> tuple[AclJson, str]:
    """Parse acl.json; returns the config and a warning ("" if none). ``cwd``: the
    job's working directory, when it is not ours (a relative ``dump_path`` is the
    job's)."""
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
            dump_path = os.path.abspath(os.path.join(cwd or os.getcwd(), raw.strip()))
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
