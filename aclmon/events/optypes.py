"""Where the runtime names an operator's type, and the table of what was learned.

pyACL's exception path gives an operator's *name*, not its type. The runtime
names the type in other places, and aclmon learns it from whichever comes
first (the agent for the exceptions it reads later, a viewer's store for the
exceptions it already holds):

* the model's description at load (the simulator's, or a ``.om``'s sidecar);
* live operator timings (the subscription records' ``get_op_type``);
* operator dump file names, ``{op_type}.{op_name}.{task}.{stream}.{time}``;
* exception dump names: ``exception_info.{op_name}.{task}.{time}`` names no
  type, nor does a file named after the kernel (its display name, such as
  ``te_matmul_1a2b…``); a file named ``{op_type}.{op_name}.{task}.{stream}.{time}``
  as operator dumps are (older GE) does, when its first field looks like an op
  type: an identifier that starts with a capital letter and has no ``_``;
* the GE line of an AI Core exception in the CANN log:
  ``[AIC_INFO] node_name:{name}, node_type:{type}, stream_id:…``.

Names are compared as the runtime writes them into file names (space ``.`` ``/``
``\\`` become ``_``). A name seen with two types stays unknown.
"""

from __future__ import annotations

import re

#: op types remembered at most (a hostile or huge model cannot grow the table)
MAX_OP_TYPES = 65536
#: what the table holds for a name seen with more than one type
AMBIGUOUS = ""

_AIC_INFO = re.compile(r"\[AIC_INFO\]\s*node_name:\s*([^,]+?)\s*,\s*node_type:\s*([^,\s]+)")
_OP_TYPE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_DUMP_NAME = re.compile(r"^([^.]+)\.([^.]+)\.\d+\.(?:\d+\.)?\d+(?:\.\d+)*$")
_OPDEBUG = re.compile(r"^opdebug\.", re.IGNORECASE)


def sanitize_op_name(name: str) -> str:
    """An op name as the runtime writes it into dump file names (space . / \\ become _)."""
    return name.replace(" ", "_").replace(".", "_").replace("/", "_").replace("\\", "_")


def from_log_text(text: str) -> tuple[str, str] | None:
    """``(op name, op type)`` from the CANN log's ``[AIC_INFO]`` line, or None."""
    if "AIC_INFO" not in text:
        return None
    match = _AIC_INFO.search(text)
    return (match.group(1), match.group(2)) if match else None


def from_dump_name(file_name: str, *, exception_dump: bool = False) -> tuple[str, str] | None:
    """``(op type, sanitized op name)`` from a dump file's name, or None (overflow
    records; exception dumps named ``exception_info.…`` or after the kernel)."""
    if _OPDEBUG.match(file_name):
        return None
    match = _DUMP_NAME.match(file_name)
    if match is None:
        return None
    op_type, op_name = match.group(1), match.group(2)
    if exception_dump and not _OP_TYPE.match(op_type):
        return None
    return op_type, op_name


def learn(table: dict[str, str], op_name: str, op_type: str, limit: int = MAX_OP_TYPES) -> bool:
    """Note that ``op_name`` is an ``op_type``; True when that made its type known
    (a name seen with two types becomes unknown)."""
    if not op_name or not op_type:
        return False
    key = sanitize_op_name(op_name)
    known = table.get(key)
    if known is None:
        if len(table) >= limit:
            return False
        table[key] = op_type
        return True
    if known != op_type:
        table[key] = AMBIGUOUS
    return False


def type_of(table: dict[str, str], op_name: str) -> str:
    """The op type of ``op_name`` when exactly one has been seen, else ""."""
    return table.get(sanitize_op_name(op_name), "") if op_name else ""
