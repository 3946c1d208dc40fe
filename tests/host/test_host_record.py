"""``aclmon record --host``: a job's events and this machine's NPUs in one recording,
which ``replay`` opens with its Host view (here the host is the simulator's npu-smi)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from test_host_source import wait_until

from aclmon import events as ev
from aclmon.bus.publisher import Publisher
from aclmon.bus.recording import RecordingReader
from aclmon.errors import DecodeError
from aclmon.store import Store


def host_samples(path: Path) -> list[ev.HostNpuSample]:
    """The host samples recorded so far: none while the recorder has not yet
    written its header (the file exists, empty, for a moment after it starts)."""
    if not path.exists():
        return []
    try:
        with RecordingReader(path, background=False) as reader:
            return [e for e in reader.iter_events(0) if isinstance(e, ev.HostNpuSample)]
    except DecodeError:
        return []


def test_record_host_writes_the_machines_npus_beside_the_jobs_events(tmp_path: Path) -> None:
    out = tmp_path / "with-host.aclrec"
    stop = threading.Event()
    env = dict(os.environ, ACLMON_NPU_SMI=f"{sys.executable} -m aclmon.sim.npu_smi",
               ACLMON_DCMI_LIBRARY=str(tmp_path / "no-libdcmi.so"))  # fmt: skip
    with Publisher(str(tmp_path / "p.sock")) as publisher:

        def publish() -> None:
            while not stop.is_set():
                publisher.emit(ev.LogLine, "info", "tick")
                time.sleep(0.01)

        thread = threading.Thread(target=publish, daemon=True)
        thread.start()
        command = [sys.executable, "-m", "aclmon", "record", "--host", publisher.address, str(out)]
        child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)  # fmt: skip
        try:
            wait_until(lambda: len(host_samples(out)) >= 2, timeout=60)
            child.send_signal(signal.SIGINT)
            stdout, stderr = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            stop.set()
            thread.join()
    assert child.returncode == 0, stderr
    assert stdout.startswith("recorded ")
    store = Store()
    with RecordingReader(out, background=False) as reader:
        store.apply_many(list(reader.iter_events(0)))
    npus = store.state.host_npus
    assert npus.refused == 0 and npus.snapshot is not None
    assert npus.snapshot.source == "npu-smi" and len(npus.snapshot.devices) == 8
    assert store.state.counters.per_kind["log"] > 0
