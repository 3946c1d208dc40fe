"""Write the table of every key, mouse action and palette entry into docs/usage.md.

Run after adding or changing a binding or a palette entry:
``PYTHONPATH=. python tests/tui/make_key_table.py``; test_key_table.py fails until then.
"""

from __future__ import annotations

import asyncio

from keytable import fleet_palette_entries, palette_entries, table, write
from tui_helpers import make_app


async def main() -> None:
    app = make_app()
    names = await palette_entries(app)
    write(table(app, names, await fleet_palette_entries()))


if __name__ == "__main__":
    asyncio.run(main())
