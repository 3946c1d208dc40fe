"""What the viewer does with a dump file a view or a detail names: decode it
for the pane that asked (the Dumps view's, an exception detail's) or export its
tensors as ``.npy`` files, both on a worker thread, from where the source says
the file is now (a file that is gone is said so, with why).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType

from aclmon.tui.dumpdetail import decode_for_view, render_report
from aclmon.tui.style import theme_style

if TYPE_CHECKING:
    from aclmon.tui.app import AclmonApp


class DumpFiles:
    """Decodes and exports the dump files of ``app``'s source; see the module docstring."""

    def __init__(self, app: AclmonApp) -> None:
        self.app = app

    def decode(self, path: str, kind: str, show: Callable[[RenderableType], None]) -> None:
        """Decode in a worker and ``show`` the report; the newest request wins
        (an older one is cancelled)."""
        work = partial(self._decode_blocking, path, kind, show)
        self.app.run_worker(work, thread=True, exclusive=True, group="dump-decode")

    def export(self, path: str, out_dir: str) -> None:
        """A file's tensors as ``aclmon convert`` writes them (.npy), off the UI thread."""
        work = partial(self._export_blocking, path, out_dir)
        self.app.run_worker(work, thread=True, group="dump-export")

    def locate(self, path: str) -> tuple[str, str]:
        """Where a file the events name is now, and "" or why it is not there."""
        source = self.app.source
        found = source.resolve_path(path)
        if os.path.exists(found):
            return found, ""
        where = f"{os.path.basename(path)} is gone from {os.path.dirname(path)}: "
        return found, where + source.why_gone(path)

    def _decode_blocking(
        self, path: str, kind: str, show: Callable[[RenderableType], None]
    ) -> None:
        found, gone = self.locate(path)
        # a file that is gone: said in the pane, with what it was
        report = {"path": path, "kind": kind, "error": gone} if gone else decode_for_view(found)
        self.app._call_ui(self._show_report, report, show)

    def _show_report(self, report: Any, show: Callable[[RenderableType], None]) -> None:
        styles = {
            "dim": theme_style(self.app, "aclmon-dim"),
            "bad": theme_style(self.app, "aclmon-bad", bold=True),
        }
        show(render_report(report, styles))

    def _export_blocking(self, path: str, out_dir: str) -> None:
        from aclmon.dump.convert import convert_file

        found, gone = self.locate(path)
        if gone:
            self.app._call_ui(self._exported, gone, [])
            return
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as exc:
            self.app._call_ui(self._exported, f"cannot create {out_dir}: {exc.strerror or exc}", [])
            return
        result = convert_file(found, out_dir)
        self.app._call_ui(self._exported, result.error or "", result.written, out_dir)

    def _exported(self, error: str, written: list[str], out_dir: str = "") -> None:
        if error:
            self.app.notify(f"export failed: {error}", severity="error", timeout=8)
        else:
            self.app.notify(f"exported {len(written)} file(s) to {out_dir}", timeout=8)
