"""The event schema: every kind round-trips, and the decoder never raises."""

from __future__ import annotations

import json
import math
import typing

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclmon import events as ev

FUZZ = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])

tensor_strategy = st.builds(
    ev.TensorDesc,
    st.integers(-1, 40),
    st.integers(-1, 50),
    st.lists(st.integers(0, 2**40), max_size=8).map(tuple),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**63),
    st.text(max_size=30),
)

summary_strategy = st.dictionaries(
    st.text(max_size=10),
    st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=10), st.booleans(), st.none()),
    max_size=5,
)


def _strategy(annotation: typing.Any) -> st.SearchStrategy[typing.Any]:
    if annotation is int:
        return st.integers(-(2**63), 2**64 - 1)
    if annotation is str:
        return st.text(max_size=40)
    if annotation is bool:
        return st.booleans()
    # finite: the decoder takes a float field only as a finite number (an infinity
    # is malformed, or None where the field may be None), so only those round-trip
    if annotation is float:
        return st.floats(allow_nan=False, allow_infinity=False, width=64)
    if annotation == (float | None):
        return st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))
    origin = typing.get_origin(annotation)
    if origin is tuple:
        (element,) = typing.get_args(annotation)[:1]
        inner = tensor_strategy if element is ev.TensorDesc else _strategy(element)
        return st.lists(inner, max_size=4).map(tuple)
    if annotation == ev.Summary or origin is dict:
        return summary_strategy
    raise AssertionError(f"no strategy for {annotation!r}")


def _event_strategy(cls: type) -> st.SearchStrategy[typing.Any]:
    hints = typing.get_type_hints(cls, globalns=vars(ev))
    fields = [_strategy(hints[name]) for name in cls._fields]  # type: ignore[attr-defined]
    return st.tuples(*fields).map(lambda values: cls(*values))


any_event = st.one_of(*[_event_strategy(cls) for cls in ev.KINDS.values()])


def _sample(cls: type) -> typing.Any:
    """A fixed, fully populated instance of ``cls``."""
    hints = typing.get_type_hints(cls, globalns=vars(ev))
    values = []
    for name in cls._fields:  # type: ignore[attr-defined]
        annotation = hints[name]
        if name == "seq":
            values.append(42)
        elif name == "ts_ns":
            values.append(1_700_000_000_123_456_789)
        elif annotation is int:
            values.append(7)
        elif annotation is str:
            values.append("text")
        elif annotation is bool:
            values.append(True)
        elif annotation in (float, float | None):
            values.append(2.5)
        elif typing.get_origin(annotation) is tuple:
            element = typing.get_args(annotation)[0]
            if element is ev.TensorDesc:
                values.append((ev.TensorDesc(1, 2, (4, 16), 0x1000, 128, "x"),))
            elif element is str:
                values.append(("a", "b"))
            else:
                values.append((0, 1))
        else:
            values.append({"key": 1, "nested": {"a": (1, 2)}})  # sequences decode as tuples
    return cls(*values)


@pytest.mark.parametrize("cls", list(ev.KINDS.values()), ids=lambda c: c.__name__)
def test_every_kind_round_trips(cls: type) -> None:
    event = _sample(cls)
    decoder = ev.EventDecoder()
    decoded = decoder.decode_payload(ev.encode(event))
    assert decoded == event
    assert type(decoded) is cls
    assert decoder.malformed == decoder.unknown == 0
    # Tensor lists come back as TensorDesc tuples, not bare arrays.
    if cls is ev.AclException:
        assert isinstance(decoded.inputs[0], ev.TensorDesc)


@pytest.mark.parametrize("cls", list(ev.KINDS.values()), ids=lambda c: c.__name__)
def test_every_kind_has_a_json_form(cls: type) -> None:
    event = _sample(cls)
    out = ev.to_json(event)
    assert out["kind"] == ev.KIND_NAMES[cls]
    expected = [ev.JSON_RENAMED_FIELDS.get((cls, n), n) for n in cls._fields]  # type: ignore[attr-defined]
    assert list(out)[1:] == expected
    assert json.loads(json.dumps(out)) == out  # plain JSON values only


