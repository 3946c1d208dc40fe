"""Events as JSON-ready dicts (``aclmon events --json``, ``--once --json``)."""

from __future__ import annotations

from typing import Any

from aclmon.acl_constants import data_type_name, format_name
from aclmon.events.registry import KIND_NAMES
from aclmon.events.schema import DumpFileSeen, Event, Goodbye, TensorDesc
from aclmon.events.unknown import UNKNOWN_VALUES, known

#: JSON keys of fields whose own name would hide the event's ``"kind"``.
JSON_RENAMED_FIELDS: dict[tuple[type, str], str] = {(DumpFileSeen, "kind"): "file_kind"}


def _plain(value: Any) -> Any:
    """Tuples (and TensorDescs) inside values as JSON lists and objects."""
    if isinstance(value, TensorDesc):
        out = {name: _plain(v) for name, v in zip(value._fields, value, strict=True)}
        # the enums by name beside their numbers (aclDataType, aclFormat)
        out["dtype_name"] = data_type_name(value.dtype)
        out["format_name"] = format_name(value.format)
        return out
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def to_json(event: Event) -> dict[str, Any]:
    """A JSON-ready dict: ``{"kind": name, field: value, ...}``.

    ``"kind"`` is always the event's kind name (so ``jq 'select(.kind==...)'``
    works for every event); a field that is itself called ``kind``
    (DumpFileSeen) appears under the name in :data:`JSON_RENAMED_FIELDS`. A value
    that means "not known" (:data:`UNKNOWN_VALUES`, a Goodbye's unknown exit
    status) is null.
    """
    cls = type(event)
    out: dict[str, Any] = {"kind": KIND_NAMES[cls]}
    checked = UNKNOWN_VALUES.get(cls, {}).keys() | ({"exit_status"} if cls is Goodbye else set())
    for name, value in zip(event._fields, event, strict=True):
        if name in checked:
            value = known(event, name)
        out[JSON_RENAMED_FIELDS.get((cls, name), name)] = _plain(value)
    return out
