"""``aclmon decode`` and ``aclmon convert`` end to end (msaccucmp file names and content)."""

from __future__ import annotations

import json
import struct
import uuid

import numpy as np
import pytest
from dumpfixtures import T, dump_bytes, header_message, opdebug_new, opdebug_old, run_cli, write

from aclmon import cli
from aclmon.dump import proto_enums as pe
from aclmon.dump.commands import configure_convert, configure_decode


def main(argv):
    """cli.main for our two subcommands only, so other packages' work in progress cannot break these tests."""
    return run_cli(argv, {"decode": configure_decode, "convert": configure_convert})


def test_commands_are_registered_with_the_dispatcher():
    registered = {name: module for name, module, _help in cli.COMMANDS}
    assert registered["decode"] == registered["convert"] == "aclmon.dump.commands"


NAME = "Conv2D.conv1.7.2.1700000000000000"


def f32(*values):
    return struct.pack(f"<{len(values)}f", *values)


def nc1hwc0(x):
    n, c, h, w = x.shape
    dev = np.zeros((n, 1, h, w, 16), x.dtype)
    dev[:, 0, :, :, :c] = x.transpose(0, 2, 3, 1)
    return dev


@pytest.fixture
def dump_dir(tmp_path):
    src = tmp_path / "dump"
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    dev = nc1hwc0(x)
    write(
        src,
        NAME,
        dump_bytes(
            inputs=[T(f32(1, 2), shape=[2])],
            outputs=[
                T(dev.tobytes(), fmt=pe.FORMAT_NC1HWC0, shape=dev.shape, original_shape=x.shape)
            ],
            buffers=[b"\x01\x02"],
            spaces=[b"printf\x00"],
        ),
    )
    write(src, "Opdebug.Node_OpDebug.3.2.1700000000000001",
          dump_bytes(outputs=[T(opdebug_new(1, [0, 2, 7, 0, 0, 0, 0x10, 0, 0, 0, 0x20]), dtype=4)]))  # fmt: skip
    return src, x


def test_decode_text(dump_dir, capsys):
    src, _ = dump_dir
    assert (
        main(["decode", str(src / NAME), str(src / "Opdebug.Node_OpDebug.3.2.1700000000000001")])
        == 0
    )
    out = capsys.readouterr().out
    assert "Conv2D.conv1.7.2.1700000000000000  (op-dump, 2.0" in out
    assert "input 0: DT_FLOAT ND shape [2] (8 B)" in out
    assert "min 1  max 2  mean 1.5" in out
    assert "output 0: DT_FLOAT NC1HWC0 shape [1, 1, 2, 2, 16]" in out
    assert "AIV status: floating-point computation overflow (0x020)" in out
    assert '"pc_start": "0x10"' in out


def test_decode_json_and_directory(dump_dir, capsys):
    src, _ = dump_dir
    assert main(["decode", "--json", str(src)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["kind"] for r in lines] == ["op-dump", "overflow"]
    tensors = lines[0]["tensors"]
    assert tensors[0]["stats"]["max"] == 2.0 and tensors[2]["role"] == "buffer"
    assert lines[1]["records"][0]["record"]["acc_list"]["acc_type"] == "AIV"
    # the record points at task 7 / stream 2: the Conv2D dump in the same directory
    assert lines[1]["records"][0]["op_dump"] == str(src / NAME)


def test_decode_bad_file_exits_1(tmp_path, capsys):
    bad = write(tmp_path, "Add.add.1.2.1700000000000000", struct.pack("<Q", 99) + b"\x0a")
    assert main(["decode", str(bad), str(tmp_path / "missing")]) == 1
    captured = capsys.readouterr()
    # the one-line error goes to stderr, in text mode too
    assert (
        "aclmon decode: Add.add.1.2.1700000000000000: at byte 0: header length 99" in captured.err
    )
    assert "error" not in captured.out
    assert "missing: no such file or directory" in captured.err


def test_decode_exits_1_when_a_tensor_cannot_be_read(tmp_path, capsys):
    """The header reads, but an output's data is short: the rest of the file is shown,
    the tensor's error is named on stderr, and the status says something failed."""
    values = np.arange(4, dtype=np.float32)
    short = write(tmp_path, "Add.add1.3.1.1700000000000000",
                  dump_bytes(outputs=[T(values.tobytes(), shape=[1000])]))  # fmt: skip
    assert main(["decode", str(short)]) == 1
    captured = capsys.readouterr()
    assert "output 0: DT_FLOAT ND shape [1000]" in captured.out
    assert "4000 bytes, only 16 present" in captured.err


def test_convert_npy_names_and_content(dump_dir, tmp_path, capsys):
    src, _ = dump_dir
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out), "-j", "1"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([
        f"{NAME}.input.0.npy",
        f"{NAME}.output.0.npy",
        f"{NAME}.l1buffer.0.bin",
        f"{NAME}.space.0.bin",
        "Opdebug.Node_OpDebug.3.2.1700000000000001.output.0.json",
    ])  # fmt: skip
    assert np.load(out / f"{NAME}.input.0.npy").tolist() == [1.0, 2.0]
    assert np.load(out / f"{NAME}.output.0.npy").shape == (
        1,
        1,
        2,
        2,
        16,
    )  # device layout without -f
    assert (out / f"{NAME}.space.0.bin").read_bytes() == b"printf\x00"
    text = (out / "Opdebug.Node_OpDebug.3.2.1700000000000001.output.0.json").read_text()
    assert text.startswith('{\n    "magic": "0x5a5a5a5a",\n    "version": 0,\n    "acc_list": {')
    assert json.loads(text)["acc_list"]["data"]["status"] == 0x20


