"""The simulated driver's shared view: which sim processes hold which devices.

On a real host the driver knows every process on every chip; npu-smi and DCMI
ask it. Here each sim process publishes what it holds (devices it set, the device
memory it allocated, its modelled utilisation) as one small JSON file in the
driver directory, rewritten twice a second by a daemon thread while it has a
device and removed when its session ends. The simulated npu-smi and DCMI read
these files; a file whose process is gone is ignored and removed.

The directory is ``ACLMON_SIM_DRIVER_DIR`` if set, else ``aclmon-sim-driver-<uid>``
under ``$XDG_RUNTIME_DIR`` or the temporary directory (mode 0700).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DRIVER_DIR_ENV = "ACLMON_SIM_DRIVER_DIR"
#: how often a sim process rewrites its record.
PUBLISH_INTERVAL_S = 0.5
#: a record larger than this is not a record (the reader never loads more).
MAX_RECORD_BYTES = 64 << 10


def driver_reserved_bytes(hbm_bytes: int) -> int:
    """The HBM the driver and runtime keep (firmware, task queues): 1/32, at most 4 GiB.

    get_mem_info's free starts this far below total, and npu-smi shows it used on
    an idle card, as on real hardware.
    """
    return min(hbm_bytes // 32, 4 << 30)


@dataclass(frozen=True)
class DeviceUse:
    """What one process holds on one device (logical id)."""

    device_id: int
    memory_bytes: int
    cube_pct: int
    vector_pct: int
    aicpu_pct: int


@dataclass(frozen=True)
class JobRecord:
    pid: int
    name: str
    devices: tuple[DeviceUse, ...]


def driver_dir() -> Path:
    configured = os.environ.get(DRIVER_DIR_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"aclmon-sim-driver-{os.getuid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _parse(data: Any) -> JobRecord | None:
    if not isinstance(data, dict):
        return None
    pid, name, devices = data.get("pid"), data.get("name"), data.get("devices")
    if not isinstance(pid, int) or not isinstance(name, str) or not isinstance(devices, list):
        return None
    uses = []
    for item in devices:
        if not isinstance(item, dict):
            return None
        values = [item.get(key) for key in ("id", "memory", "cube", "vector", "aicpu")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            return None
        uses.append(DeviceUse(*values))  # type: ignore[arg-type]  # each checked an int above
    return JobRecord(pid=pid, name=name[:64], devices=tuple(uses))


def read_jobs(directory: Path | None = None) -> list[JobRecord]:
    """The records of the sim processes alive now, by pid (others are cleaned away)."""
    directory = driver_dir() if directory is None else directory
    try:
        paths = sorted(directory.glob("*.json"))
    except OSError:
        return []
    jobs = []
    for path in paths:
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_RECORD_BYTES + 1)
            record = None if len(raw) > MAX_RECORD_BYTES else _parse(json.loads(raw))
        except (OSError, ValueError):
            continue  # being replaced right now, or not ours
        if record is None:
            continue
        if not _alive(record.pid):
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        jobs.append(record)
    return sorted(jobs, key=lambda job: job.pid)


def _process_name() -> str:
    try:
        return Path("/proc/self/comm").read_text().strip() or "python"
    except OSError:
        return os.path.basename(sys.executable) or "python"


class DriverShare:
    """Publishes one process's device use; ``uses()`` is asked on the writer thread."""

    def __init__(self, uses: Any, directory: Path | None = None) -> None:
        self._uses = uses
        self._directory = driver_dir() if directory is None else directory
        self._path = self._directory / f"{os.getpid()}.json"
        self._name = _process_name()
        self._stop = threading.Event()
        self._written: bytes | None = None
        self._thread = threading.Thread(target=self._run, name="acl-sim-driver", daemon=True)

    def start(self) -> None:
        # A job that exits without acl.finalize leaves no record behind either.
        atexit.register(self.stop)
        self._thread.start()

    def stop(self) -> None:
        atexit.unregister(self.stop)
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        with contextlib.suppress(OSError):
            self._path.unlink()

    def _run(self) -> None:
        while True:
            # The job never learns that its driver view could not be written.
            with contextlib.suppress(Exception):
                self._write(self._uses())
            if self._stop.wait(PUBLISH_INTERVAL_S):
                return

    def _write(self, uses: list[DeviceUse]) -> None:
        payload = json.dumps(
            {
                "pid": os.getpid(),
                "name": self._name,
                "devices": [
                    {
                        "id": use.device_id,
                        "memory": use.memory_bytes,
                        "cube": use.cube_pct,
                        "vector": use.vector_pct,
                        "aicpu": use.aicpu_pct,
                    }
                    for use in uses
                ],
            }
        ).encode()
        if payload == self._written or self._stop.is_set():
            return
        self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self._path.with_suffix(".tmp")
        temporary.write_bytes(payload)
        os.replace(temporary, self._path)
        self._written = payload
