"""Golden tests for the 2.0 / v1 / nano readers and the header decoder."""

from __future__ import annotations

import struct

import ml_dtypes
import numpy as np
import pytest
from dumpfixtures import PB, T, dump_bytes, header_message, nano_bytes, write

from aclmon.dump import proto_enums as pe
from aclmon.dump import read_dump
from aclmon.dump.reader import FORMAT_NANO, FORMAT_V1, FORMAT_V2
from aclmon.errors import DecodeError

EXAMPLE_69 = bytes.fromhex(
    "2d00000000000000"
    "0a03322e30108080f9c0c1c48203"
    "1a0b080110021a030a01023008"
    "220b080110021a030a01022808"
    "3203416464"
    "0000803f00000040"
    "0000404000008040"
)


def f32(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def test_reference_69_byte_example(tmp_path):
    assert len(EXAMPLE_69) == 69
    # our fixture builder (protobuf library) writes exactly the reference bytes
    built = dump_bytes(
        inputs=[T(f32(1, 2), shape=[2])], outputs=[T(f32(3, 4), shape=[2])], op_name="Add"
    )
    assert built == EXAMPLE_69
    path = write(tmp_path, "Add.Add.3.7.1700000000000000", EXAMPLE_69)
    dump = read_dump(path)
    assert dump.container == FORMAT_V2
    assert (dump.version, dump.dump_time, dump.op_name, dump.header_length) == (
        "2.0",
        1700000000000000,
        "Add",
        45,
    )
    assert dump.warnings == []
    (inp,), (out,) = dump.inputs, dump.outputs
    assert (
        inp.dtype_name == "DT_FLOAT"
        and inp.format_name == "ND"
        and inp.shape == (2,)
        and inp.size == 8
    )
    assert inp.offset == 53 and out.offset == 61
    assert inp.array.tolist() == [1.0, 2.0]
    assert out.array.tolist() == [3.0, 4.0]
    assert (dump.name.op_type, dump.name.task_id, dump.name.stream_id) == ("Add", 3, 7)


def test_payload_order_is_inputs_outputs_buffers_spaces(tmp_path):
    data = dump_bytes(
        inputs=[T(f32(1), shape=[1]), T(f32(2, 3), shape=[2])],
        outputs=[T(f32(4), shape=[1])],
        buffers=[b"\x01\x02"],
        spaces=[b"log\x00"],
    )
    dump = read_dump(write(tmp_path, "f", data))
    assert [t.array.tolist() for t in dump.inputs] == [[1.0], [2.0, 3.0]]
    assert dump.outputs[0].array.tolist() == [4.0]
    assert bytes(dump.buffers[0].raw) == b"\x01\x02"
    assert bytes(dump.workspaces[0].raw) == b"log\x00"
    assert dump.warnings == []


def test_tensor_bytes_are_read_on_first_use_only(tmp_path):
    """Opening reads the header; a tensor's bytes are read when its values are used,
    into an array of their own (no memory map), kept while something holds them."""
    values = np.arange(1 << 16, dtype=np.float32)
    data = dump_bytes(
        inputs=[T(values.tobytes(), shape=[values.size])],
        outputs=[T(values[::-1].tobytes(), shape=[values.size])],
    )
    dump = read_dump(write(tmp_path, "lazy", data))
    assert not any(t.is_read for t in dump.tensors)
    array = dump.outputs[0].array
    np.testing.assert_array_equal(array, values[::-1])
    assert [t.is_read for t in dump.tensors] == [False, True]
    assert array.base is dump.outputs[0].raw  # held: read once, viewed after
    assert not isinstance(array.base, np.memmap)
    del array
    assert not dump.outputs[0].is_read  # let go: its memory is free
    np.testing.assert_array_equal(dump.outputs[0].array, values[::-1])  # read again


def test_size_mismatch_warns_but_reads(tmp_path):
    data = dump_bytes(outputs=[T(f32(1, 2), shape=[2])]) + b"\x00\x00"
    dump = read_dump(write(tmp_path, "extra", data))
    assert dump.outputs[0].array.tolist() == [1.0, 2.0]
    assert any("size mismatch" in w for w in dump.warnings)


def test_truncated_payload_warns_and_tensor_read_fails_cleanly(tmp_path):
    data = dump_bytes(outputs=[T(f32(1, 2, 3, 4), shape=[4])])[:-6]
    path = write(tmp_path, "cut", data)
    dump = read_dump(path)
    assert any("file ends" in w for w in dump.warnings)
    with pytest.raises(DecodeError) as info:
        dump.outputs[0].array  # noqa: B018
    assert "cut" in str(info.value) and "at byte" in str(info.value)


def test_newer_fields_are_read_and_unknown_fields_skipped(tmp_path):
    msg = header_message(
        inputs=[
            T(
                f32(1),
                shape=[1],
                extra={"arg_index": 3, "input_type": 2, "address": 0xDEAD, "offset": 16},
            )
        ],
        outputs=[
            T(f32(2), shape=[1], original_shape=[1, 1], extra={"sub_format": -2, "arg_index": 5})
        ],
        spaces=[b"ab"],
        dfx_message="dfx!",
    )
    msg.output[0].dim_range.add(dim_start=1, dim_end=9)
    msg.output[0].original_op.name = "orig"
    msg.output[0].original_op.output_index = 2
    msg.attr.add(name="ffts", value='{"threadMode": 1}')
    header = msg.SerializeToString()
    # unknown fields: 20 (varint), 21 (length-delimited), 22 (fixed32), 23 (fixed64)
    header += bytes([0xA0, 0x01, 0x05, 0xAA, 0x01, 0x02, 0x68, 0x69, 0xB5, 0x01]) + b"\x00" * 4
    header += bytes([0xB9, 0x01]) + b"\x00" * 8
    data = struct.pack("<Q", len(header)) + header + f32(1) + f32(2) + b"ab"
    dump = read_dump(write(tmp_path, "new", data))
    assert dump.warnings == []
    assert dump.dfx_message == "dfx!" and dump.attrs == [("ffts", '{"threadMode": 1}')]
    inp, out = dump.inputs[0].header, dump.outputs[0].header
    assert (inp.arg_index, inp.input_type, inp.address, inp.offset) == (3, 2, 0xDEAD, 16)
    assert (out.sub_format, out.arg_index, out.original_shape) == (-2, 5, (1, 1))
    assert out.dim_range == [(1, 9)]
    assert out.original_op == {"name": "orig", "output_index": 2, "data_type": 0, "format": 0}
    assert dump.outputs[0].array.tolist() == [2.0]


def test_unpacked_repeated_dims_are_accepted(tmp_path):
    shape = bytes([0x08, 0x02, 0x08, 0x03])  # dim=2, dim=3, unpacked (wire type 0)
    output = bytes([0x08, 0x01, 0x10, 0x02, 0x1A, len(shape)]) + shape + bytes([0x30, 24])
    header = bytes([0x1A, len(output)]) + output
    data = struct.pack("<Q", len(header)) + header + np.arange(6, dtype="<f4").tobytes()
    dump = read_dump(write(tmp_path, "unpacked", data))
    assert dump.outputs[0].array.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_legacy_v1_whole_protobuf_file(tmp_path):
    msg = header_message(
        inputs=[T(f32(5, 6), shape=[2])],
        outputs=[T(np.array([7], "<i4").tobytes(), dtype=7, shape=[1])],
        embed=True,
    )
    path = write(tmp_path, "Mul.mul.1.2.1700000000000000", msg.SerializeToString())
    dump = read_dump(path)
    assert dump.container == FORMAT_V1
    assert dump.inputs[0].array.tolist() == [5.0, 6.0]
    assert dump.outputs[0].array.tolist() == [7]
    assert dump.warnings == []


def test_nano_dump(tmp_path):
    data = nano_bytes(
        inputs=[(1, 2, [2], np.array([1.5, -2], "<f2").tobytes())],  # ge 1 = FLOAT16
        outputs=[(3, 2, [1, 2], np.array([9, -9], "<i4").tobytes(), "orig_out")],  # ge 3 = INT32
    )
    dump = read_dump(write(tmp_path, "Cast.cast.1.2.1700000000000000", data))
    assert dump.container == FORMAT_NANO
    assert dump.warnings == []
    assert dump.inputs[0].dtype_name == "DT_FLOAT16"
    assert dump.inputs[0].array.tolist() == [1.5, -2.0]
    assert dump.outputs[0].dtype_name == "DT_INT32"
    assert dump.outputs[0].array.tolist() == [[9, -9]]
    assert dump.outputs[0].header.original_op["name"] == "orig_out"


def test_nano_unmapped_type_is_labelled_raw(tmp_path):
    data = nano_bytes(inputs=[(13, 2, [3], b"abc")], outputs=[])  # ge 13 = DT_STRING
    tensor = read_dump(write(tmp_path, "n", data)).inputs[0]
    decoded = tensor.decode()
    assert not decoded.supported and "DT_STRING" in decoded.label
    assert bytes(decoded.array) == b"abc"


# ------------------------------------------------------------------- dtypes
def _bf16_bits(values):
    return (np.array(values, "<f4").view("<u4") >> 16).astype("<u2").tobytes()


DTYPE_CASES = [
    # proto dtype, raw bytes, shape, expected python values
    (pe.DT_FLOAT, f32(1.5, -2), [2], [1.5, -2.0]),
    (pe.DT_FLOAT16, struct.pack("<2e", 0.5, -65504), [2], [0.5, -65504.0]),
    (pe.DT_DOUBLE, struct.pack("<2d", 1e300, -1), [2], [1e300, -1.0]),
    (pe.DT_INT8, struct.pack("<2b", -128, 127), [2], [-128, 127]),
    (pe.DT_UINT8, bytes([0, 255]), [2], [0, 255]),
    (pe.DT_INT16, struct.pack("<2h", -32768, 7), [2], [-32768, 7]),
    (pe.DT_UINT16, struct.pack("<2H", 65535, 1), [2], [65535, 1]),
    (pe.DT_INT32, struct.pack("<2i", -(2**31), 3), [2], [-(2**31), 3]),
    (pe.DT_UINT32, struct.pack("<2I", 2**32 - 1, 0), [2], [2**32 - 1, 0]),
    (pe.DT_INT64, struct.pack("<2q", -(2**63), 1), [2], [-(2**63), 1]),
    (pe.DT_UINT64, struct.pack("<2Q", 2**64 - 1, 2), [2], [2**64 - 1, 2]),
    (pe.DT_BOOL, bytes([1, 0, 1]), [3], [True, False, True]),
    (pe.DT_COMPLEX64, struct.pack("<4f", 1, 2, 3, -4), [2], [1 + 2j, 3 - 4j]),
    (pe.DT_COMPLEX128, struct.pack("<2d", 0.5, -0.5), [1], [0.5 - 0.5j]),
    (pe.DT_RESOURCE, struct.pack("<q", 42), [1], [42]),
    (pe.DT_BF16, _bf16_bits([1.0, -2.5, 3.140625]), [3], [1.0, -2.5, 3.140625]),
    # float8 encodings by hand: e4m3fn 1.0=0x38 2.0=0x40 -0.5=0xB0 448=0x7E
    (pe.DT_FLOAT8_E4M3FN, bytes([0x38, 0x40, 0xB0, 0x7E]), [4], [1.0, 2.0, -0.5, 448.0]),
    # e5m2: 1.0=0x3C 2.0=0x40 -0.5=0xB8 57344=0x7B
    (pe.DT_FLOAT8_E5M2, bytes([0x3C, 0x40, 0xB8, 0x7B]), [4], [1.0, 2.0, -0.5, 57344.0]),
    # e8m0: 2**(b-127)
    (pe.DT_FLOAT8_E8M0, bytes([127, 128, 126]), [3], [1.0, 2.0, 0.5]),
    # int4: two per byte, low nibble first: [1, -1], [7, -8], [0 (pad)]
    (pe.DT_INT4, bytes([0xF1, 0x87, 0x03]), [5], [1, -1, 7, -8, 3]),
    # uint1: msaccucmp unpackbits (most significant bit first)
    (pe.DT_UINT1, bytes([0b10110000]), [4], [1, 0, 1, 1]),
]


@pytest.mark.parametrize(
    "dtype,raw,shape,expected", DTYPE_CASES, ids=[pe.dtype_name(c[0]) for c in DTYPE_CASES]
)
def test_every_supported_dtype(tmp_path, dtype, raw, shape, expected):
    dump = read_dump(write(tmp_path, "d", dump_bytes(outputs=[T(raw, dtype=dtype, shape=shape)])))
    tensor = dump.outputs[0]
    assert tensor.supported
    values = (
        tensor.array.astype(np.float64).tolist()
        if dtype in (pe.DT_BF16, 34, 35, 36, pe.DT_INT4)
        else tensor.array.tolist()
    )
    assert values == expected
    if dtype == pe.DT_BF16:
        assert tensor.array.dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize("dtype", [13, 32, 33, 37, 38, 39, 40, 41, 18])
def test_unsupported_dtype_is_raw_bytes_with_label(tmp_path, dtype):
    dump = read_dump(
        write(tmp_path, "d", dump_bytes(outputs=[T(b"\x01\x02\x03\x04", dtype=dtype, shape=[4])]))
    )
    decoded = dump.outputs[0].decode()
    assert not decoded.supported
    assert decoded.array.dtype == np.uint8 and bytes(decoded.array) == b"\x01\x02\x03\x04"
    assert pe.dtype_name(dtype) in decoded.label and "raw bytes" in decoded.label


def test_undefined_dtype_is_int8_bytes_of_size(tmp_path):
    dump = read_dump(
        write(tmp_path, "d", dump_bytes(outputs=[T(b"\xff\x01\x02", dtype=0, shape=[99])]))
    )
    assert dump.outputs[0].array.tolist() == [-1, 1, 2]


def test_empty_shape_scalar_and_zero_dim(tmp_path):
    dump = read_dump(
        write(tmp_path, "d", dump_bytes(outputs=[T(f32(7)), T(b"", shape=[0, 3]), T(f32(1, 2, 3))]))
    )
    assert dump.outputs[0].array.shape == () and float(dump.outputs[0].array) == 7.0
    assert dump.outputs[1].array.shape == (0, 3)
    assert dump.outputs[2].array.tolist() == [1.0, 2.0, 3.0]


def test_shape_bigger_than_bytes_is_a_decode_error(tmp_path):
    dump = read_dump(
        write(tmp_path, "d", dump_bytes(outputs=[T(f32(1), shape=[1 << 30, 1 << 20])]))
    )
    with pytest.raises(DecodeError, match="needs"):
        dump.outputs[0].array  # noqa: B018


def test_absurd_shape_with_a_zero_dim_is_a_decode_error(tmp_path):
    # found by fuzzing: numpy rejects such shapes even though they hold no elements
    shape = [0, 677, 884, 2504, 1_538_701_855]
    dump = read_dump(write(tmp_path, "d", dump_bytes(outputs=[T(b"", shape=shape, size=0)])))
    with pytest.raises(DecodeError, match="too large"):
        dump.outputs[0].array  # noqa: B018


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"", "too short"),
        (b"\x01\x02", "too short"),
        (struct.pack("<Q", 0) + b"\x0a", "header length is 0"),
        (struct.pack("<Q", 1 << 62) + b"\x08\x01", "exceeds"),
        (struct.pack("<Q", 3) + b"\x0a\x05a", "runs past"),
        (struct.pack("<Q", 2) + b"\x0b\x00", "wire type"),
    ],
)
def test_bad_files_give_one_clear_error(tmp_path, data, reason):
    with pytest.raises(DecodeError, match=reason) as info:
        read_dump(write(tmp_path, "bad.file", data))
    assert "bad.file" in str(info.value)