def test_convert_with_format_crops_to_original_shape(dump_dir, tmp_path):
    src, x = dump_dir
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src / NAME), "-out", str(out), "-f", "NCHW", "-j", "1"]) == 0
    np.testing.assert_array_equal(np.load(out / f"{NAME}.output.0.1x3x2x2.npy"), x)
    # like msaccucmp: ND has no converter to NCHW, so that tensor is reported and not written,
    # and the -f path writes no buffers or workspaces
    assert sorted(p.name for p in out.iterdir()) == [f"{NAME}.output.0.1x3x2x2.npy"]
    # -s overrides original_shape
    out2 = tmp_path / "out2"
    assert (
        main(["convert", "-d", str(src / NAME), "-out", str(out2), "-f", "NCHW", "-s", "1,2,2,2"])
        == 0
    )
    np.testing.assert_array_equal(np.load(out2 / f"{NAME}.output.0.1x2x2x2.npy"), x[:, :2])


def test_convert_with_format_same_format_and_bin(tmp_path, capsys):
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    data = dump_bytes(
        inputs=[T(x.tobytes(), fmt=pe.FORMAT_NCHW, shape=x.shape)],
        outputs=[
            T(
                nc1hwc0(x).tobytes(),
                fmt=pe.FORMAT_NC1HWC0,
                shape=(1, 1, 2, 3, 16),
                original_shape=x.shape,
            )
        ],
    )
    src = write(tmp_path / "d", NAME, data)
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out), "-f", "NCHW", "-t", "bin"]) == 0
    assert (out / f"{NAME}.input.0.1_1_2_3.float32.NCHW.bin").read_bytes() == x.tobytes()
    assert (out / f"{NAME}.output.0.1_1_2_3.float32.NCHW.bin").read_bytes() == x.tobytes()
    assert "warning" not in capsys.readouterr().err


def test_convert_bin_names(dump_dir, tmp_path):
    src, _ = dump_dir
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src / NAME), "-out", str(out), "-t", "bin"]) == 0
    assert (out / f"{NAME}.input.0.2.float32.ND.bin").read_bytes() == f32(1, 2)
    assert (out / f"{NAME}.output.0.1_1_2_2_16.float32.NC1HWC0.bin").stat().st_size == 64 * 4


def test_convert_bf16_is_written_as_float32_like_msaccucmp(tmp_path):
    bits = (np.array([1.0, -2.5], "<f4").view("<u4") >> 16).astype("<u2").tobytes()
    src = write(
        tmp_path / "d",
        "Cast.c.1.2.1700000000000000",
        dump_bytes(outputs=[T(bits, dtype=pe.DT_BF16, shape=[2])]),
    )
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out)]) == 0
    array = np.load(out / "Cast.c.1.2.1700000000000000.output.0.npy")
    assert array.dtype == np.float32 and array.tolist() == [1.0, -2.5]


def test_convert_long_names_use_uuid3_and_mapping(tmp_path):
    name = "Add." + "x" * 230 + ".1.2.1700000000000000"
    src = write(tmp_path / "d", name, dump_bytes(outputs=[T(f32(3), shape=[1])]))
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out)]) == 0
    long_name = f"{name}.output.0.npy"
    short = uuid.uuid3(uuid.NAMESPACE_DNS, long_name).hex + ".npy"
    assert np.load(out / short).tolist() == [3.0]
    assert (out / "mapping.csv").read_text() == f"{short},{long_name}\n"


