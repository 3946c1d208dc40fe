"""Cross-check: files written by the simulator (aclmon.sim.dumpfile, protobuf library,
its own layout code) read back through aclmon.dump give the logical tensors.

The golden tests elsewhere build fixtures independently of the simulator; this
one only checks that the demo's writer and our reader agree.
"""

from __future__ import annotations

import numpy as np
import pytest

from aclmon import acl_constants as C
from aclmon.dump import DumpIndex, convert_to_host, read_dump, summarize

dumpfile = pytest.importorskip("aclmon.sim.dumpfile")
layouts = pytest.importorskip("aclmon.sim.layouts")


@pytest.mark.parametrize(
    "acl_format,logical",
    [
        (C.ACL_FORMAT_NC1HWC0, (2, 20, 3, 2)),
        (C.ACL_FORMAT_FRACTAL_NZ, (20, 35)),
        (C.ACL_FORMAT_ND, (3, 4)),
    ],
)
@pytest.mark.parametrize("acl_dtype", [C.ACL_FLOAT, C.ACL_FLOAT16])
def test_sim_dumps_read_back_to_the_logical_tensor(tmp_path, acl_format, logical, acl_dtype):
    x = (
        (np.arange(int(np.prod(logical))) % 251)
        .astype(layouts.ACL_TO_NUMPY[acl_dtype])
        .reshape(logical)
    )
    device = layouts.to_device(x, acl_format, acl_dtype)
    tensor = dumpfile.DumpTensor(acl_dtype, acl_format, device.shape, logical, device.tobytes())
    name = dumpfile.dump_file_name("MatMul", "net/layer.1", 3, 4, 1700000000000000)
    (tmp_path / name).write_bytes(
        dumpfile.encode_dump("net/layer.1", 1700000000000000, [tensor], [tensor])
    )
    dump = read_dump(tmp_path / name)
    assert dump.warnings == [] and dump.op_name == "net/layer.1"
    assert (dump.name.task_id, dump.name.stream_id, dump.name.op_name) == (3, 4, "net_layer_1")
    for t in (dump.inputs[0], dump.outputs[0]):
        array = t.array
        if acl_format != C.ACL_FORMAT_ND:
            array = convert_to_host(array, t.format, t.original_shape)
        np.testing.assert_array_equal(array, x)


def test_sim_overflow_records_decode_and_link(tmp_path):
    info = dumpfile.OverflowInfo(
        model_id=0, stream_id=4, task_id=3, pc_start=0x1000, para_base=0x2000,
        block_idx=1, core_id=2, status=0x20, cube=True,
    )  # fmt: skip
    op = dumpfile.DumpTensor(C.ACL_FLOAT, C.ACL_FORMAT_ND, (1,), (1,), b"\x00\x00\x80\x3f")
    (tmp_path / dumpfile.dump_file_name("Add", "add", 3, 4, 1700000000000000)).write_bytes(
        dumpfile.encode_dump("add", 1700000000000000, [], [op])
    )
    for i, record in enumerate(
        (dumpfile.old_overflow_record(info), dumpfile.new_overflow_record(info))
    ):
        path = tmp_path / f"Opdebug.Node_OpDebug.{9 + i}.4.170000000000000{i}"
        path.write_bytes(dumpfile.encode_overflow_file(record, 1700000000000000 + i))
        explained = summarize(path)["records"][0]["explained"]
        assert any("floating-point computation overflow" in line for line in explained)
    index = DumpIndex(tmp_path)
    assert len(index.links) == 2
    assert all(
        link.op_dump is not None and link.op_dump.name.op_name == "add" for link in index.links
    )
