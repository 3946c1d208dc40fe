"""Running an outside tool (npu-smi) so that it can neither hang us nor flood us.

npu-smi can take seconds or never answer (a vNPU library mismatch leaves it at
``Initialize SchedulerClient...``). Each run has a deadline; past it the tool's
whole process group is killed. Its output is read up to a cap, so a runaway tool
cannot fill memory either.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time

from aclmon.errors import AclmonError

#: more than any npu-smi table (64 cards x 2 dies) by a wide margin.
MAX_OUTPUT = 4 << 20


class ToolError(AclmonError):
    """The tool could not be run, failed, or printed too much."""


class ToolTimeout(ToolError):
    """The tool did not finish in time (it has been killed)."""


def run_tool(command: list[str], timeout: float, *, max_output: int = MAX_OUTPUT) -> str:
    """stdout and stderr of ``command`` together, as text; ToolError if it failed."""
    shown = " ".join(command)
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"cannot run {shown}: {exc.strerror or exc}") from None
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    problem: ToolError | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                problem = ToolTimeout(f"{shown} did not answer in {timeout:g} s")
                break
            if not selector.select(left):
                continue
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_output:
                problem = ToolError(f"{shown} printed more than {max_output >> 20} MiB")
                break
            chunks.append(chunk)
    if problem is not None:
        _kill_group(process)
    process.stdout.close()
    try:
        code = process.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        # Output closed but the tool lingers: it is not answering either.
        _kill_group(process)
        code = process.wait()
        problem = problem or ToolTimeout(f"{shown} did not exit in {timeout:g} s")
    if problem is not None:
        raise problem
    text = b"".join(chunks).decode("utf-8", errors="replace")
    if code != 0:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        raise ToolError(f"{shown} exited {code}" + (f": {first[:120]}" if first else ""))
    return text


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.wait()