def test_missing_file_is_a_decode_error(tmp_path):
    with pytest.raises(DecodeError, match="cannot read"):
        read_dump(tmp_path / "nope")


def test_protobuf_library_reads_what_our_fixtures_write():
    # sanity: the schema builder round-trips, so fixtures are real protobuf
    msg = header_message(outputs=[T(f32(1), shape=[1])])
    again = PB["DumpData"].FromString(msg.SerializeToString())
    assert again.output[0].size == 4


def test_exception_dump_input_buffers_are_read_from_the_end(tmp_path):
    # inputs -> outputs -> workspaces -> MC2 bytes (no header entry) -> input buffers
    general = T(b"\xaa\xbb", dtype=0, shape=[2], extra={"input_type": 1})
    normal = T(f32(1), shape=[1], extra={"input_type": 2})
    header = header_message(
        inputs=[normal, general], outputs=[T(f32(2), shape=[1])], spaces=[b"ws"]
    )
    body = header.SerializeToString()
    data = struct.pack("<Q", len(body)) + body + f32(1) + f32(2) + b"ws" + b"MC2CTX" + b"\xaa\xbb"
    dump = read_dump(write(tmp_path, "exception_info.x.1.2.1700000000000000", data))
    assert [t.index for t in dump.inputs] == [0, 1]
    assert dump.inputs[0].array.tolist() == [1.0]
    assert bytes(dump.inputs[1].raw) == b"\xaa\xbb"
    assert dump.outputs[0].array.tolist() == [2.0]
    assert bytes(dump.workspaces[0].raw) == b"ws"
    assert dump.warnings == [
        "exception dump: 6 bytes without a header entry (MC2 context) before 1 input buffer(s)"
    ]