def test_the_static_event_union_is_exactly_the_registered_kinds() -> None:
    assert set(typing.get_args(ev.Event)) == set(ev.KINDS.values())
    assert len(typing.get_args(ev.Event)) == len(ev.KINDS)
    assert all(ev.kind_of(cls) == kind for kind, cls in ev.KINDS.items())
    assert set(typing.get_args(ev.Command)) == set(ev.COMMAND_KINDS)
    assert all(ev.is_command(ev.Clock().make(cls, 1)) for cls in (ev.Ping, ev.StopProfiling))
    assert not ev.is_command(ev.Clock().make(ev.Drops, 1, "queue", "full"))


def test_kind_numbers_and_names_are_unique_and_complete() -> None:
    assert len(set(ev.KINDS.values())) == len(ev.KINDS)
    assert set(ev.KIND_NAMES) == set(ev.KINDS.values())
    assert len(set(ev.KIND_NAMES.values())) == len(ev.KIND_NAMES)
    assert set(ev.KINDS.values()) >= ev.COMMAND_KINDS
    for kind, cls in ev.KINDS.items():
        assert kind == cls.KIND
        assert cls._fields[:2] == ("seq", "ts_ns")
    for cls in ev.COMMAND_KINDS:
        assert cls._fields[2] == "request_id"


@FUZZ
@given(any_event)
def test_random_events_round_trip(event: typing.Any) -> None:
    decoded = ev.EventDecoder().decode_payload(ev.encode(event))
    assert decoded == event
    assert type(decoded) is type(event)


def test_json_keeps_the_event_kind_for_dump_files() -> None:
    event = ev.DumpFileSeen(1, 2, "/d/x", "overflow", 10, {"records": ((1, 2),)})
    out = ev.to_json(event)
    assert out["kind"] == "dump_file"
    assert out["file_kind"] == "overflow"
    assert out["summary"] == {"records": [[1, 2]]}


def test_wrong_field_types_are_malformed_not_raised() -> None:
    decoder = ev.EventDecoder()
    good = _sample(ev.HostSample)
    assert decoder.decode((ev.HostSample.KIND, *good)) == good
    assert decoder.decode((ev.HostSample.KIND, 1, 2, "not a float", 3, 4)) is None
    assert decoder.decode((ev.HostSample.KIND, 1, 2, 1.0, 3)) is None  # too few
    assert decoder.decode((ev.HostSample.KIND, 1, 2, 1.0, 3, 4, 5)) is None  # too many
    bad_tensor = (ev.AclException.KIND, *_sample(ev.AclException)[:-2], ((1, 2),), ())
    assert decoder.decode(bad_tensor) is None
    assert (
        decoder.decode(
            (ev.ProfilingState.KIND, 1, 2, True, True, 0, 0, ("x",), "", "", True, 0, 0, ())
        )
        is None
    )
    assert decoder.malformed == 5
    assert decoder.decode((999, 1, 2)) is None
    assert decoder.unknown == 1
    assert decoder.decode({"kind": 1}) is None
    assert decoder.decode(()) is None
    assert decoder.decode(("1", 2)) is None
    assert decoder.malformed == 8


def test_log_lines_of_schema_1_decode_with_the_later_fields_defaulted() -> None:
    decoder = ev.EventDecoder()
    old = decoder.decode((ev.LogLine.KIND, 7, 8, "warning", "old agent"))
    assert old == ev.LogLine(7, 8, "warning", "old agent", "", 0, "", 0, "", "")
    assert old.module == "" and old.log_file == ""
    partial = decoder.decode((ev.LogLine.KIND, 7, 8, "error", "x", "GE", 42))
    assert partial is not None and (partial.module, partial.pid, partial.location) == ("GE", 42, "")
    assert decoder.decode_many([(ev.LogLine.KIND, 7, 8, "info", "batch")]) == [
        ev.LogLine(7, 8, "info", "batch")
    ]
    full = ev.LogLine(1, 2, "error", "a\nb", "RUNTIME", 9, "python", 3, "x.cc:1", "/l/plog-9_1.log")
    assert decoder.decode(_unpacked((ev.LogLine.KIND, *full))) == full
    assert decoder.malformed == 0
    assert decoder.decode((ev.LogLine.KIND, 7, 8, "warning")) is None  # text is required
    assert decoder.decode((ev.LogLine.KIND, 7, 8, "info", "x", "GE", "not a pid")) is None
    assert decoder.malformed == 2


