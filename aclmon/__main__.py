"""``python -m aclmon``: the same as the ``aclmon`` command."""

import sys

from aclmon.cli import main

sys.exit(main())