def test_convert_parallel_and_errors_reported(tmp_path, capsys):
    src = tmp_path / "d"
    for i in range(6):
        write(src, f"Add.a{i}.{i}.2.1700000000000000", dump_bytes(outputs=[T(f32(i), shape=[1])]))
    write(
        src,
        "Opdebug.Node_OpDebug.1.2.1700000000000000",
        dump_bytes(outputs=[T(b"\x00" * 8, dtype=4)]),
    )
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out), "-j", "2"]) == 1
    captured = capsys.readouterr()
    assert "converted 6 of 7 files" in captured.out and "2048" in captured.err
    assert np.load(out / "Add.a5.5.2.1700000000000000.output.0.npy").tolist() == [5.0]


def test_convert_old_opdebug_json(tmp_path):
    src = write(tmp_path / "d", "Opdebug.Node_OpDebug.1.2.1700000000000000",
                dump_bytes(outputs=[T(opdebug_old({1040: 0x20}), dtype=4)]))  # fmt: skip
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out)]) == 0
    record = json.loads(
        (out / "Opdebug.Node_OpDebug.1.2.1700000000000000.output.0.json").read_text()
    )
    assert (
        list(record) == ["DHA Atomic Add", "L2 Atomic Add", "AI Core"]
        and record["AI Core"]["status"] == 32
    )


@pytest.mark.parametrize(
    "argv,message",
    [
        (["-s", "1,2"], "-s is allowed only together with -f"),
        (["-f", "NCHW", "-s", "1x2"], "expected comma-separated"),
        (["-f", "BOGUS"], "unknown format"),
        (["-o", "0"], "-o is allowed only together with -f"),
        (["-f", "NCHW", "-o", "0", "-i", "0"], "not both"),
        (["-f", "NCHW", "-s", "1,0"], "greater than 0"),
    ],
)
def test_convert_argument_errors(dump_dir, tmp_path, capsys, argv, message):
    src, _ = dump_dir
    assert main(["convert", "-d", str(src), "-out", str(tmp_path / "o"), *argv]) == 1
    assert message in capsys.readouterr().err


def test_convert_ffts_plus_auto_mode_uses_the_thread_slice_shape(tmp_path):
    slices = [
        [[{"lower": 0, "higher": 2}, {"lower": 0, "higher": 3}]],
        [[{"lower": 2, "higher": 3}, {"lower": 0, "higher": 3}]],
    ]
    attr = json.dumps({"threadMode": 1, "slice_instance_num": 2, "input_tensor_slice": slices,
                       "output_tensor_slice": slices})  # fmt: skip
    msg = header_message(inputs=[T(f32(1, 2, 3), shape=[3])], outputs=[T(f32(4, 5, 6), shape=[3])])
    msg.attr.add(name="_ffts_info", value=attr)
    body = msg.SerializeToString()
    name = "MatMul.mm.5.6.1700000000000000.4.3.1.0"  # FFTS+ context 3, thread 1
    src = write(
        tmp_path / "d", name, struct.pack("<Q", len(body)) + body + f32(1, 2, 3) + f32(4, 5, 6)
    )
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out)]) == 0
    assert np.load(out / f"{name}.input.0.npy").tolist() == [[1.0, 2.0, 3.0]]
    assert np.load(out / f"{name}.output.0.npy").shape == (1, 3)


def test_convert_msnpy_names(dump_dir, tmp_path):
    src, x = dump_dir
    data = (src / NAME).read_bytes()
    # header op_name "op" (fixture default) replaces field 2 of a 5-field name
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src / NAME), "-out", str(out), "-t", "msnpy"]) == 0
    names = sorted(p.name for p in out.iterdir() if p.suffix == ".npy")
    assert names == [
        "Conv2D.op.7.2.1700000000000000.input.0.ND.npy",
        "Conv2D.op.7.2.1700000000000000.output.0.NC1HWC0.npy",
    ]
    out2 = tmp_path / "out2"
    assert (
        main(["convert", "-d", str(src / NAME), "-out", str(out2), "-t", "msnpy", "-f", "NCHW"])
        == 0
    )
    # msnpy keeps a tensor it cannot convert, under its own format
    assert sorted(p.name for p in out2.iterdir()) == [
        "Conv2D.op.7.2.1700000000000000.input.0.ND.npy",
        "Conv2D.op.7.2.1700000000000000.output.0.NCHW.npy",
    ]
    np.testing.assert_array_equal(
        np.load(out2 / "Conv2D.op.7.2.1700000000000000.output.0.NCHW.npy"), x
    )
    assert data == (src / NAME).read_bytes()


