"""``python -m aclmon``: the same as the ``aclmon`` command."""

import sys

from aclmon.cli import program

sys.exit(program())
