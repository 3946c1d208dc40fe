"""Dump files written by the sim, checked byte for byte and through an independent reader."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon import acl_constants as C
from aclmon.sim import dumpfile, layouts

from . import dumpreader

GOLDEN_69 = bytes.fromhex(
    "2d00000000000000"
    "0a03322e30108080f9c0c1c482031a0b080110021a030a01023008"
    "220b080110021a030a01022808320341646"
    "4"
    "0000803f00000040"
    "0000404000008040"
)


def test_golden_69_byte_example():
    def tensor(values):
        raw = np.array(values, dtype=np.float32).tobytes()
        return dumpfile.DumpTensor(C.ACL_FLOAT, C.ACL_FORMAT_ND, (2,), (2,), raw)

    data = dumpfile.encode_dump("Add", 1_700_000_000_000_000, [tensor([1, 2])], [tensor([3, 4])])
    assert len(data) == 69
    assert data == GOLDEN_69
    parsed = dumpreader.read_dump(data)
    assert parsed.version == "2.0" and parsed.dump_time == 1_700_000_000_000_000
    assert parsed.inputs[0].array().tolist() == [1.0, 2.0]
    assert parsed.outputs[0].array().tolist() == [3.0, 4.0]


KERNEL_DTYPES = [
    C.ACL_FLOAT,
    C.ACL_FLOAT16,
    C.ACL_BF16,
    C.ACL_INT8,
    C.ACL_INT32,
    C.ACL_UINT8,
    C.ACL_INT16,
    C.ACL_INT64,
    C.ACL_DOUBLE,
    C.ACL_BOOL,
    C.ACL_UINT16,
    C.ACL_UINT32,
    C.ACL_UINT64,
]


@st.composite
def tensors(draw):
    acl_dtype = draw(st.sampled_from(KERNEL_DTYPES))
    fmt = draw(
        st.sampled_from(
            [C.ACL_FORMAT_ND, C.ACL_FORMAT_NCHW, C.ACL_FORMAT_NC1HWC0, C.ACL_FORMAT_FRACTAL_NZ]
        )
    )
    rank = 4 if fmt in (C.ACL_FORMAT_NCHW, C.ACL_FORMAT_NC1HWC0) else draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 20), min_size=rank, max_size=rank)))
    dtype = layouts.ACL_TO_NUMPY[acl_dtype]
    seed = draw(st.integers(0, 2**32 - 1))
    values = np.random.default_rng(seed).normal(0, 50, shape)
    return acl_dtype, fmt, values.astype(dtype)


@settings(deadline=None, max_examples=60)
@given(
    st.lists(tensors(), min_size=1, max_size=3),
    st.lists(tensors(), min_size=0, max_size=2),
    st.text(min_size=1, max_size=40),
)
def test_every_dtype_and_format_roundtrips(inputs, outputs, op_name):
    def dump_tensor(acl_dtype, fmt, logical):
        stored = layouts.to_device(logical, fmt, acl_dtype)
        assert stored.shape == layouts.device_shape(logical.shape, fmt, acl_dtype)
        return dumpfile.DumpTensor(acl_dtype, fmt, stored.shape, logical.shape, stored.tobytes())

    raw = dumpfile.encode_dump(
        op_name,
        1_234_567_890_123_456,
        [dump_tensor(*t) for t in inputs],
        [dump_tensor(*t) for t in outputs],
    )
    parsed = dumpreader.read_dump(raw)
    assert parsed.op_name == op_name
    for (acl_dtype, fmt, logical), tensor in zip(
        inputs + outputs, parsed.inputs + parsed.outputs, strict=True
    ):
        assert tensor.data_type == dumpfile.ACL_TO_PROTO_DTYPE[acl_dtype]
        assert tensor.format == fmt  # ND/NCHW/NC1HWC0/FRACTAL_NZ share their numbers
        back = tensor.logical()
        assert back.dtype == logical.dtype
        np.testing.assert_array_equal(back, logical)


def test_proto_dtype_enum_is_not_acl_numbering():
    assert dumpfile.ACL_TO_PROTO_DTYPE[C.ACL_FLOAT16] == 2 and C.ACL_FLOAT16 == 1
    assert dumpfile.ACL_TO_PROTO_DTYPE[C.ACL_INT4] == 28 and C.ACL_INT4 == 29
    assert dumpfile.ACL_TO_PROTO_DTYPE[C.ACL_INT32] == 7


# ---------------------------------------------------------------- the runtime writes them
def run_models(acl, tmp_path, model_path, dump_section, names=("resnet_tiny",), runs=1):
    config = tmp_path / "acl.json"
    dump_dir = tmp_path / "dump"
    config.write_text(json.dumps({"dump": {"dump_path": os.fspath(dump_dir), **dump_section}}))
    assert acl.init(os.fspath(config)) == 0
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    for name in names:
        model_id, ret = acl.mdl.load_from_file(model_path[name])
        assert ret == 0
        desc = acl.mdl.create_desc()
        acl.mdl.get_desc(desc, model_id)
        ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
        for i in range(acl.mdl.get_num_inputs(desc)):
            size = acl.mdl.get_input_size_by_index(desc, i)
            ptr, _ = acl.rt.malloc(size, 0)
            host = np.random.default_rng(i).normal(0, 1, size // 2).astype(np.float16)
            acl.rt.memcpy(ptr, size, acl.util.numpy_to_ptr(host), size, 1)
            acl.mdl.add_dataset_buffer(ins, acl.create_data_buffer(ptr, size))
        for i in range(acl.mdl.get_num_outputs(desc)):
            size = acl.mdl.get_output_size_by_index(desc, i)
            ptr, _ = acl.rt.malloc(size, 0)
            acl.mdl.add_dataset_buffer(outs, acl.create_data_buffer(ptr, size))
        for _ in range(runs):
            assert acl.mdl.execute_async(model_id, ins, outs, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0
    return dump_dir


def dump_files(dump_dir: Path) -> dict[str, Path]:
    return {p.name: p for p in dump_dir.rglob("*") if p.is_file()}


def by_op(files: dict[str, Path], op_file_name: str) -> dumpreader.DumpFile:
    (name,) = [n for n in files if n.split(".")[1] == op_file_name]
    return dumpreader.read_dump(files[name].read_bytes())


def test_model_dump_layout_and_kernels(acl, tmp_path, model_path):
    dump_dir = run_models(
        acl,
        tmp_path,
        model_path,
        {
            "dump_list": [
                {"model_name": "resnet_tiny"},
                {"model_name": "mlp_head"},
                {"model_name": "attention_tiny"},
            ],
            "dump_mode": "all",
        },
        names=("resnet_tiny", "mlp_head", "attention_tiny"),
    )
    (session,) = dump_dir.iterdir()
    assert len(session.name) == 14 and session.name.isdigit()
    step_dirs = sorted(p.relative_to(session).as_posix() for p in session.glob("0/*/*/*"))
    assert step_dirs == ["0/attention_tiny/3/0", "0/mlp_head/2/0", "0/resnet_tiny/1/0"]
    files = dump_files(dump_dir)
    assert len(files) == 12 + 8 + 12
    for name in files:
        _op_type, op_name, task_id, stream_id, ts = name.split(".")
        assert "/" not in op_name and len(ts) == 16 and task_id.isdigit() and stream_id.isdigit()
    # Conv2D output in NC1HWC0 and the Relu/Add after it compute what they claim
    conv = by_op(files, "conv1")
    assert conv.op_name == "conv1" and conv.outputs[0].format == 3
    assert conv.outputs[0].shape == [1, 1, 16, 16, 16] and conv.outputs[0].original_shape == [
        1,
        8,
        16,
        16,
    ]
    relu = by_op(files, "relu1")
    np.testing.assert_array_equal(
        relu.outputs[0].logical(), np.maximum(relu.inputs[0].logical(), 0)
    )
    add = by_op(files, "layer1_add")
    assert add.op_name == "layer1/add"
    np.testing.assert_array_equal(
        add.outputs[0].logical(), add.inputs[0].logical() + add.inputs[1].logical()
    )
    trans = by_op(files, "trans_image")
    assert trans.inputs[0].format == 0 and trans.outputs[0].format == 3
    np.testing.assert_array_equal(trans.inputs[0].logical(), trans.outputs[0].logical())
    # MatMul operands and result in FRACTAL_NZ
    mm = by_op(files, "dense1_matmul")
    assert [t.format for t in mm.inputs + mm.outputs] == [29, 29, 29]
    expected = mm.inputs[0].logical().astype(np.float32) @ mm.inputs[1].logical().astype(np.float32)
    np.testing.assert_allclose(
        mm.outputs[0].logical().astype(np.float32), expected, rtol=2e-3, atol=2e-3
    )
    cast = by_op(files, "cast_fp32")
    assert cast.inputs[0].data_type == 2 and cast.outputs[0].data_type == 1
    softmaxes = [
        dumpreader.read_dump(p.read_bytes()) for n, p in files.items() if n.startswith("Softmax.")
    ]
    assert len(softmaxes) == 3
    for soft in softmaxes:
        sums = soft.outputs[0].logical().astype(np.float32).sum(axis=-1)
        np.testing.assert_allclose(sums, 1.0, atol=1e-2)


def test_dump_mode_layers_and_steps(acl, tmp_path, model_path):
    dump_dir = run_models(
        acl,
        tmp_path,
        model_path,
        {
            "dump_list": [{"model_name": "resnet_tiny", "layer": ["conv1", "layer1/add"]}],
            "dump_mode": "input",
            "dump_step": "1|3-4",
        },
        runs=5,
    )
    files = dump_files(dump_dir)
    steps = sorted({p.parent.name for p in files.values()})
    assert steps == ["1", "3", "4"]
    assert sorted({n.split(".")[1] for n in files}) == ["conv1", "layer1_add"]
    for path in files.values():
        dump = dumpreader.read_dump(path.read_bytes())
        assert dump.inputs and not dump.outputs


def test_dump_op_switch_dumps_outside_model_dirs(acl, tmp_path, model_path):
    dump_dir = run_models(
        acl, tmp_path, model_path, {"dump_list": [], "dump_op_switch": "on"}, names=("mlp_head",)
    )
    files = dump_files(dump_dir)
    assert len(files) == 8
    for path in files.values():
        assert path.parent.name == "0" and path.parent.parent.parent == dump_dir
        assert len(dumpreader.read_dump(path.read_bytes()).outputs) == 1  # default mode: output


@pytest.mark.parametrize(
    ("selected", "min_column", "columns"),
    [
        (
            [],
            "Min Value",
            [
                "Max Value",
                "Min Value",
                "Avg Value",
                "Count",
                "Nan Count",
                "Negative Inf Count",
                "Positive Inf Count",
            ],
        ),
        (["Max", "Min", "L2norm"], "Min", ["Count", "Max", "Min", "L2norm"]),
    ],
)
def test_dump_stats_csv(acl, tmp_path, model_path, selected, min_column, columns):
    section = {
        "dump_list": [{"model_name": "mlp_head", "layer": ["dense1/relu"]}],
        "dump_mode": "all",
        "dump_data": "stats",
    }
    if selected:
        section["dump_stats"] = selected
    dump_dir = run_models(acl, tmp_path, model_path, section, names=("mlp_head",))
    (path,) = dump_files(dump_dir).values()
    assert path.name.startswith("Relu.dense1_relu.") and path.suffix == ".csv"
    lines = path.read_text().splitlines()
    fixed = ["Input/Output", "Index", "Data Size", "Data Type", "Format", "Shape"]
    assert lines[0].split(",") == fixed + columns
    rows = list(csv.DictReader(lines))
    assert [(r["Input/Output"], r["Index"]) for r in rows] == [("Input", "0"), ("Output", "0")]
    out = rows[1]
    assert out["Data Type"] == "DT_FLOAT16" and out["Format"] == "FRACTAL_NZ"
    assert out["Shape"] == "8x1x16x16" and int(out["Data Size"]) == 8 * 16 * 16 * 2
    assert int(out["Count"]) == 8 * 16 * 16
    assert float(out[min_column]) >= 0.0  # after Relu
    assert float(rows[0][min_column]) < 0.0


def test_bfloat16_roundtrip_uses_ml_dtypes():
    logical = np.arange(12, dtype=np.float32).reshape(3, 4).astype(ml_dtypes.bfloat16)
    stored = layouts.to_device(logical, C.ACL_FORMAT_FRACTAL_NZ, C.ACL_BF16)
    assert stored.shape == (1, 1, 16, 16)
    np.testing.assert_array_equal(
        layouts.from_device(stored, C.ACL_FORMAT_FRACTAL_NZ, (3, 4)), logical
    )


@pytest.mark.parametrize("name", ["a b.c/d\\e", "plain"])
def test_file_name_character_replacement(name):
    file_name = dumpfile.dump_file_name("My Op", name, 1, 2, 1_700_000_000_000_000)
    assert file_name.count(".") == 4 and "/" not in file_name and "\\" not in file_name
    assert file_name.startswith("My_Op.")


def test_dump_api_init_set_finalize(acl, tmp_path, model_path):
    acl.init()
    assert acl.mdl.set_dump(os.fspath(tmp_path / "x.json")) == C.ACL_ERROR_DUMP_NOT_RUN
    assert acl.mdl.init_dump() == 0
    assert acl.mdl.init_dump() == C.ACL_ERROR_DUMP_ALREADY_RUN
    cfg = tmp_path / "dump.json"
    cfg.write_text(
        json.dumps(
            {
                "dump": {
                    "dump_path": os.fspath(tmp_path / "d"),
                    "dump_list": [{"model_name": "mlp_head", "layer": ["softmax"]}],
                }
            }
        )
    )
    assert acl.mdl.set_dump(os.fspath(cfg)) == 0
    acl.rt.set_device(0)
    model_id, _ = acl.mdl.load_from_file(model_path["mlp_head"])
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    for ds, size in (
        (ins, acl.mdl.get_input_size_by_index(desc, 0)),
        (outs, acl.mdl.get_output_size_by_index(desc, 0)),
    ):
        ptr, _ = acl.rt.malloc(size, 0)
        acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size))
    assert acl.mdl.execute(model_id, ins, outs) == 0
    assert [p.name.split(".")[0] for p in (tmp_path / "d").rglob("*") if p.is_file()] == ["Softmax"]
    assert acl.mdl.finalize_dump() == 0
    assert acl.mdl.finalize_dump() == C.ACL_ERROR_DUMP_NOT_RUN
    assert acl.mdl.execute(model_id, ins, outs) == 0
    assert len([p for p in (tmp_path / "d").rglob("*") if p.is_file()]) == 1


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_runtime_written_file_matches_hand_encoding(acl, tmp_path):
    """A file the runtime writes, rebuilt byte for byte by hand from the layout table."""
    description = {
        "name": "tiny",
        "inputs": [{"name": "x", "dtype": "float", "format": "ND", "shape": [2]}],
        "ops": [
            {
                "name": "my op/relu",
                "type": "Relu",
                "inputs": ["x"],
                "outputs": [{"name": "y", "dtype": "float", "format": "ND", "shape": [2]}],
            }
        ],
        "outputs": ["y"],
    }
    model_file = tmp_path / "tiny.json"
    model_file.write_text(json.dumps(description))
    dump_dir = run_models(
        acl,
        tmp_path,
        {"tiny": os.fspath(model_file)},
        {"dump_list": [{"model_name": "tiny"}], "dump_mode": "all"},
        names=("tiny",),
    )
    (path,) = dump_files(dump_dir).values()
    op_type, op_name, _task, _stream, ts = path.name.split(".")
    assert (op_type, op_name) == ("Relu", "my_op_relu")
    raw = path.read_bytes()
    parsed = dumpreader.read_dump(raw)
    x = np.frombuffer(parsed.inputs[0].data, np.float32)
    y = np.maximum(x, 0).astype(np.float32).tobytes()

    def tensor(size_field: int, address_field: int, address: int) -> bytes:
        return (
            _field(1, 1)
            + _field(2, 2)
            + _field(3, _field(1, _varint(2)))
            + _field(size_field, 8)
            + _field(address_field, address)
        )

    header = (
        _field(1, b"2.0")
        + _field(2, int(ts))
        + _field(3, tensor(6, 9, parsed.outputs[0].address))
        + _field(4, tensor(5, 8, parsed.inputs[0].address))
        + _field(6, b"my op/relu")
    )
    expected = len(header).to_bytes(8, "little") + header + x.tobytes() + y
    assert raw == expected
    assert parsed.inputs[0].address and parsed.outputs[0].address


def _run_faulting_resnet(acl, tmp_path, model_path, acl_json):
    from aclmon.sim import config as sim_config

    sim_config.configure(faults=[{"kind": "aicore_exception", "op": "layer1/conv2", "nth": 1}])
    args = []
    if acl_json is not None:
        config = tmp_path / "acl.json"
        config.write_text(json.dumps(acl_json))
        args = [os.fspath(config)]
    assert acl.init(*args) == 0
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    model_id, _ = acl.mdl.load_from_file(model_path["resnet_tiny"])
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    for ds, size in (
        (ins, acl.mdl.get_input_size_by_index(desc, 0)),
        (outs, acl.mdl.get_output_size_by_index(desc, 0)),
    ):
        ptr, _ = acl.rt.malloc(size, 0)
        acl.rt.memset(ptr, size, 0x3C, size)
        acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size))
    assert acl.mdl.execute_async(model_id, ins, outs, stream) == 0
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_AICORE_EXCEPTION


def test_exception_dump_of_the_failing_operator(acl, tmp_path, model_path, monkeypatch):
    monkeypatch.delenv("NPU_COLLECT_PATH", raising=False)
    monkeypatch.setenv("ASCEND_WORK_PATH", os.fspath(tmp_path / "work"))
    _run_faulting_resnet(acl, tmp_path, model_path, {"dump": {"dump_scene": "aic_err_norm_dump"}})
    (path,) = (tmp_path / "work" / "extra-info" / "data-dump" / "0").iterdir()
    op_type, op_name, task_id, ts = path.name.split(".")
    assert (op_type, op_name, task_id, len(ts)) == ("exception_info", "layer1_conv2", "3", 16)
    dump = dumpreader.read_dump(path.read_bytes())
    assert dump.op_name == "layer1/conv2"
    assert [t.arg_index for t in dump.inputs + dump.outputs] == [0, 1, 2]
    assert [t.input_type for t in dump.inputs] == [2, 2]  # DfxTensorType INPUT
    activation, weight = dump.inputs
    assert activation.format == 3 and activation.original_shape == [1, 8, 16, 16]
    assert np.all(activation.logical() >= 0)  # it is relu1's output
    assert weight.logical().shape == (8, 8, 3, 3) and np.abs(weight.logical()).max() > 0
    assert not any(dump.outputs[0].data)  # the failing kernel never wrote its output


def test_exception_dump_from_env_scene(acl, tmp_path, model_path, monkeypatch):
    monkeypatch.setenv("ASCEND_DUMP_SCENE", "lite_exception")
    monkeypatch.setenv("NPU_COLLECT_PATH", os.fspath(tmp_path / "collect"))
    _run_faulting_resnet(acl, tmp_path, model_path, None)
    files = list((tmp_path / "collect" / "extra-info" / "data-dump" / "0").iterdir())
    assert len(files) == 1 and files[0].name.startswith("exception_info.layer1_conv2.")


def test_stats_names_are_the_dump_protos_own_names():
    # The sim names proto dtypes and formats from the CANN names (the enums share
    # names, not numbers); the dump decoder has the proto's own tables.
    from aclmon.dump import proto_enums

    for acl_dtype, proto in dumpfile.ACL_TO_PROTO_DTYPE.items():
        assert dumpfile.proto_dtype_name(acl_dtype) == proto_enums.DTYPE_NAMES[proto]
    assert dumpfile.proto_dtype_name(12345) == "DT_UNDEFINED"
    for acl_format in C.FORMAT_NAMES:
        proto = dumpfile.proto_format(acl_format)
        expected = proto_enums.FORMAT_NAMES[proto].removeprefix("FORMAT_")
        assert dumpfile.proto_format_name(acl_format) == expected
