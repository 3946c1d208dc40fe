"""aclmon.sim: a simulated pyACL runtime that runs unmodified ``import acl`` programs.

``from aclmon.sim import acl`` gives the drop-in module; :func:`install` makes a
plain ``import acl`` resolve to it; :func:`run_script` runs a script as
``__main__`` against it. Simulation control (device count, SoC, seed, fault
injection) is in :mod:`aclmon.sim.config`, outside the ``acl`` namespace.
See docs/sim.md.
"""

from __future__ import annotations

import os
import runpy
import sys
from types import ModuleType

#: the demo job script (run it with :func:`run_script`; importing it is not needed).
DEMO_WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_workload.py")
#: the shipped model descriptions (``*.json``).
MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def install() -> ModuleType:
    """Make ``import acl`` return the simulated module; returns it."""
    from aclmon.sim import acl

    sys.modules["acl"] = acl
    return acl


def run_script(path: str, argv: list[str] | None = None) -> None:
    """Run a script as ``__main__`` with ``import acl`` served by the sim.

    ``sys.argv`` is ``[path, *argv]`` and the script's directory comes first on
    ``sys.path``, as with ``python script.py``. Both are restored afterwards; a
    ``SystemExit`` from the script propagates to the caller.
    """
    install()
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path, *(argv or [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
