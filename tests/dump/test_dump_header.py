"""The DumpData header decoder against the schema the fixtures declare on their own:
every field of every tensor message lands on its TensorHeader attribute, and errors
inside nested messages name the whole path."""

from __future__ import annotations

import pytest
from dumpfixtures import _SCHEMA, PB

from aclmon.dump.header import decode_header
from aclmon.errors import DecodeError

#: the tensor messages: DumpData field name -> (message, DumpHeader list)
_TENSOR_MESSAGES = {
    "input": ("OpInput", "inputs"),
    "output": ("OpOutput", "outputs"),
    "buffer": ("OpBuffer", "buffers"),
    "space": ("Workspace", "workspaces"),
}
#: TensorHeader attribute of a message field where the names differ
_ATTRIBUTE = {"type": "space_type"}


@pytest.mark.parametrize("field_name", list(_TENSOR_MESSAGES))
def test_every_scalar_field_of_each_tensor_message_is_read(field_name):
    message, attribute = _TENSOR_MESSAGES[field_name]
    msg = PB["DumpData"]()
    expected: dict[str, object] = {}
    for copy in range(2):  # two entries: each gets its own index
        entry = getattr(msg, field_name).add()
        for number, name, kind, _repeated in _SCHEMA[message]:
            value = 100 * copy + number  # distinct per field and per entry
            if kind in ("int32", "uint32", "uint64"):
                setattr(entry, name, -value if kind == "int32" else value)
                if copy == 1:
                    expected[_ATTRIBUTE.get(name, name)] = getattr(entry, name)
            elif kind == "Shape":
                getattr(entry, name).dim.extend([value, 3])
                if copy == 1:
                    expected[name] = (value, 3)
    data = msg.SerializeToString()
    header = decode_header(data, 0, len(data), "f")
    tensors = getattr(header, attribute)
    assert [t.index for t in tensors] == [0, 1]
    assert {t.role for t in tensors} == {field_name}
    second = tensors[1]
    assert {name: getattr(second, name) for name in expected} == expected


def test_a_bad_field_inside_a_nested_message_names_its_path():
    original_op = bytes([0x08, 0x01])  # name (a string) written as a varint
    output = bytes([0x22, len(original_op)]) + original_op
    data = bytes([0x1A, len(output)]) + output
    with pytest.raises(DecodeError) as caught:
        decode_header(data, 0, len(data), "f")
    assert caught.value.offset == 5  # the value of the bad field
    assert "output.original_op.name (field 1) has wire type 0, expected 2" in str(caught.value)


def test_workspace_type_is_named_as_in_its_message():
    space = bytes([0x0A, 0x01])  # type (an int32) written as a string
    data = bytes([0x42, len(space) + 1]) + space + b"x"
    with pytest.raises(DecodeError, match=r"space\.type \(field 1\)"):
        decode_header(data, 0, len(data), "f")
