"""Run a Python script as ``__main__`` the way ``python script.py args`` would.

Used by ``aclmon run`` after the agent has started, so the script's
``import acl`` already sees the wrapped module.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from aclmon.errors import AclmonError


class ScriptError(AclmonError):
    """The script to run does not exist or is not a file."""


def exit_code(code: object) -> int:
    """The process exit status Python gives for ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_script(path: str, args: list[str]) -> int:
    """Run ``path`` with ``sys.argv = [path, *args]``; returns its exit status."""
    if not os.path.isfile(path):
        raise ScriptError(f"no such script: {path}")
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        return exit_code(exc.code)
    except KeyboardInterrupt:
        return 130
    except BaseException:
        # What the interpreter would print, minus the frames of aclmon and runpy.
        error_type, error, tb = sys.exc_info()
        script = os.path.abspath(path)
        first = tb
        while first is not None and os.path.abspath(first.tb_frame.f_code.co_filename) != script:
            first = first.tb_next
        traceback.print_exception(error_type, error, first or tb)
        return 1
    return 0
