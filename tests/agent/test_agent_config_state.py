"""acl.json reading (hostile input), dump file naming, and the agent's runtime state."""

from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.agent.dumps import classify_name
from aclmon.agent.state import RuntimeState
from aclmon.dump.acljson import MAX_ACL_JSON_BYTES, read_acl_json
from aclmon.events import (
    ContextCreated,
    DeviceSet,
    ModelLoaded,
    StreamCreated,
    optypes,
)
from aclmon.events.optypes import sanitize_op_name


def test_acl_json_dump_and_profiler(tmp_path):
    path = tmp_path / "acl.json"
    path.write_text(
        json.dumps(
            {
                "dump": {"dump_path": "dumps", "dump_debug": "on"},
                "profiler": {"switch": "on", "output": "/tmp/prof"},
            }
        )
    )
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        config, warning = read_acl_json(str(path))
    finally:
        os.chdir(cwd)
    assert warning == ""
    assert config.dump_path == str(tmp_path / "dumps")
    assert config.dump_debug
    assert config.profiler_on
    assert config.profiler_output == "/tmp/prof"


def test_acl_json_profiler_switches_become_flags(tmp_path):
    from aclmon.acl_constants import (
        ACL_AICORE_MEMORY_BANDWIDTH,
        ACL_AICORE_PIPE_UTILIZATION,
        ACL_PROF_ACL_API,
        ACL_PROF_AICORE_METRICS,
        ACL_PROF_MSPROFTX,
        ACL_PROF_TASK_TIME_L0,
    )

    path = tmp_path / "acl.json"
    section = {"switch": "on", "ascendcl": "on", "msproftx": "on", "aicpu": "off"}
    path.write_text(json.dumps({"profiler": dict(section, task_time="l0", aic_metrics="Memory")}))
    config, _ = read_acl_json(str(path))
    assert config.profiler_flags == (
        ACL_PROF_ACL_API | ACL_PROF_MSPROFTX | ACL_PROF_TASK_TIME_L0 | ACL_PROF_AICORE_METRICS
    )
    assert config.profiler_metrics == ACL_AICORE_MEMORY_BANDWIDTH
    path.write_text(json.dumps({"profiler": {"switch": "on", "aic_metrics": "Bogus"}}))
    config, _ = read_acl_json(str(path))
    assert config.profiler_flags == 0 and config.profiler_metrics == ACL_AICORE_PIPE_UTILIZATION


def test_acl_json_profiler_off_and_empty(tmp_path):
    path = tmp_path / "acl.json"
    path.write_text('{"profiler": {"switch": "off"}}')
    config, warning = read_acl_json(str(path))
    assert not config.profiler_on and config.dump_path == "" and warning == ""
    path.write_text("")
    config, warning = read_acl_json(str(path))
    assert warning == "" and not config.profiler_on


