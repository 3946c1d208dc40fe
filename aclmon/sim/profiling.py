"""Profiling: the acl.prof API mode, acl.json (command) mode, msproftx and model subscription.

Ordering rules and codes follow pyacl_api.md §4.5: API mode is ``prof.init``
.. ``prof.finalize`` with ``start``/``stop`` pairs per device list; command mode
is the acl.json ``profiler`` section (then ``prof.init`` gives 100042);
subscription mode (``model_subscribe``) cannot be mixed with API mode (148047).

A session writes its data under ``PROF_{nnnnnn}_{timestamp}_{tag}/`` in the
profiling path (see docs/sim.md for the files). Subscribed models get one
fixed-size record per operator written into the user's pipe after each
execution.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import string
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aclmon import acl_constants as C
from aclmon.sim import host as H
from aclmon.sim.devices import now_ns
from aclmon.sim.errmsg import fail

if TYPE_CHECKING:
    from collections.abc import Callable

    from aclmon.sim.model import Model
    from aclmon.sim.model_description import OpSpec

#: one subscription record: model_id, flags, start/end/duration µs, op type, op name.
OP_RECORD = struct.Struct("<IIQQQ72s264s")
OP_RECORD_SIZE = OP_RECORD.size
MAX_STRING_LEN = 4096
STAMP_MESSAGE_MAX = 128
FLUSH_LINES = 4096
#: queued lines older than this are written, so a reader of the files sees them soon
FLUSH_INTERVAL_S = 0.5
#: op types that run on the cube unit (the rest: vector)
CUBE_TYPES = ("Conv", "MatMul", "BatchMatMul", "Gemm", "Deconvolution")

TASK_TIME_FLAGS = C.ACL_PROF_TASK_TIME | C.ACL_PROF_TASK_TIME_L0
_session_counter = 0


@dataclass
class ProfConfig:
    devices: tuple[int, ...]
    aicore_metrics: int
    flags: int


@dataclass
class SubscribeConfig:
    time_info: int
    aicore_metrics: int
    fd: int


class Session:
    """One running profiling collection (API start..stop, or acl.json mode)."""

    def __init__(self, root: Path, config: ProfConfig, origin: str) -> None:
        global _session_counter
        _session_counter += 1
        stamp = time.strftime("%Y%m%d%H%M%S") + f"{int(time.time() * 1000) % 1000:03d}"
        tag = "".join(random.choice(string.ascii_uppercase) for _ in range(8))
        self.directory = root / f"PROF_{_session_counter:06d}_{stamp}_{tag}"
        self.config = config
        self.lock = threading.Lock()
        self.lines: dict[str, list[str]] = {}  # relative file name -> queued lines
        self.flushed = time.monotonic()
        self.closed = False
        self.task_time = bool(config.flags & TASK_TIME_FLAGS)
        self.aicore = bool(config.flags & C.ACL_PROF_AICORE_METRICS)
        self.msproftx = bool(config.flags & C.ACL_PROF_MSPROFTX)
        self.acl_api = bool(config.flags & C.ACL_PROF_ACL_API)
        self.training_trace = bool(config.flags & C.ACL_PROF_TRAINING_TRACE)
        for device in config.devices:
            (self.directory / f"device_{device}" / "data").mkdir(parents=True, exist_ok=True)
        (self.directory / "host" / "data").mkdir(parents=True, exist_ok=True)
        self.info = {
            "origin": origin,
            "devices": list(config.devices),
            "data_type_config": config.flags,
            "data_types": C.prof_flag_names(config.flags),
            "aicore_metrics": C.AICORE_METRICS.get(config.aicore_metrics, ("", "None"))[1],
            "start_time_us": now_ns() // 1000,
            "pid": os.getpid(),
        }
        self._write_info()

    def _write_info(self) -> None:
        (self.directory / "info.json").write_text(json.dumps(self.info, indent=1) + "\n")

    def append(self, relative: str, record: dict[str, Any]) -> None:
        self.append_line(relative, json.dumps(record))

    def append_line(self, relative: str, line: str) -> None:
        """Queue one JSON line (already encoded) for ``relative``; flushed in batches."""
        with self.lock:
            if self.closed:  # an execution that started before stop finishes after it
                return
            lines = self.lines.get(relative)
            if lines is None:
                lines = self.lines[relative] = []
            lines.append(line)
            now = time.monotonic()
            if now - self.flushed >= FLUSH_INTERVAL_S:
                self.flushed = now
                for name, queued in self.lines.items():
                    if queued:
                        self._flush(self.directory / name, queued)
            elif len(lines) >= FLUSH_LINES:
                self._flush(self.directory / relative, lines)

    @staticmethod
    def _flush(path: Path, lines: list[str]) -> None:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        lines.clear()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for relative, lines in self.lines.items():
                if lines:
                    self._flush(self.directory / relative, lines)
        self.info["end_time_us"] = now_ns() // 1000
        self._write_info()


@dataclass
class _ThreadStamps:
    stack: list[tuple[str, int]] = field(default_factory=list)


class Profiler:
    """The profiling state of one acl.init session."""

    def __init__(self, device_count: int) -> None:
        self.device_count = device_count
        self.lock = threading.RLock()
        self.api_path: Path | None = None
        self.cmd_session: Session | None = None
        self.set_configs: dict[int, str] = {}
        self.configs: dict[int, ProfConfig] = {}
        self.running: dict[int, tuple[int, Session]] = {}  # device -> (config handle, session)
        self.sub_configs: dict[int, SubscribeConfig] = {}
        self.subscriptions: dict[int, SubscribeConfig] = {}  # model id -> config
        self.sub_buffers: dict[int, list[bytes]] = {}
        self.stamps: dict[int, str] = {}
        self.ranges: dict[int, tuple[str, int, int]] = {}
        self._next_range = 1
        self._thread = threading.local()
        self.step_infos: set[int] = set()
        self._task_prefix: dict[tuple[int, int], str] = {}
        #: subscription records dropped because the reader's pipe was full.
        self.dropped_records = 0

    # ---------------------------------------------------------- command mode
    def start_command_mode(self, output: str, switches: dict[str, str], metrics: str) -> None:
        flags = 0
        if switches.get("task_time", "on") != "off":
            flags |= C.ACL_PROF_TASK_TIME
        if switches.get("aic_metrics") or metrics:
            flags |= C.ACL_PROF_AICORE_METRICS
        for key, flag in (
            ("msproftx", C.ACL_PROF_MSPROFTX),
            ("ascendcl", C.ACL_PROF_ACL_API),
            ("aicpu", C.ACL_PROF_AICPU),
            ("l2", C.ACL_PROF_L2CACHE),
            ("hccl", C.ACL_PROF_HCCL_TRACE),
            ("runtime_api", C.ACL_PROF_RUNTIME_API),
            ("task_memory", C.ACL_PROF_TASK_MEMORY),
        ):
            if switches.get(key) == "on":
                flags |= flag
        code = next((c for c, n in C.AICORE_METRICS.items() if n[1] == metrics), 1)
        config = ProfConfig(tuple(range(self.device_count)), code, flags)
        self.cmd_session = Session(Path(output), config, "acl.json")

    # ---------------------------------------------------------- API mode
    def init(self, path: str) -> int:
        with self.lock:
            if self.cmd_session is not None:
                return fail(C.ACL_ERROR_PROF_ALREADY_RUN, "profiling is configured by acl.json")
            if self.api_path is not None:
                return fail(C.ACL_ERROR_REPEAT_INITIALIZE, "acl.prof.init was already called")
            if self.subscriptions:
                return fail(C.ACL_ERROR_PROF_API_CONFLICT, "a model subscription is active")
            if not path or len(path) > 4096:
                return fail(C.ACL_ERROR_INVALID_PARAM, "invalid profiling path")
            try:
                Path(path).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                return fail(C.ACL_ERROR_INVALID_PARAM, f"cannot create {path}: {exc.strerror}")
            self.api_path = Path(path)
            self.set_configs.clear()
            return C.ACL_SUCCESS

    def set_config(self, config_type: int, value: str) -> int:
        with self.lock:
            if self.api_path is None:
                return fail(C.ACL_ERROR_PROF_NOT_RUN, "acl.prof.init was not called")
            if self.running:
                return fail(C.ACL_ERROR_PROF_ALREADY_RUN, "set_config must precede start")
            if not C.ACL_PROF_ARGS_MIN < config_type < C.ACL_PROF_ARGS_MAX:
                return fail(C.ACL_ERROR_INVALID_PARAM, f"unknown config type {config_type}")
            if len(value.encode()) > 256:
                return fail(C.ACL_ERROR_INVALID_PARAM, "config value longer than 256 bytes")
            ranges = {
                C.ACL_PROF_STORAGE_LIMIT: (200, 4294967295),
                C.ACL_PROF_SYS_HARDWARE_MEM_FREQ: (1, 100),
                C.ACL_PROF_SYS_IO_FREQ: (1, 100),
                C.ACL_PROF_SYS_INTERCONNECTION_FREQ: (1, 50),
                C.ACL_PROF_DVPP_FREQ: (1, 100),
                C.ACL_PROF_HOST_SYS_USAGE_FREQ: (1, 50),
            }
            if config_type in ranges:
                lo, hi = ranges[config_type]
                digits = (
                    value.removesuffix("MB") if config_type == C.ACL_PROF_STORAGE_LIMIT else value
                )
                if not digits.isdigit() or not lo <= int(digits) <= hi:
                    return fail(C.ACL_ERROR_INVALID_PARAM, f"value {value!r} out of [{lo}, {hi}]")
            elif config_type == C.ACL_PROF_LLC_MODE and value not in ("read", "write"):
                return fail(C.ACL_ERROR_INVALID_PARAM, "LLC mode must be read or write")
            elif config_type in (C.ACL_PROF_HOST_SYS, C.ACL_PROF_HOST_SYS_USAGE) and not set(
                value.split(",")
            ) <= {"cpu", "mem"}:
                return fail(C.ACL_ERROR_INVALID_PARAM, "host sys must be cpu and/or mem")
            self.set_configs[config_type] = value
            return C.ACL_SUCCESS

    def create_config(self, devices: list[int], metrics: int, flags: int) -> int:
        if any(not 0 <= d < self.device_count for d in devices) or len(set(devices)) != len(
            devices
        ):
            fail(C.ACL_ERROR_INVALID_PARAM, "invalid device list")
            return 0
        if metrics not in C.AICORE_METRICS or flags < 0 or flags & ~C.PROF_FLAGS_ALL:
            fail(C.ACL_ERROR_INVALID_PARAM, "invalid AI Core metrics or data type config")
            return 0
        with self.lock:
            return H.register(self.configs, ProfConfig(tuple(devices), metrics, flags))

    def destroy_config(self, handle: int) -> int:
        with self.lock:
            return H.unregister(self.configs, handle, "profiling config")

    def _api_config(self, handle: int) -> ProfConfig | int:
        """The config ``handle`` names, once acl.prof.init ran; else the error code."""
        if self.api_path is None:
            return fail(C.ACL_ERROR_PROF_NOT_RUN, "acl.prof.init was not called")
        config = self.configs.get(handle)
        if config is None:
            return fail(C.ACL_ERROR_INVALID_PARAM, "unknown profiling config")
        return config

    def _close_running(self, devices: list[int]) -> None:
        """Stop ``devices``, closing their sessions once (a session spans its config's devices)."""
        sessions = {id(self.running[d][1]): self.running[d][1] for d in devices}
        for device in devices:
            del self.running[device]
        for session in sessions.values():
            session.close()

    def start(self, handle: int) -> int:
        with self.lock:
            config = self._api_config(handle)
            if isinstance(config, int):
                return config
            if self.subscriptions:
                return fail(C.ACL_ERROR_PROF_API_CONFLICT, "a model subscription is active")
            busy = [d for d in config.devices if d in self.running]
            if busy:
                return fail(C.ACL_ERROR_PROF_ALREADY_RUN, f"devices {busy} are already started")
            assert self.api_path is not None  # _api_config failed without it
            session = Session(self.api_path, config, "acl.prof")
            session.info["set_config"] = {str(k): v for k, v in self.set_configs.items()}
            for device in config.devices:
                self.running[device] = (handle, session)
            return C.ACL_SUCCESS

    def stop(self, handle: int) -> int:
        with self.lock:
            config = self._api_config(handle)
            if isinstance(config, int):
                return config
            if any(d not in self.running for d in config.devices):
                return fail(C.ACL_ERROR_PROF_NOT_RUN, "these devices were not started")
            if any(self.running[d][0] != handle for d in config.devices):
                return fail(C.ACL_ERROR_INVALID_PARAM, "stop needs the config given to start")
            self._close_running(list(config.devices))
            return C.ACL_SUCCESS

    def finalize(self) -> int:
        with self.lock:
            if self.api_path is None:
                return fail(C.ACL_ERROR_PROF_NOT_RUN, "acl.prof.init was not called")
            self._close_running(list(self.running))
            self.api_path = None
            return C.ACL_SUCCESS

    def shutdown(self) -> None:
        """acl.finalize: close what is still open."""
        with self.lock:
            self._close_running(list(self.running))
            if self.cmd_session is not None:
                self.cmd_session.close()
                self.cmd_session = None
            for config in self.subscriptions.values():
                _close_fd(config.fd)
            self.subscriptions.clear()

    # ---------------------------------------------------------- subscription
    def create_subscribe_config(self, time_info: int, metrics: int, fd: int) -> int:
        if time_info not in (0, 1) or metrics not in C.AICORE_METRICS or fd < 0:
            fail(C.ACL_ERROR_INVALID_PARAM, "invalid subscribe config")
            return 0
        with self.lock:
            return H.register(self.sub_configs, SubscribeConfig(time_info, metrics, fd))

    def destroy_subscribe_config(self, handle: int) -> int:
        with self.lock:
            return H.unregister(self.sub_configs, handle, "subscribe config")

    def subscribe(self, model_id: int, handle: int, model_loaded: bool) -> int:
        with self.lock:
            if self.api_path is not None or self.cmd_session is not None:
                return fail(C.ACL_ERROR_PROF_API_CONFLICT, "profiling API mode is active")
            config = self.sub_configs.get(handle)
            if config is None:
                return fail(C.ACL_ERROR_INVALID_PARAM, "unknown subscribe config")
            if not model_loaded:
                return fail(C.ACL_ERROR_INVALID_MODEL_ID, f"model {model_id} is not loaded")
            if model_id in self.subscriptions:
                return fail(C.ACL_ERROR_PROF_REPEAT_SUBSCRIBE, f"model {model_id} is subscribed")
            try:
                # A reader that stops reading must not stall the job's executions:
                # records that do not fit in the pipe are dropped (and counted).
                os.set_blocking(config.fd, False)
            except OSError:
                return fail(C.ACL_ERROR_INVALID_PARAM, f"fd {config.fd} is not an open pipe")
            self.subscriptions[model_id] = config
            return C.ACL_SUCCESS

    def unsubscribe(self, model_id: int) -> int:
        with self.lock:
            config = self.subscriptions.pop(model_id, None)
            if config is None:
                return fail(C.ACL_ERROR_INVALID_MODEL_ID, f"model {model_id} is not subscribed")
            self.sub_buffers.pop(model_id, None)
            # The profiling module owns the write end from subscribe on and closes
            # it here, so the user's reader thread sees end-of-file and finishes.
            if not any(c.fd == config.fd for c in self.subscriptions.values()):
                _close_fd(config.fd)
            return C.ACL_SUCCESS

    # ---------------------------------------------------------- execution hooks
    def op_hook(self, model: Model, device_id: int) -> Callable[..., None] | None:
        running = self.running.get(device_id)
        session = running[1] if running is not None else self.cmd_session
        subscription = self.subscriptions.get(model.model_id)
        if session is None and subscription is None:
            return None
        want_task_time = session is not None and session.task_time
        want_aicore = session is not None and session.aicore
        buffer = self.sub_buffers.setdefault(model.model_id, []) if subscription else None
        task_path = f"device_{device_id}/data/task_time.jsonl"
        aicore_path = f"device_{device_id}/data/aicore.jsonl"

        def hook(op: OpSpec, stream_id: int, task_id: int, start_ns: int, duration_ns: int) -> None:
            start_us = start_ns // 1000
            end_us = (start_ns + duration_ns) // 1000
            if want_task_time:
                assert session is not None
                # The per-operator fields are encoded once per model, not per record.
                prefix = self._task_prefix.get((model.model_id, op.index))
                if prefix is None:
                    prefix = json.dumps(
                        {
                            "model_id": model.model_id,
                            "model_name": model.name,
                            "op_name": op.name,
                            "op_type": op.op_type,
                        }
                    )[:-1]
                    self._task_prefix[(model.model_id, op.index)] = prefix
                session.append_line(
                    task_path,
                    f'{prefix}, "stream_id": {stream_id}, "task_id": {task_id}, '
                    f'"start_us": {start_us}, "end_us": {end_us}, "duration_ns": {duration_ns}}}',
                )
            if want_aicore:
                assert session is not None
                session.append(
                    aicore_path,
                    {
                        "model_id": model.model_id,
                        "model_name": model.name,
                        "op_name": op.name,
                        "op_type": op.op_type,
                        "stream_id": stream_id,
                        "task_id": task_id,
                        "start_us": start_us,
                        "end_us": end_us,
                        "duration_ns": duration_ns,
                        "metrics": session.info["aicore_metrics"],
                        "aicore_time_us": duration_ns / 1000,
                        "total_cycles": int(duration_ns * 1.8),
                        "values": metric_values(
                            session.config.aicore_metrics, op.op_type, duration_ns
                        ),
                    },
                )
            if buffer is not None:
                buffer.append(
                    OP_RECORD.pack(
                        model.model_id,
                        0,
                        start_us,
                        end_us,
                        max(end_us - start_us, 1),
                        op.op_type.encode()[:64],
                        op.name.encode()[:256],
                    )
                )

        return hook

    def model_done(self, model: Model, device_id: int) -> None:
        running = self.running.get(device_id)
        session = running[1] if running is not None else self.cmd_session
        if session is not None and session.acl_api:
            session.append(
                "host/data/acl_api.jsonl",
                {"api": "aclmdlExecute", "model_id": model.model_id, "end_us": now_ns() // 1000},
            )
        subscription = self.subscriptions.get(model.model_id)
        records = self.sub_buffers.get(model.model_id)
        if subscription is None or not records:
            return
        self.sub_buffers[model.model_id] = []
        for index, record in enumerate(records):
            # One write per record: pipe writes up to PIPE_BUF are atomic, so a
            # reader never sees half a record.
            try:
                os.write(subscription.fd, record)
            except BlockingIOError:
                self.dropped_records += len(records) - index
                return
            except OSError:
                return

    # ---------------------------------------------------------- msproftx
    def _tx_session(self) -> Session | None:
        for _, session in self.running.values():
            if session.msproftx:
                return session
        if self.cmd_session is not None and self.cmd_session.msproftx:
            return self.cmd_session
        return None

    def tx_record(self, kind: str, message: str, start_ns: int, end_ns: int | None = None) -> None:
        session = self._tx_session()
        if session is None:
            return
        record: dict[str, Any] = {
            "kind": kind,
            "message": message,
            "tid": threading.get_native_id(),
            "start_ns": start_ns,
        }
        if end_ns is not None:
            record["end_ns"] = end_ns
        session.append("host/data/msproftx.jsonl", record)

    def step_record(self, tag: str, device_id: int | None) -> None:
        """A training-trace step boundary, for sessions with ACL_PROF_TRAINING_TRACE."""
        sessions = [s for _, s in self.running.values()]
        if self.cmd_session is not None:
            sessions.append(self.cmd_session)
        for session in {id(s): s for s in sessions if s.training_trace}.values():
            session.append(
                "host/data/step_trace.jsonl",
                {
                    "tag": tag,
                    "device": device_id,
                    "tid": threading.get_native_id(),
                    "ts_ns": now_ns(),
                },
            )

    def thread_stack(self) -> list[tuple[str, int]]:
        stamps = getattr(self._thread, "stamps", None)
        if stamps is None:
            stamps = self._thread.stamps = _ThreadStamps()
        return stamps.stack

    def take_range_id(self) -> int:
        with self.lock:
            range_id = self._next_range
            self._next_range += 1
            return range_id


#: how busy a unit's pipe typically is while it runs an operator (0..1 of its cycles)
_PIPE_SHARE = (
    ("mac", 0.72), ("vec", 0.66), ("mte2", 0.44), ("mte1", 0.31), ("mte3", 0.24),
    ("fixpipe", 0.17), ("scalar", 0.11),
)  # fmt: skip


def metric_values(metrics: int, op_type: str, duration_ns: int) -> dict[str, float]:
    """Plausible values of one operator run for the columns of ``metrics``: the
    unit the operator runs on (cube for convolutions and matrix products, vector
    for the rest) is busy, the other mostly idle; each pipe has its own typical
    share, each op type its own factor, each run a little noise."""
    cube = op_type.startswith(CUBE_TYPES)
    factor = 0.7 + (sum(op_type.encode()) % 7) / 15  # the same for every run of a type
    us = duration_ns / 1000
    values: dict[str, float] = {}
    for name in C.AICORE_METRIC_COLUMNS.get(metrics, ()):
        side = name[:4]
        busy = (side == "aic_") == cube if side in ("aic_", "aiv_") else True
        scale = (1.0 if busy else 0.08) * factor * random.uniform(0.9, 1.1)
        if name.endswith("(GB/s)"):
            value = 150.0 * scale
        elif name.endswith("(KB)"):
            value = us * 40.0 * scale
        elif "cflt" in name:
            value = min(1.0, 0.05 * scale)
        elif name.endswith("ratio"):
            share = next((v for key, v in _PIPE_SHARE if key in name), 0.3)
            value = min(1.0, share * scale)
        else:  # cache hit / allocate counts
            value = float(int(us * (25 if "hit" in name else 3) * scale))
        values[name] = round(value, 4)
    return values


def _close_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def decode_records(raw: bytes) -> list[tuple[Any, ...]] | int:
    """Split a subscription buffer into records, or return an error code."""
    if not raw or len(raw) % OP_RECORD_SIZE:
        return fail(C.ACL_ERROR_INVALID_PARAM, "op info length is not a whole number of records")
    return [OP_RECORD.unpack_from(raw, offset) for offset in range(0, len(raw), OP_RECORD_SIZE)]


def record_string(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")