def test_damaged_length_that_looks_like_v1_names_both_readings(tmp_path):
    data = bytes([0x0A, 0, 0, 0, 0, 0, 0, 0x40]) + b"\x0a\x032.0" + b"\x00" * 8
    with pytest.raises(DecodeError, match="not a legacy v1 dump either") as info:
        read_dump(write(tmp_path, "dmg", data))
    assert "header length" in str(info.value)


@pytest.mark.parametrize(
    "dtype,raw,expected",
    [(28, bytes([0x21, 0xF7]), [1, 2, 7, -1]), (29, bytes([0x81]), [1, 0, 0, 0, 0, 0, 0, 1])],
)
def test_packed_types_without_a_shape_read_every_element(tmp_path, dtype, raw, expected):
    dump = read_dump(write(tmp_path, "p", dump_bytes(outputs=[T(raw, dtype=dtype)])))
    assert dump.outputs[0].array.astype(int).tolist() == expected


def test_header_only_reads_metadata_without_the_payload(tmp_path):
    values = np.arange(1 << 19, dtype="<f4")  # 2 MiB: would be mapped when read fully
    data = dump_bytes(
        inputs=[T(f32(1, 2), shape=[2])], outputs=[T(values.tobytes(), shape=[values.size])]
    )
    path = write(tmp_path, "Add.add.1.2.1700000000000000", data)
    full, head = read_dump(path), read_dump(path, header_only=True)
    assert head.header_only and not full.header_only
    assert [(t.role, t.shape, t.size, t.offset) for t in head.tensors] == [
        (t.role, t.shape, t.size, t.offset) for t in full.tensors
    ]
    assert head.warnings == full.warnings == []
    with pytest.raises(DecodeError, match="not loaded"):
        head.outputs[0].array  # noqa: B018
    # a cut file gives the same warnings either way
    cut = write(tmp_path, "cut", data[:-100])
    assert read_dump(cut, header_only=True).warnings == read_dump(cut).warnings != []


def test_header_only_nano_and_v1(tmp_path):
    nano = write(tmp_path, "n", nano_bytes([(1, 2, [2], b"\x00\x3c\x00\x40")], []))
    assert read_dump(nano, header_only=True).inputs[0].shape == (2,)
    msg = header_message(inputs=[T(f32(5), shape=[1])], embed=True)
    v1 = write(tmp_path, "Mul.mul.1.2.1700000000000000", msg.SerializeToString())
    dump = read_dump(v1, header_only=True)  # v1 keeps the data inside the header: loaded anyway
    assert not dump.header_only and dump.inputs[0].array.tolist() == [5.0]