def test_float_fields_accept_integers_and_optional_none() -> None:
    sample = ev.DeviceSample(1, 2, 0, 10, 20, -1, 5, 10, "OK", None, 3)
    decoded = ev.EventDecoder().decode_payload(ev.encode(sample))
    assert decoded == sample
    assert math.isclose(decoded.power_w, 3.0)


msgpack_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**64 - 1),
        st.floats(),
        st.text(max_size=10),
        st.binary(max_size=10),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=12),
        st.dictionaries(st.text(max_size=5), children, max_size=4),
    ),
    max_leaves=30,
)
# Arrays that start with a real kind number, so validation is really exercised.
kind_headed = st.tuples(
    st.sampled_from(sorted(ev.KINDS)), st.lists(msgpack_values, max_size=12)
).map(lambda t: [t[0], *t[1]])


@FUZZ
@given(st.lists(st.one_of(msgpack_values, kind_headed), max_size=20))
def test_decoder_never_raises_on_arbitrary_objects(objs: list[typing.Any]) -> None:
    decoder = ev.EventDecoder()
    decoded = 0
    for obj in objs:
        event = decoder.decode(obj)
        if event is not None:
            decoded += 1
            assert type(event) in ev.KINDS.values()
            assert ev.EventDecoder().decode_payload(ev.encode(event)) == event
    assert decoded + decoder.malformed + decoder.unknown == len(objs)


@FUZZ
@given(st.lists(st.one_of(msgpack_values, kind_headed), max_size=10))
def test_decode_payload_never_raises_on_packed_objects(objs: list[typing.Any]) -> None:
    decoder = ev.EventDecoder()
    results = [decoder.decode_payload(msgpack.packb(obj, use_bin_type=True)) for obj in objs]
    decoded = sum(r is not None for r in results)
    assert decoded + decoder.malformed + decoder.unknown == len(objs)


@FUZZ
@given(st.binary(max_size=200))
def test_decode_payload_never_raises_on_arbitrary_bytes(data: bytes) -> None:
    decoder = ev.EventDecoder()
    event = decoder.decode_payload(data)
    assert (event is not None) + decoder.malformed + decoder.unknown == 1


def test_clock_numbers_events_in_order() -> None:
    clock = ev.Clock()
    first = clock.make(ev.LogLine, "info", "a")
    second = clock.make(ev.LogLine, "info", "b")
    assert (first.seq, second.seq) == (1, 2)
    assert second.ts_ns >= first.ts_ns > 0


def test_hello_fields_describe_this_process() -> None:
    hello = ev.Clock().make(ev.Hello, *ev.hello_fields("sim", "Ascend910B1", 2))
    assert hello.schema_version == ev.SCHEMA_VERSION
    assert hello.runtime == "sim"
    assert ev.EventDecoder().decode_payload(ev.encode(hello)) == hello


def test_docs_describe_every_kind_and_field() -> None:
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "events.md").read_text()
    for kind, cls in ev.KINDS.items():
        name = ev.KIND_NAMES[cls]
        if cls in ev.COMMAND_KINDS:
            row = next(line for line in docs.splitlines() if line.startswith(f"| {kind} `{name}`"))
            for field in cls._fields[2:]:
                assert f"`{field}`" in row, (name, field)
            continue
        heading = f"#### `{name}` ({kind}) — `{cls.__name__}`"
        assert heading in docs, heading
        section = docs.split(heading, 1)[1].split("####", 1)[0]
        for field in cls._fields[2:]:
            assert f"| `{field}` |" in section, (name, field)
    tensor = docs.split("`TensorDesc` (not an event", 1)[1].split("###", 1)[0]
    for field in ev.TensorDesc._fields:
        assert f"| `{field}` |" in tensor, field