def test_convert_single_tensor_selection(dump_dir, tmp_path, capsys):
    src, x = dump_dir
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src / NAME), "-out", str(out), "-f", "NHWC", "-o", "0",
                 "-s", "1,2,2,3"]) == 0  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == [f"{NAME}.output.0.1x2x2x3.npy"]
    np.testing.assert_array_equal(
        np.load(out / f"{NAME}.output.0.1x2x2x3.npy"), x.transpose(0, 2, 3, 1)
    )
    assert main(["convert", "-d", str(src / NAME), "-out", str(out), "-f", "NCHW", "-o", "3"]) == 1
    assert "output index 3 is out of range [0, 1)" in capsys.readouterr().err


def test_progress_bar_only_on_a_terminal():
    import io

    from aclmon.dump.commands import _Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    bar = _Progress(4, tty)
    for _ in range(4):
        bar.step()
    bar.close()
    assert tty.getvalue().endswith("] 4/4 files\n") and "\r[" in tty.getvalue()
    plain = io.StringIO()
    quiet = _Progress(4, plain)
    quiet.step()
    quiet.close()
    assert plain.getvalue() == ""


def test_convert_tensor_whose_data_does_not_fit_its_format_is_a_warning(tmp_path, capsys):
    # found by fuzzing: an NC1HWC0 tag on 1-D data used to fail the whole file
    src = write(tmp_path / "d", NAME,
                dump_bytes(outputs=[T(f32(1, 2), fmt=pe.FORMAT_NC1HWC0, shape=[2], original_shape=[1, 2, 1, 1])]))  # fmt: skip
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out), "-f", "NCHW"]) == 0
    assert "output 0: not written: NC1HWC0 data must be 5-D" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_decode_stats_csv_shows_every_row(tmp_path, capsys):
    header = (
        "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count\n"
    )
    rows = "".join(f"Output,{i},4,DT_FLOAT,ND,1,{i},{i},{i},1\n" for i in range(100))
    path = write(tmp_path, "Add.add.1.2.1700000000000000.csv", (header + rows).encode())
    assert main(["decode", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "stats" and len(report["rows"]) == 100 and report["path"] == str(path)


def test_decode_of_an_overflow_file_alone_links_the_operator_dump_beside_it(dump_dir, capsys):
    src, _ = dump_dir
    overflow = src / "Opdebug.Node_OpDebug.3.2.1700000000000001"
    assert main(["decode", "--json", str(overflow)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["records"][0]["op_dump"] == str(src / NAME)
    assert main(["decode", str(overflow)]) == 0
    assert f"operator dump: {src / NAME}" in capsys.readouterr().out


def test_decode_of_an_overflow_file_names_the_operator_that_overflowed(dump_dir, capsys):
    """The Opdebug file's own name ("Opdebug.Node_OpDebug.3.2...": the debug task) is
    not the operator: the record's ids (task 7, stream 2) and the dump beside it are."""
    src, _ = dump_dir
    overflow = src / "Opdebug.Node_OpDebug.3.2.1700000000000001"
    assert main(["decode", "--json", str(overflow)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["op_type"], report["op_name"]) == ("Conv2D", "op")  # the header's name
    assert (report["task_id"], report["stream_id"]) == (7, 2)
    assert report["op_dump"] == str(src / NAME)
    assert main(["decode", str(overflow)]) == 0
    out = capsys.readouterr().out
    assert "overflowed:  op type Conv2D  op name op  task id 7  stream id 2" in out
    assert "Node_OpDebug" not in out.split("\n", 1)[1]  # only the file's own name says it

    (src / NAME).unlink()  # no dump of the operator: its ids, and the file's name nowhere
    assert main(["decode", "--json", str(overflow)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "op_type" not in report and "op_name" not in report
    assert (report["task_id"], report["stream_id"]) == (7, 2)
    assert main(["decode", str(overflow)]) == 0
    assert "(no operator dump with these ids beside the file)" in capsys.readouterr().out
