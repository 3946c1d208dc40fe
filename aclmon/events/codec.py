"""Encoding and decoding of single events (msgpack payloads, no framing).

Decoding treats input as hostile: :class:`EventDecoder` validates each array
against the kind's field types (taken from :mod:`aclmon.events.schema`),
counts malformed and unknown events, and skips them; it never raises into its
caller. Beyond types: a float field holds a finite number (NaN or an infinity
becomes ``None`` where the field may be ``None``, "not known"; elsewhere the
event is malformed), and the maps and arrays inside a dict field nest at most
:data:`MAX_NESTING` deep, so whatever passes can be shown, compared and written
as JSON without surprises. Framing and batches of frames are :mod:`aclmon.bus.wire`'s job.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterable
from typing import Any

import msgpack

from aclmon.events import schema
from aclmon.events.registry import KINDS, kind_of
from aclmon.events.schema import Event, Summary, TensorDesc

# ---------------------------------------------------------------- encoding
_packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack


def encode(event: Event) -> bytes:
    """One event as a msgpack payload (without framing)."""
    payload: bytes = _packb((kind_of(type(event)), *event))
    return payload


def unpack_payload(payload: bytes) -> Any:
    """Unpack one msgpack payload. msgpack bounds every length by the payload's
    own size, so garbage cannot make it allocate more than the input."""
    return msgpack.unpackb(payload, use_list=False, raw=False, strict_map_key=True)


# ---------------------------------------------------------------- validation
_NoneType = type(None)
#: how deep maps and arrays may nest inside a dict field (real summaries: < 8)
MAX_NESTING = 32


def nesting_within(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether the containers in ``value`` nest at most ``limit`` deep (no recursion)."""
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        kind = type(item)
        if kind is dict:
            children = item.values()
        elif kind is tuple or kind is list:
            children = item
        else:
            continue
        if depth > limit:
            return False
        for child in children:
            if type(child) in (dict, tuple, list):
                push((child, depth + 1))
    return True


def _accepts(annotation: Any) -> tuple[type, ...]:
    """The runtime types one annotated field may hold on the wire."""
    if annotation is float:
        return (float, int)
    if annotation in (int, str, bool):
        return (annotation,)
    origin = typing.get_origin(annotation)
    if origin is tuple:
        return (tuple, list)
    if origin is dict or annotation is Summary:
        return (dict,)
    if origin in (typing.Union, types.UnionType):
        accepted: tuple[type, ...] = ()
        for arg in typing.get_args(annotation):
            accepted += (_NoneType,) if arg is _NoneType else _accepts(arg)
        return accepted
    raise TypeError(f"no wire rule for {annotation!r}")


def _element_type(annotation: Any) -> Any:
    if typing.get_origin(annotation) is tuple:
        args = typing.get_args(annotation)
        return args[0]
    return None


class _KindSpec:
    __slots__ = (
        "cls",
        "defaults",
        "exact",
        "field_types",
        "floats",
        "maps",
        "nested",
        "nfields",
        "nrequired",
        "plain",
    )

    def __init__(self, cls: type[Any]) -> None:
        hints = typing.get_type_hints(cls, globalns=vars(schema))
        annotations = [hints[name] for name in cls._fields]
        self.cls = cls
        self.nfields = len(annotations)
        # Fields added later carry defaults: an array from an older source may end before them.
        defaults: dict[str, Any] = getattr(cls, "_field_defaults", {})
        names: tuple[str, ...] = cls._fields
        self.defaults = tuple(defaults[name] for name in names if name in defaults)
        self.nrequired = self.nfields - len(self.defaults)
        self.field_types = tuple(_accepts(a) for a in annotations)
        # The common case (every value of its first listed type) checks in one compare.
        self.exact = tuple(t[0] for t in self.field_types)
        # (index, element type) of sequence fields, whose elements are checked too.
        self.nested = tuple(
            (i, _element_type(a)) for i, a in enumerate(annotations) if _element_type(a) is not None
        )
        # (index, may be None) of float fields: they must hold finite numbers.
        self.floats = tuple(
            (i, _NoneType in t) for i, t in enumerate(self.field_types) if t[0] is float
        )
        # indices of dict fields: their nesting is bounded
        self.maps = tuple(i for i, t in enumerate(self.field_types) if t[0] is dict)
        self.plain = not (self.nested or self.floats or self.maps)


