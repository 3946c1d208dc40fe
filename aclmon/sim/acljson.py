"""``acl.json`` parsing and validation (pyacl_api.md §5, dump_formats.md §5).

``acl.init(path)`` reads the file: an unreadable file gives 100003, a file that
is not JSON gives 100006, a bad ``dump`` section 100009 and a bad ``profiler``
section 100010. Only the keys the sim acts on are interpreted; every documented
key is accepted and checked where its values are documented.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from aclmon import acl_constants as C


class AclJsonError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


DUMP_KEYS = {
    "dump_path",
    "dump_list",
    "dump_mode",
    "dump_op_switch",
    "dump_data",
    "dump_stats",
    "dump_level",
    "dump_debug",
    "dump_scene",
    "dump_step",
    "dump_kernel_data",
    "optype_blacklist",
    "opname_blacklist",
    "opname_range",
}
DUMP_STATS = ("Max", "Min", "Avg", "Nan", "Negative Inf", "Positive Inf", "L2norm")
#: dump_scene values that dump the failing operator on an AI Core exception.
EXCEPTION_SCENES = (
    "aic_err_brief_dump",
    "aic_err_norm_dump",
    "aic_err_detail_dump",
    "lite_exception",
)
DUMP_SCENES = (*EXCEPTION_SCENES, "watcher")
ON_OFF_PROFILER_KEYS = ("aicpu", "l2", "hccl", "msproftx", "runtime_api", "ascendcl", "task_memory")
FREQ_RANGES = {
    "sys_hardware_mem_freq": (1, 100),
    "sys_io_sampling_freq": (1, 100),
    "sys_interconnection_freq": (1, 50),
    "sys_cpu_freq": (1, 50),
    "dvpp_freq": (1, 100),
    "host_sys_usage_freq": (1, 50),
}
OTHER_PROFILER_KEYS = {
    "switch",
    "output",
    "aic_metrics",
    "task_time",
    "storage_limit",
    "llc_profiling",
    "host_sys",
    "host_sys_usage",
    "instr_profiling",
    "instr_profiling_freq",
    "task_tsfw",
    "ge_api",
    "sys_mem_serviceflow",
    "sys_lp_freq",
    "optype",
}
AIC_METRIC_NAMES = {
    names[1] for code, names in C.AICORE_METRICS.items() if code != C.ACL_AICORE_NONE
}


@dataclass(frozen=True)
class DumpConfig:
    path: str
    model_layers: dict[str, frozenset[str] | None]  # model name -> layers (None = all ops)
    mode: str = "output"
    op_switch: bool = False
    data: str = "tensor"
    stats: tuple[str, ...] = ()
    debug: bool = False
    steps: tuple[tuple[int, int], ...] = ()  # inclusive ranges; empty = every step
    scene: str | None = None  # dump_scene (exception dumps)

    def step_selected(self, step: int) -> bool:
        return not self.steps or any(lo <= step <= hi for lo, hi in self.steps)

    def wants_op(self, model_name: str, op_name: str) -> bool:
        if model_name in self.model_layers:
            layers = self.model_layers[model_name]
            return layers is None or op_name in layers
        return self.op_switch


@dataclass(frozen=True)
class ProfilerConfig:
    output: str
    aic_metrics: str = "PipeUtilization"
    switches: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AclJson:
    dump: DumpConfig | None = None
    profiler: ProfilerConfig | None = None


def _dump_error(message: str) -> AclJsonError:
    return AclJsonError(C.ACL_ERROR_INVALID_DUMP_CONFIG, f"acl.json dump: {message}")


def _prof_error(message: str) -> AclJsonError:
    return AclJsonError(C.ACL_ERROR_INVALID_PROFILING_CONFIG, f"acl.json profiler: {message}")


def _on_off(section: dict[str, Any], key: str, err: Any) -> bool:
    value = section.get(key, "off")
    if value not in ("on", "off"):
        raise err(f"{key} must be 'on' or 'off'")
    return value == "on"


def parse_dump_step(text: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(text, str) or not re.fullmatch(r"\d+(-\d+)?(\|\d+(-\d+)?)*", text):
        raise _dump_error(f"dump_step {text!r} is not like '0|5|10-20'")
    ranges = []
    for part in text.split("|"):
        lo, _, hi = part.partition("-")
        start, end = int(lo), int(hi or lo)
        if end < start:
            raise _dump_error(f"dump_step range {part!r} is reversed")
        ranges.append((start, end))
    if len(ranges) > 100:
        raise _dump_error("dump_step has more than 100 intervals")
    return tuple(ranges)


def parse_dump(section: Any) -> DumpConfig | None:
    if not isinstance(section, dict):
        raise _dump_error("the section must be an object")
    unknown = set(section) - DUMP_KEYS
    if unknown:
        raise _dump_error(f"unknown keys {sorted(unknown)}")
    mode = section.get("dump_mode", "output")
    if mode not in ("input", "output", "all"):
        raise _dump_error("dump_mode must be input, output or all")
    data = section.get("dump_data", "tensor")
    if data not in ("tensor", "stats"):
        raise _dump_error("dump_data must be tensor or stats")
    level = section.get("dump_level", "all")
    if level not in ("op", "kernel", "all"):
        raise _dump_error("dump_level must be op, kernel or all")
    stats = section.get("dump_stats", [])
    if not isinstance(stats, list) or any(s not in DUMP_STATS for s in stats):
        raise _dump_error(f"dump_stats entries must be among {', '.join(DUMP_STATS)}")
    scene = section.get("dump_scene")
    if scene is not None and scene not in DUMP_SCENES:
        raise _dump_error(f"dump_scene must be one of {', '.join(DUMP_SCENES)}")
    op_switch = _on_off(section, "dump_op_switch", _dump_error)
    debug = _on_off(section, "dump_debug", _dump_error)
    if scene == "watcher" and (debug or op_switch):
        raise _dump_error("the watcher scene cannot be combined with dump_debug or dump_op_switch")
    layers: dict[str, frozenset[str] | None] = {}
    dump_list = section.get("dump_list")
    if dump_list is not None:
        if not isinstance(dump_list, list):
            raise _dump_error("dump_list must be a list")
        for entry in dump_list:
            if not isinstance(entry, dict):
                raise _dump_error("dump_list entries must be objects")
            if not entry:
                continue  # [{}] = single-op dump
            name = entry.get("model_name")
            if not isinstance(name, str) or not name:
                raise _dump_error("a dump_list entry needs model_name")
            layer = entry.get("layer")
            if layer is not None and (
                not isinstance(layer, list) or not all(isinstance(x, str) for x in layer)
            ):
                raise _dump_error("layer must be a list of operator names")
            layers[name] = frozenset(layer) if layer else None
    path = section.get("dump_path")
    needs_path = bool(layers) or op_switch or debug or dump_list is not None
    if path is None:
        if needs_path:
            raise _dump_error("dump_path is required")
        if scene in EXCEPTION_SCENES:  # written under NPU_COLLECT_PATH / ASCEND_WORK_PATH / cwd
            return DumpConfig(path="", model_layers={}, scene=scene)
        return None
    if not isinstance(path, str) or not path or len(path) > 512:
        raise _dump_error("dump_path must be a non-empty path of at most 512 characters")
    steps = parse_dump_step(section["dump_step"]) if "dump_step" in section else ()
    return DumpConfig(
        path=path,
        model_layers=layers,
        mode=mode,
        op_switch=op_switch,
        data=data,
        stats=tuple(stats),
        debug=debug,
        steps=steps,
        scene=scene,
    )


def parse_profiler(section: Any) -> ProfilerConfig | None:
    if not isinstance(section, dict):
        raise _prof_error("the section must be an object")
    unknown = set(section) - OTHER_PROFILER_KEYS - set(ON_OFF_PROFILER_KEYS) - set(FREQ_RANGES)
    if unknown:
        raise _prof_error(f"unknown keys {sorted(unknown)}")
    for key in ON_OFF_PROFILER_KEYS:
        if key in section and section[key] not in ("on", "off"):
            raise _prof_error(f"{key} must be 'on' or 'off'")
    if "task_time" in section and section["task_time"] not in ("on", "off", "l0", "l1", "l2", "l3"):
        raise _prof_error("task_time must be on, off, l0, l1, l2 or l3")
    metrics = section.get("aic_metrics", "PipeUtilization")
    if metrics not in AIC_METRIC_NAMES:
        raise _prof_error(f"aic_metrics {metrics!r} is not a known metric group")
    for key, (lo, hi) in FREQ_RANGES.items():
        if key in section:
            try:
                value = int(section[key])
            except (TypeError, ValueError):
                raise _prof_error(f"{key} must be an integer") from None
            if not lo <= value <= hi:
                raise _prof_error(f"{key} must be in [{lo}, {hi}]")
    if "storage_limit" in section:
        match = re.fullmatch(r"(\d+)MB", str(section["storage_limit"]))
        if not match or not 200 <= int(match.group(1)) <= 4294967295:
            raise _prof_error("storage_limit must be '<N>MB' with N in [200, 4294967295]")
    if "llc_profiling" in section and section["llc_profiling"] not in ("read", "write"):
        raise _prof_error("llc_profiling must be read or write")
    if section.get("switch") != "on":
        return None
    output = section.get("output", ".")
    if not isinstance(output, str) or not output:
        raise _prof_error("output must be a path")
    switches = {k: str(v) for k, v in section.items() if k not in ("switch", "output")}
    return ProfilerConfig(output=output, aic_metrics=metrics, switches=switches)


def parse_acl_json(path: str) -> AclJson:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(16 << 20)
    except OSError as exc:
        raise AclJsonError(
            C.ACL_ERROR_INVALID_FILE, f"cannot read {path}: {exc.strerror}"
        ) from None
    if not raw.strip():
        return AclJson()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AclJsonError(C.ACL_ERROR_PARSE_FILE, f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AclJsonError(C.ACL_ERROR_PARSE_FILE, f"{path} must hold a JSON object")
    dump = parse_dump(data["dump"]) if "dump" in data else None
    profiler = parse_profiler(data["profiler"]) if "profiler" in data else None
    return AclJson(dump=dump, profiler=profiler)
