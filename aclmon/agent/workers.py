"""Agents for the job's worker processes: forked, spawned or forkserver children.

An inference service often does its ACL work in ``multiprocessing`` workers. Each
worker that initialises ACL gets an agent of its own (its own socket, registered,
the parent's job name, its worker index as the rank when the launcher gave none),
started at the worker's first ``acl.init``: workers that never touch ACL (data
loaders) stay out of sight, and nothing runs in a child before it calls ACL.

* fork: the parent agent's at-fork handler (in the child) removes the parent's
  hooks and arms ``acl.init`` (:func:`arm`);
* spawn and forkserver: the child is a new interpreter. The parent agent adds an
  entry to the preparation data ``multiprocessing`` sends every such child; the
  child unpickles it before it imports the job's main module, which arms the child
  the same way (installing the simulated runtime first when the parent runs on it,
  as ``import acl`` would fail there otherwise).

The parent's agent is not touched by any of this.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

#: the key of the agent's entry in multiprocessing's preparation data
PREPARATION_KEY = "aclmon_worker_agent"
#: Hello.rank_env gets this name when the rank is the worker index
WORKER_VARIABLE = "ACLMON_WORKER"


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker's agent is started with (picklable: it crosses to spawned children)."""

    sim: bool
    job: str
    quiet: bool
    #: the parent agent's settings a worker keeps (token, sampling, plog, history, ...)
    config: dict[str, Any] = field(default_factory=dict)


class _Armed:
    """Unpickled in a spawned child: arms it (see the module docstring)."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return arm_spawned, (self.settings,)


def arm_spawned(settings: WorkerSettings) -> None:
    """Runs in a spawned or forkserver child while it unpickles its preparation data."""
    try:
        import aclmon.agent

        arm(aclmon.agent.load_acl(settings.sim), settings)
    except Exception as exc:  # the worker runs unobserved, as it would without aclmon
        print(f"aclmon agent: worker {_index()} not watched: {exc}", file=sys.stderr)


def arm(acl: Any, settings: WorkerSettings) -> None:
    """Start a worker agent at the next ``acl.init`` of this process."""
    original = acl.init
    lock = threading.Lock()

    def init(*args: Any, **kwargs: Any) -> Any:
        with lock:
            if acl.init is init:
                acl.init = original
                _start(acl, settings)
        return acl.init(*args, **kwargs)

    init.__wrapped__ = original  # type: ignore[attr-defined]  # how the hook is undone
    acl.init = init


def _start(acl: Any, settings: WorkerSettings) -> None:
    try:
        import aclmon.agent

        agent = aclmon.agent.start(
            acl_module=acl,
            quiet=settings.quiet,
            job=settings.job,
            worker=_index(),
            **settings.config,
        )
        util = sys.modules.get("multiprocessing.util")
        if util is not None and _index() >= 0:
            # A worker leaves through os._exit, past atexit: multiprocessing runs
            # its finalizers first, so the agent says goodbye from there.
            util.Finalize(None, agent.close, exitpriority=10)
    except Exception as exc:
        print(f"aclmon agent: worker {_index()} not watched: {exc}", file=sys.stderr)


def _index() -> int:
    """This worker's index: multiprocessing's numbering of the parent's children
    (``ForkPoolWorker-2`` is 2), -1 for a process it did not start."""
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return -1
    identity = getattr(mp.current_process(), "_identity", ())
    return int(identity[-1]) if identity else -1


# ---------------------------------------------------------------- the parent's side
_spawn_patch_lock = threading.Lock()


def watch_spawned_children(settings: WorkerSettings) -> None:
    """Make every spawned or forkserver child of this process arm itself."""
    import multiprocessing.spawn as spawn

    with _spawn_patch_lock:
        current = spawn.get_preparation_data
        base = getattr(current, "__aclmon_base__", current)

        def get_preparation_data(name: str) -> dict[str, Any]:
            data = base(name)
            with contextlib.suppress(Exception):
                data = {PREPARATION_KEY: _Armed(settings), **data}
            return data

        get_preparation_data.__aclmon_base__ = base  # type: ignore[attr-defined]  # patched once
        spawn.get_preparation_data = get_preparation_data


def stop_watching_spawned_children() -> None:
    spawn = sys.modules.get("multiprocessing.spawn")
    if spawn is None:
        return
    with _spawn_patch_lock:
        base = getattr(spawn.get_preparation_data, "__aclmon_base__", None)
        if base is not None:
            spawn.get_preparation_data = base  # type: ignore[attr-defined]  # the saved original
