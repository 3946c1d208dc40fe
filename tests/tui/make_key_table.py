"""Write the table of every key, mouse action and palette entry into docs/usage.md.

Run after adding or changing a binding or a palette entry:
``PYTHONPATH=. python tests/tui/make_key_table.py``; test_key_table.py fails until then.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from keytable import fleet_palette_entries, palette_entries, table, write
from tui_helpers import golden_app


async def main() -> None:
    with tempfile.TemporaryDirectory() as empty:
        app = golden_app(Path(empty))  # every view: Compare's keys are in the table too
        names = await palette_entries(app)
        write(table(app, names, await fleet_palette_entries()))


if __name__ == "__main__":
    asyncio.run(main())
