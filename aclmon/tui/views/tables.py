"""Tables shared by views and screens."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from aclmon import events as ev
from aclmon.acl_constants import data_type_name, format_name
from aclmon.tui import fmt


def tensor_table(title: str, tensors: tuple[ev.TensorDesc, ...], dim: Style) -> RenderableType:
    """Inputs or outputs of an operator: dtype and format by name, shape, address, size."""
    table = Table(title=title, title_justify="left", expand=True, box=None, header_style=dim)
    for column in ("#", "NAME", "DTYPE", "FORMAT", "SHAPE", "ADDRESS", "SIZE"):
        table.add_column(
            column, no_wrap=True, justify="right" if column in ("#", "SIZE") else "left"
        )
    if not tensors:
        table.add_row("", Text("none reported", style=dim))
    for i, t in enumerate(tensors):
        table.add_row(
            str(i), t.name or "–", data_type_name(t.dtype), format_name(t.format),
            fmt.shape(t.dims), f"0x{t.address:x}", fmt.size(t.size),
        )  # fmt: skip
    return table