_tuple_new = tuple.__new__
_SPECS: dict[int, _KindSpec] = {kind: _KindSpec(cls) for kind, cls in KINDS.items()}
_TENSOR_SPEC = _KindSpec(TensorDesc)


#: the types a map's value may have without being a container
_SCALARS = frozenset({int, float, str, bool, bytes, _NoneType})


def _elements_are(items: tuple[Any, ...], only: frozenset[type]) -> bool:
    """Every item of ``items`` exactly of the one type in ``only``."""
    return {*map(type, items)} <= only


def _fast_decoder(spec: _KindSpec, kind: int | None) -> Any:
    """A function ``(array) -> event | None`` for one kind, generated from its
    field types: it unpacks the array into locals (a wrong length raises
    ValueError), checks the kind and every field with ``type(x) is T``
    against the field's usual type, the elements of sequence fields too
    (tensors through TensorDesc's own generated decoder), and builds the
    NamedTuple. ``None`` (or an exception) means "not the common case":
    :meth:`EventDecoder.decode` then decides (other accepted types such as
    int for float or None, malformed). ``kind=None``: an array without a
    kind element (a tensor inside an exception).

    Generated code because it is the hot path of every subscriber: one call
    with inline identity checks costs ~40% less than
    ``tuple(map(type, array)) == signature`` plus a slice.
    """
    namespace: dict[str, Any] = {
        "_cls": spec.cls,
        "_new": _tuple_new,
        "_elements_are": _elements_are,
        "_tensors": _fast_tensors,
        "_nesting_within": nesting_within,
        "_scalars": _SCALARS,
    }
    params = ["obj", "_type=type", "_int=int", "_tuple=tuple", "_cls=_cls", "_new=_new"]
    checks = []
    for i, accepted in enumerate(spec.exact):
        namespace[f"_t{i}"] = accepted
        params.append(f"_t{i}=_t{i}")
        checks.append(f"_type(f{i}) is _t{i}")
        if accepted is float:
            checks.append(f"f{i} - f{i} == 0.0")  # finite: NaN and infinities are not
        elif accepted is dict:
            # Nothing to walk in the usual map (empty, or scalars only).
            checks.append(
                f"(not f{i} or {{*map(_type, f{i}.values())}} <= _scalars or _nesting_within(f{i}))"
            )
    fields = ", ".join(f"f{i}" for i in range(spec.nfields))
    name = f"decode_{kind}" if kind is not None else f"decode_{spec.cls.__name__}"
    lines = [f"def {name}({', '.join(params)}):"]
    if kind is None:
        # Not behind decode_many's check that the array is a tuple (a dict
        # would unpack into its keys).
        lines += ["    if _type(obj) is not _tuple:", "        return None", f"    {fields}, = obj"]
    else:
        lines.append(f"    kind, {fields}, = obj")
        checks.insert(0, "_type(kind) is _int")
    lines.append(f"    if {' and '.join(checks)}:")
    for i, element in spec.nested:
        if element is TensorDesc:
            lines.append(f"        f{i} = _tensors(f{i})")
            lines.append(f"        if f{i} is None:")
        else:
            namespace[f"_only{i}"] = frozenset({_accepts(element)[0]})
            lines.append(f"        if not _elements_are(f{i}, _only{i}):")
        lines.append("            return None")
    lines.append(f"        return _new(_cls, ({fields},))")
    lines.append("    return None")
    source = "\n".join(lines) + "\n"
    exec(source, namespace)  # our own field names and types only
    decoder = namespace[name]
    # Kept for debugging: ``print(_FAST[kind].__source__)`` shows what runs.
    decoder.__source__ = source
    return decoder


def _fast_tensors(items: tuple[Any, ...]) -> tuple[TensorDesc, ...] | None:
    """Every item as a TensorDesc through the generated decoder, or None."""
    tensors = tuple(map(_fast_tensor, items))
    return None if None in tensors else tensors