def _unpacked(obj: typing.Any) -> typing.Any:
    """What a subscriber's unpacker makes of ``obj`` (arrays as tuples)."""
    return msgpack.unpackb(
        msgpack.packb(obj, use_bin_type=True), use_list=False, raw=False, strict_map_key=False
    )


@st.composite
def near_events(draw: st.DrawFn) -> typing.Any:
    """A real event's wire array with one thing changed: a field of another
    type (bool for int, int for float, None...), the kind as a bool or float
    that compares equal, an element too many or too few, or nothing at all."""
    event = draw(any_event)
    array = list(_unpacked((type(event).KIND, *event)))
    change = draw(st.sampled_from(["none", "field", "kind", "longer", "shorter"]))
    if change == "field":
        index = draw(st.integers(0, len(array) - 1))
        array[index] = draw(
            st.one_of(st.booleans(), st.none(), st.integers(-5, 5), st.floats(-1, 1), st.text())
        )
    elif change == "kind":
        array[0] = draw(st.sampled_from([True, float(array[0]), str(array[0])]))
    elif change == "longer":
        array.append(draw(st.integers()))
    elif change == "shorter":
        array.pop()
    return tuple(array)


@FUZZ
@given(st.lists(st.one_of(near_events(), msgpack_values.map(_unpacked)), max_size=20))
def test_batch_decoding_agrees_with_decoding_one_by_one(objs: list[typing.Any]) -> None:
    """decode_many's generated per-kind fast path accepts and rejects exactly
    what full validation does, and counts the same."""
    one = ev.EventDecoder()
    expected = [e for e in map(one.decode, objs) if e is not None]
    batch = ev.EventDecoder()
    assert batch.decode_many(objs) == expected
    assert [type(e) for e in batch.decode_many(objs)] == [type(e) for e in expected]
    assert (batch.malformed, batch.unknown) == (2 * one.malformed, 2 * one.unknown)


def test_fast_path_rejects_a_kind_that_only_compares_equal() -> None:
    event = ev.ExecuteBegin(1, 2, 3, 4, 5)
    decoder = ev.EventDecoder()
    assert decoder.decode_many([(15, 1, 2, 3, 4, 5), (15.0, 1, 2, 3, 4, 5)]) == [event]
    assert (
        decoder.decode_many([(True, 1, 2, 3, 4, 5), (15, 1, 2, 3, 4), (15, 1, 2, 3, 4, "5")]) == []
    )
    assert decoder.malformed == 4


def test_register_refuses_a_reused_number_or_name() -> None:
    from typing import NamedTuple

    class Twice(NamedTuple):
        seq: int
        ts_ns: int

    with pytest.raises(ValueError, match="kind 1 declared twice"):
        ev.register(1, "twice")(Twice)
    with pytest.raises(ValueError, match="'hello' declared twice"):
        ev.register(250, "hello")(Twice)
    assert Twice not in ev.KIND_NAMES and 250 not in ev.KINDS


def test_every_registry_derives_from_the_registrations() -> None:
    assert set(typing.get_args(ev.Event)) == set(ev.KINDS.values())
    for kind, cls in ev.KINDS.items():
        assert (kind,) == cls.KIND_TUPLE
        assert ev.kind_name(_sample(cls)) == ev.KIND_NAMES[cls]


def test_generated_decoders_keep_their_source() -> None:
    from aclmon.events import codec

    for kind, decoder in codec._FAST.items():
        assert decoder.__source__.startswith(f"def decode_{kind}(")
        assert decoder.__name__ == f"decode_{kind}"
