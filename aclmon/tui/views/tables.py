"""Tables shared by views and screens."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

from aclmon import events as ev
from aclmon.acl_constants import data_type_name, format_name
from aclmon.tui import fmt
from aclmon.tui.style import Fitted, key_values


def tensor_table(title: str, tensors: tuple[ev.TensorDesc, ...], dim: Style) -> RenderableType:
    """Inputs or outputs of an operator: dtype and format by name, shape, address,
    size; as key/value lines (a tensor's fields under its index and name) where
    the table does not fit."""
    table = Table(title=title, title_justify="left", expand=True, box=None, header_style=dim)
    for column in ("#", "NAME", "DTYPE", "FORMAT", "SHAPE", "ADDRESS", "SIZE"):
        table.add_column(
            column, no_wrap=True, justify="right" if column in ("#", "SIZE") else "left"
        )
    if not tensors:
        table.add_row("", Text("none reported", style=dim))
    narrow: list[tuple[str, RenderableType]] = []
    for i, t in enumerate(tensors):
        # no address: a tensor known from a dump's header (which keeps none)
        address = f"0x{t.address:x}" if t.address else "–"
        dtype, form, size = data_type_name(t.dtype), format_name(t.format), fmt.size(t.size)
        table.add_row(str(i), t.name or "–", dtype, form, fmt.shape(t.dims), address, size)
        # the name on its own line, then the rest: the shape without spaces stays whole
        value = Text(t.name or "–", style=Style(bold=True))
        value.append(f"\n{dtype}  {form}  {fmt.shape(t.dims).replace(' ', '')}\n{address}  {size}")
        narrow.append((f"#{i}", value))
    if not tensors:
        narrow.append(("", Text("none reported", style=dim)))
    return Fitted(table, key_values(narrow, dim, title))
