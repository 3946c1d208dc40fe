"""``python -m aclmon.agent [options] script.py [args]``: the same as ``aclmon run``.

It loads only the agent's own command, so a subprocess that just needs an
agent (``aclmon demo``, tests, a launcher script) does not depend on any other
subcommand's module.
"""

from __future__ import annotations

import argparse
import sys

from aclmon.agent.commands import configure_run
from aclmon.errors import AclmonError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m aclmon.agent", description="run a script with the agent installed"
    )
    configure_run(parser)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except AclmonError as exc:
        print(f"aclmon run: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
