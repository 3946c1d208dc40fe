"""The aclmon agent: runs inside a pyACL job and publishes what the runtime does.

From user code::

    import aclmon.agent
    aclmon.agent.start()            # real pyACL: `import acl` must work
    aclmon.agent.start(sim=True)    # or the simulated runtime (aclmon.sim)

or from the shell: ``aclmon run [--sim] [--listen ADDR] [--record FILE] script.py args``.
``start`` prints one line to stderr saying where the agent listens, and
registers the agent so that ``aclmon attach`` without arguments finds it.

This module stays light (it is imported to build ``aclmon --help``); the agent
itself is loaded by :func:`start`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from aclmon.errors import AclmonError

if TYPE_CHECKING:
    from aclmon.agent.core import Agent

__all__ = ["AgentError", "current", "load_acl", "start", "stop"]

_lock = threading.Lock()
_agent: Agent | None = None


class AgentError(AclmonError):
    """The agent cannot start (no pyACL, address in use, ...)."""


def load_acl(sim: bool = False) -> Any:
    """The ``acl`` module the agent should watch (the simulated one with ``sim``)."""
    if sim:
        import aclmon.sim

        aclmon.sim.install()
    try:
        import acl
    except ImportError as exc:
        raise AgentError(
            "pyACL is not importable (`import acl` failed: source CANN's set_env.sh first),"
            " or use the simulated runtime (--sim / start(sim=True))"
        ) from exc
    return acl


def start(
    address: str | None = None,
    *,
    sim: bool = False,
    acl_module: Any = None,
    quiet: bool = False,
    **settings: Any,
) -> Agent:
    """Start the agent of this process (once; later calls return the running agent).

    ``address``: ``/path.sock``, ``unix:/path`` or ``tcp://host:port`` (default:
    a Unix socket in the per-user runtime directory). ``acl_module``: the module
    to watch (default: ``import acl``; ``sim``: the simulated runtime).
    ``quiet``: do not print the listening line. ``settings``: the other fields
    of :class:`aclmon.agent.context.AgentConfig` (``record``, ``token``,
    ``sample_interval``, ``acl_json``, ``profiling_output``, ``queue_size``,
    ``register``, ``take_exception_callback``, ``plog``, ``history``); an
    unknown one is a ``TypeError``.

    ``acl_json`` is the acl.json the job passed to ``acl.init`` before the agent
    started (so its dump path and profiler switch are known). The agent's
    exception callback is registered at the job's next ``acl.init``;
    ``take_exception_callback`` registers it now, for a job that initialised acl
    before the agent started and has no callback of its own yet (pyACL cannot
    tell the agent about one registered earlier, so it would be replaced).
    ``history``: how many recent exceptions and dump files a viewer that
    connects late is sent.
    """
    global _agent
    with _lock:
        if _agent is not None:
            return _agent
        from aclmon.agent.core import Agent, print_listening

        acl = acl_module if acl_module is not None else load_acl(sim)
        agent = Agent(acl, address=address, **settings)
        agent.quiet = quiet
        agent.start()
        _agent = agent
    if not quiet:
        print_listening(agent)
    return agent


def stop() -> None:
    """Stop the agent and put the original ``acl`` functions back."""
    global _agent
    with _lock:
        agent, _agent = _agent, None
    if agent is not None:
        agent.close(restore=True)


def current() -> Agent | None:
    """The running agent of this process, if any."""
    return _agent