def test_acl_json_problems_give_one_warning(tmp_path):
    missing, warning = read_acl_json(str(tmp_path / "nope.json"))
    assert "cannot read" in warning and missing.dump_path == ""
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "not valid JSON" in read_acl_json(str(bad))[1]
    bad.write_text("[1, 2]")
    assert "not a JSON object" in read_acl_json(str(bad))[1]
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_ACL_JSON_BYTES + 1))
    assert "larger than" in read_acl_json(str(big))[1]
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert read_acl_json(str(deep))[1]


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=512))
def test_acl_json_never_raises_on_garbage(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("acljson") / "acl.json"
    path.write_bytes(data)
    config, warning = read_acl_json(str(path))
    assert isinstance(warning, str)
    assert isinstance(config.dump_path, str)


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(
                st.sampled_from(["dump", "profiler", "dump_path", "switch", "output", "x"]),
                children,
                max_size=3,
            )
        ),
        max_leaves=12,
    )
)
def test_acl_json_any_json_shape(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("acljson") / "acl.json"
    path.write_text(json.dumps(value))
    config, warning = read_acl_json(str(path))
    assert isinstance(warning, str)
    assert isinstance(config.profiler_on, bool)
    assert isinstance(config.dump_path, str)


def test_dump_names():
    assert classify_name("Opdebug.Node_OpDebug.12.3.1700000000000") == "overflow"
    assert classify_name("OpDebug.Node_Opdebug.12.3.1700000000000") == "overflow"
    assert classify_name("Conv2D.conv1.5.2.1700000000000.csv") == "stats"
    assert classify_name("Conv2D.conv1.5.2.1700000000000") == "op-dump"
    from_dump_name = optypes.from_dump_name
    assert from_dump_name("Conv2D.layer1_conv1.5.2.1700000000000") == ("Conv2D", "layer1_conv1")
    assert from_dump_name("Add.add_1.7.1700000000000") == ("Add", "add_1")
    assert from_dump_name("Opdebug.Node_OpDebug.12.3.1700000000000") is None
    assert from_dump_name("mapping.csv") is None
    # exception dumps: named after the operator (older GE) yes; exception_info or a kernel, no
    assert from_dump_name("MatMul.dense2_mm.4.21.1700000000000", exception_dump=True) == (
        "MatMul", "dense2_mm",
    )  # fmt: skip
    assert from_dump_name("exception_info.dense2_mm.4.1700000000000", exception_dump=True) is None
    assert (
        from_dump_name("te_matmul_1a2b.dense2_mm.4.21.1700000000000", exception_dump=True) is None
    )


def test_op_types_from_the_cann_logs_aic_info_line():
    text = "[AIC_INFO] node_name:dense2/matmul, node_type:MatMul, stream_id:21, task_id:4"
    assert optypes.from_log_text(text) == ("dense2/matmul", "MatMul")
    assert optypes.from_log_text("Aicore kernel execute failed, device_id=1") is None


def test_op_type_learning_is_reliable_only_when_unique():
    state = RuntimeState()
    state.learn_op_type("layer1/conv.1", "Conv2D")
    assert sanitize_op_name("layer1/conv.1") == "layer1_conv_1"
    assert state.op_type_of("layer1/conv.1") == "Conv2D"
    assert state.op_type_of("layer1_conv_1") == "Conv2D"
    state.learn_op_type("layer1_conv_1", "MatMul")
    assert state.op_type_of("layer1/conv.1") == ""  # ambiguous: say nothing
    assert state.op_type_of("other") == ""
    table: dict[str, str] = {}
    for i in range(10):
        optypes.learn(table, f"op{i}", "Add", limit=5)
    assert len(table) == 5


def test_snapshot_resends_live_state_with_seq_zero():
    state = RuntimeState()
    state.device_set(DeviceSet(1, 10, 0, 0))
    state.device_set(DeviceSet(2, 11, 0, 0))
    state.context_created(ContextCreated(3, 12, 0, 0xC0, True))
    state.stream_created(StreamCreated(4, 13, 0, 0xC0, 0, 1, 0, 0))
    state.stream_created(StreamCreated(5, 14, 0, 0xC0, 0x51, 2, 0, 0))
    state.models[1] = ModelLoaded(6, 15, 1, 0, "m", 3)
    snapshot = state.snapshot()
    assert all(e.seq == 0 for e in snapshot)
    assert [type(e).__name__ for e in snapshot] == [
        "DeviceSet",
        "ContextCreated",
        "StreamCreated",
        "StreamCreated",
        "ModelLoaded",
    ]
    assert state.context_for_device(0) == 0xC0
    assert state.stream_id_of(0x51) == 2
    # set_device is refcounted: the first reset keeps the device
    assert not state.device_reset(0, force=False)
    assert state.devices_in_use() == [0]
    assert state.device_reset(0, force=False)
    assert sorted(map(str, state.context_destroyed(0xC0))) == sorted(
        map(str, [("default", 0xC0), 0x51])
    )
    assert state.context_for_device(0) == 0
    assert [type(e).__name__ for e in state.snapshot()] == ["ModelLoaded"]
