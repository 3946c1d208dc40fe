"""The demo job: the simulated runtime running the rich demo workload under the
agent, in a subprocess, listening on a Unix socket in the runtime directory;
and ``demo --ranks N``, N of them as the ranks of one job (:class:`RankedDemo`).

The subprocess gets its own session (so a Ctrl+C meant for the viewer does
not hit it mid-write) and its output goes to a log file (so it cannot scribble
over the screen). :class:`DemoJob` always stops it: SIGTERM to its process
group (the workload stops its workers and exits 0, as a service does), then
SIGKILL if it has not gone within a grace period.

Its log, profiling output and dumps live in aclmon's runtime directory and are
removed when a later demo starts; a recorded demo (``--record FILE``) keeps its
dumps beside the recording instead (:func:`dumps_beside`), so the recording
can be replayed after the next demo.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from aclmon.children import dies_with_me
from aclmon.errors import AclmonError

WORKLOAD_MODULE = "aclmon.sim.demo_workload"
START_TIMEOUT = 20.0
STOP_GRACE = 3.0


#: what a demo's files in the runtime directory are called: ``demo-{pid}-{n}…``
SCRATCH_PREFIX = "demo-"


def dumps_beside(recording: str | os.PathLike[str]) -> Path:
    """Where a recorded demo keeps its dump files: ``FILE.dumps`` beside ``FILE``."""
    path = Path(recording)
    return path.with_name(path.name + ".dumps")


def is_demo_scratch(path: str | os.PathLike[str]) -> bool:
    """A file in the scratch directory of a demo that was not recorded (the runtime
    directory's ``demo-*``), which the next demo removes."""
    from aclmon.bus import runtime_dir

    try:
        relative = Path(path).resolve().relative_to(runtime_dir().resolve())
    except (ValueError, OSError):
        return False
    return bool(relative.parts) and relative.parts[0].startswith(SCRATCH_PREFIX)


class DemoError(AclmonError):
    """The demo job could not start."""


def workload_path() -> str:
    spec = importlib.util.find_spec(WORKLOAD_MODULE)
    if spec is None or spec.origin is None:
        raise DemoError(f"the demo workload ({WORKLOAD_MODULE}) is not part of this installation")
    return spec.origin


class DemoJob:
    """Start with ``with DemoJob() as job:``; ``job.socket_path`` is where it listens."""

    def __init__(
        self,
        *,
        record: str | None = None,
        directory: Path | None = None,
        extra_args: list[str] | None = None,
    ) -> None:
        if directory is None:
            from aclmon.locations import runtime_dir

            directory = runtime_dir()
        stamp = f"{os.getpid()}-{time.monotonic_ns() % 1_000_000}"
        self.socket_path = directory / f"demo-{stamp}.sock"
        self.log_path = directory / f"demo-{stamp}.log"
        # Profiling started from the viewer writes here, not into the user's cwd.
        self.profiling_path = directory / f"demo-{stamp}-prof"
        # a recording names the dump files: they stay with it, not in the scratch
        self.dump_path = (
            dumps_beside(Path(record).absolute()) if record else directory / f"demo-{stamp}-dump"
        )
        self.record = record
        self.extra_args = list(extra_args or [])
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        argv = [sys.executable, "-m", "aclmon", "run", "--sim", "--listen", str(self.socket_path),
                "--profiling-output", str(self.profiling_path), "--capture-output"]  # fmt: skip
        if self.record:
            argv += ["--record", self.record]
        return [*argv, workload_path(), "--dump-path", str(self.dump_path), *self.extra_args]

    def remove_stale_files(self) -> None:
        """Logs, profiling output and dumps of earlier demos whose viewer has
        gone (its pid is in the name), so demos do not pile up."""
        for path in self.log_path.parent.glob(f"{SCRATCH_PREFIX}*"):
            pid_text = path.name.removeprefix(SCRATCH_PREFIX).split("-", 1)[0]
            if path.suffix == ".sock" or not pid_text.isdigit() or int(pid_text) == os.getpid():
                continue
            try:
                os.kill(int(pid_text), 0)
            except ProcessLookupError:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        path.unlink()
            except PermissionError:  # alive, someone else's
                pass

    def start(self, timeout: float = START_TIMEOUT) -> None:
        self.remove_stale_files()
        command = self.command()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=dies_with_me(),
            )
        deadline = time.monotonic() + timeout
        while not self.socket_path.exists():
            if self.process.poll() is not None:
                raise DemoError(
                    f"the demo job exited with code {self.process.returncode}:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise DemoError(
                    f"the demo job did not listen within {timeout:g} s (log: {self.log_path})"
                )
            time.sleep(0.05)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float | None = None) -> None:
        """SIGTERM to the job's group; SIGKILL if it has not gone within ``grace``
        seconds (default ``STOP_GRACE``)."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_GRACE if grace is None else grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.process = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    def __enter__(self) -> DemoJob:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


#: ranks that get the demo's injected faults (exceptions and overflows); the others run clean
def faulty_ranks(ranks: int) -> set[int]:
    return {1 % ranks, ranks - 2} if ranks > 2 else {ranks - 1}


class RankedDemo:
    """N demo jobs, one process each, rank environment set, its own device.

    Ranks in :func:`faulty_ranks` keep the demo's injected faults; the others
    run with none, so the fleet screen has something to point at.
    """

    DEVICES_PER_HOST = 8

    def __init__(self, ranks: int, job: str = "demo") -> None:
        if not 1 <= ranks <= 64:
            raise AclmonError(f"--ranks must be between 1 and 64, not {ranks}")
        self.ranks = ranks
        self.job = job
        self.jobs: list[DemoJob] = []

    def __enter__(self) -> RankedDemo:
        faulty = faulty_ranks(self.ranks)
        try:
            for rank in range(self.ranks):
                device = rank % self.DEVICES_PER_HOST
                job = DemoJob(extra_args=["--quiet", "--devices", "1",
                                          "--first-device", str(device)])  # fmt: skip
                job.socket_path = job.socket_path.with_name(f"{job.socket_path.stem}-r{rank}.sock")
                job.log_path = job.log_path.with_name(f"{job.log_path.stem}-r{rank}.log")
                job.dump_path = job.dump_path.with_name(f"{job.dump_path.name}-r{rank}")
                job.profiling_path = job.profiling_path.with_name(
                    f"{job.profiling_path.name}-r{rank}"
                )
                if not rank:  # what earlier demos left (killed ones too)
                    job.remove_stale_files()
                env = dict(
                    os.environ,
                    ACLMON_JOB=self.job,
                    RANK_ID=str(rank),
                    RANK_SIZE=str(self.ranks),
                    LOCAL_RANK=str(device),
                    DEVICE_ID=str(device),
                )
                if rank not in faulty:
                    env["ACLMON_SIM_FAULTS"] = "[]"
                with open(job.log_path, "wb") as log:
                    job.process = subprocess.Popen(
                        job.command(), stdin=subprocess.DEVNULL, stdout=log,
                        stderr=subprocess.STDOUT, start_new_session=True, env=env,
                        preexec_fn=dies_with_me(),
                    )  # fmt: skip
                self.jobs.append(job)
            # Ready when registered: the fleet finds its ranks in the registry, which an
            # agent writes after its socket listens (waiting for the socket alone lost
            # that race about one demo in three at --ranks 8).
            from aclmon.bus import registry

            deadline = time.monotonic() + 30 + self.ranks
            waiting = {job.process.pid: job for job in self.jobs if job.process is not None}
            while waiting:
                for pid in {info.pid for info in registry.list_agents()} & set(waiting):
                    del waiting[pid]
                for job in waiting.values():
                    if job.process is not None and job.process.poll() is not None:
                        raise DemoError(f"a demo rank exited at start:\n{job.log_tail()}")
                    if time.monotonic() > deadline:
                        raise DemoError(f"a demo rank did not start (log: {job.log_path})")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def pids(self) -> list[int]:
        return [job.process.pid for job in self.jobs if job.process is not None]

    def stop(self) -> None:
        for job in self.jobs:
            job.stop()

    def __exit__(self, *exc: object) -> None:
        self.stop()
