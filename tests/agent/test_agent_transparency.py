"""The agent is invisible to the job: pyACL scripts (tests/agent/transparency/)
print byte for byte the same, write the same CANN log and end with the same
status under ``aclmon run --sim`` as on the bare simulator.

The scripts cover failed calls and their messages (read once, per thread,
after other calls, in threads, a forked child and a forked multiprocessing
worker that gets an agent of its own), single-operator launches (acl.op),
the exception callback
(reading the error state inside it, raising, replaced, cleared), host
callbacks, profiling by the API, by model subscription and by acl.json, dumps
and overflow dumps, the process the job sees, and every way a job ends (its own
status, an uncaught exception, a signal: the ``t9*`` scripts, which run last).
They run one after another in one process per side
(tests/agent/transparency/run_batch.py), the last one ending it by SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import aclmon.sim

SCRIPTS_DIR = Path(__file__).parent / "transparency"
SCRIPTS = sorted(path.name for path in SCRIPTS_DIR.glob("t[0-9]*.py"))
BARE = "import sys, aclmon.sim; aclmon.sim.run_script(sys.argv[1], sys.argv[2:])"
#: a plog line: [LEVEL] MODULE(PID,PNAME):TIME [file:line]TID function: text
_PLOG = re.compile(r"^\[(\w+)\] (\w+)\(\d+,[^)]*\):\S+ (\[[^\]]*\])\d+ (.*)$")
_PID = re.compile(r"PID: \d+")
_TIME = re.compile(r"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3}")


def run_side(
    tmp_path: Path, side: str, launcher: list[str]
) -> tuple[subprocess.CompletedProcess, list[str]]:
    env = dict(os.environ)
    env["ASCEND_PROCESS_LOG_PATH"] = str(tmp_path / f"plog-{side}")
    env["XDG_RUNTIME_DIR"] = str(tmp_path)  # the agent's socket and registry entry
    env.pop("ACLMON_SIM_FAULTS", None)
    env.pop("ACLMON_SIM_CONFIG", None)
    command = [*launcher, str(SCRIPTS_DIR / "run_batch.py"), aclmon.sim.MODELS_DIR,
               str(tmp_path / f"work-{side}"), *SCRIPTS]  # fmt: skip
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, timeout=300)
    return done, plog_lines(tmp_path / f"plog-{side}")


def plog_lines(root: Path) -> list[str]:
    """The CANN log's lines without what differs between two runs (pid, times, thread)."""
    lines = []
    for path in root.rglob("*.log"):
        for line in path.read_text().splitlines():
            match = _PLOG.match(line)
            text = " ".join(match.groups()) if match else line
            lines.append(_TIME.sub("<time>", _PID.sub("PID", text)))
    return sorted(lines)


def test_scripts_see_the_same_with_and_without_the_agent(tmp_path):
    assert len(SCRIPTS) >= 12
    bare, bare_log = run_side(tmp_path, "bare", [sys.executable, "-c", BARE])
    # Sampling every 10 ms: the agent's own threads call acl all the time.
    watched, watched_log = run_side(
        tmp_path, "agent", [sys.executable, "-m", "aclmon", "run", "--sim", "--interval", "0.01"]
    )
    out = bare.stdout.decode()
    for name in SCRIPTS[:-1]:  # each ran to its own end; the last one ends the process
        assert f"== {name} status " in out, (name, out[-2000:], bare.stderr.decode()[-2000:])
    assert "== t91_crash.py status 'RuntimeError: giving up after 107001'" in out
    assert bare.returncode == -signal.SIGTERM
    assert watched.stderr.decode().startswith("aclmon agent: listening on ")
    assert watched.stdout.decode() == out
    assert watched.stdout == bare.stdout
    assert watched.returncode == bare.returncode
    assert bare_log and watched_log == bare_log