_fast_tensor = _fast_decoder(_TENSOR_SPEC, None)
#: kind -> generated fast decoder (see :func:`_fast_decoder`).
_FAST: dict[int, Any] = {kind: _fast_decoder(spec, kind) for kind, spec in _SPECS.items()}


def _check_fields(spec: _KindSpec, fields: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Validated fields (sequences as tuples, tensors as TensorDesc), or None."""
    if len(fields) != spec.nfields:
        if not spec.nrequired <= len(fields) < spec.nfields:
            return None
        fields = fields + spec.defaults[len(fields) - spec.nrequired :]
    if tuple(map(type, fields)) != spec.exact:
        for value, accepted in zip(fields, spec.field_types, strict=True):
            if not isinstance(value, accepted):
                return None
    for index in spec.maps:
        if not nesting_within(fields[index]):
            return None
    if spec.floats:
        for index, optional in spec.floats:
            value = fields[index]
            if type(value) is float and not math.isfinite(value):
                if not optional:
                    return None
                fields = (*fields[:index], None, *fields[index + 1 :])
    if not spec.nested:
        return fields
    out = list(fields)
    for index, element in spec.nested:
        items = fields[index]
        if element is TensorDesc:
            tensors = []
            for item in items:
                if not isinstance(item, (tuple, list)):
                    return None
                checked = _check_fields(_TENSOR_SPEC, tuple(item))
                if checked is None:
                    return None
                tensors.append(_tuple_new(TensorDesc, checked))
            out[index] = tuple(tensors)
        else:
            accepted = _accepts(element)
            for item in items:
                if not isinstance(item, accepted):
                    return None
            out[index] = tuple(items)
    return tuple(out)


class EventDecoder:
    """Turns unpacked msgpack arrays into events, counting what it skips.

    ``malformed`` counts arrays of a known kind whose fields do not match the
    schema; ``unknown`` counts kinds this version does not know (a newer agent).
    Neither ever raises.
    """

    __slots__ = ("malformed", "unknown")

    def __init__(self) -> None:
        self.malformed = 0
        self.unknown = 0

    def decode(self, obj: Any) -> Event | None:
        if type(obj) is not tuple:
            if type(obj) is not list:
                self.malformed += 1
                return None
            obj = tuple(obj)
        if not obj or type(obj[0]) is not int:
            self.malformed += 1
            return None
        spec = _SPECS.get(obj[0])
        if spec is None:
            self.unknown += 1
            return None
        fields = obj[1:]
        # Fast path: every field already of its usual type and nothing nested.
        event: Event
        if spec.plain and len(fields) == spec.nfields and tuple(map(type, fields)) == spec.exact:
            event = _tuple_new(spec.cls, fields)
            return event
        checked = _check_fields(spec, fields)
        if checked is None:
            self.malformed += 1
            return None
        event = _tuple_new(spec.cls, checked)
        return event

    def decode_payload(self, payload: bytes) -> Event | None:
        """Unpack and decode one msgpack payload; garbage counts as malformed."""
        try:
            obj = unpack_payload(payload)
        except Exception:  # msgpack raises many types on garbage; all mean "malformed"
            self.malformed += 1
            return None
        return self.decode(obj)

    def decode_many(self, objs: Iterable[Any]) -> list[Event]:
        """Decode a batch, skipping (and counting) what is not an event.

        The hot path of every subscriber and replay: each array goes to its
        kind's generated decoder (every field type-checked inline, see
        :func:`_fast_decoder`); whatever that does not accept outright
        (unknown kinds, non-arrays, wrong lengths, unusual but valid types,
        nested fields, malformed events) goes through :meth:`decode`, which
        validates fully and counts.
        """
        fast = _FAST
        decode = self.decode
        out: list[Event] = []
        append = out.append
        for obj in objs:
            if type(obj) is tuple:
                try:
                    event = fast[obj[0]](obj)
                except Exception:  # empty, unhashable or unknown kind, wrong length
                    event = None
                if event is not None:
                    append(event)
                    continue
            event = decode(obj)
            if event is not None:
                append(event)
        return out
