"""acl.json, model descriptions, fault rules and subscription records: hostile input."""

from __future__ import annotations

import contextlib
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon import acl_constants as C
from aclmon.sim import acljson, faults, model_description, profiling


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("{not json", C.ACL_ERROR_PARSE_FILE),
        ("[1, 2]", C.ACL_ERROR_PARSE_FILE),
        (
            '{"dump": {"dump_mode": "everything", "dump_path": "/tmp/x"}}',
            C.ACL_ERROR_INVALID_DUMP_CONFIG,
        ),
        ('{"dump": {"dump_list": [{"model_name": "m"}]}}', C.ACL_ERROR_INVALID_DUMP_CONFIG),
        ('{"dump": {"dump_path": "/x", "dump_debug": "yes"}}', C.ACL_ERROR_INVALID_DUMP_CONFIG),
        ('{"dump": {"dump_path": "/x", "dump_step": "5-1"}}', C.ACL_ERROR_INVALID_DUMP_CONFIG),
        (
            '{"profiler": {"switch": "on", "aic_metrics": "Bogus"}}',
            C.ACL_ERROR_INVALID_PROFILING_CONFIG,
        ),
        (
            '{"profiler": {"switch": "on", "storage_limit": "10MB"}}',
            C.ACL_ERROR_INVALID_PROFILING_CONFIG,
        ),
        (
            '{"profiler": {"switch": "on", "sys_io_sampling_freq": 500}}',
            C.ACL_ERROR_INVALID_PROFILING_CONFIG,
        ),
    ],
)
def test_invalid_acl_json_codes(acl, tmp_path, content, code):
    path = tmp_path / "acl.json"
    path.write_text(content)
    assert acl.init(os.fspath(path)) == code
    assert acl.get_recent_err_msg()
    assert acl.init() == 0  # the failed init left no session behind


def test_missing_acl_json(acl, tmp_path):
    assert acl.init(os.fspath(tmp_path / "nope.json")) == C.ACL_ERROR_INVALID_FILE


def test_empty_acl_json_is_fine(acl, tmp_path):
    path = tmp_path / "acl.json"
    path.write_text("{}")
    assert acl.init(os.fspath(path)) == 0


def test_valid_dump_section():
    parsed = acljson.parse_dump(
        {
            "dump_path": "/d",
            "dump_list": [{"model_name": "m", "layer": ["a"]}],
            "dump_mode": "all",
            "dump_step": "0|5|10-20",
        }
    )
    assert parsed is not None and parsed.mode == "all"
    assert (
        parsed.wants_op("m", "a")
        and not parsed.wants_op("m", "b")
        and not parsed.wants_op("x", "a")
    )
    assert [parsed.step_selected(s) for s in (0, 1, 5, 15, 21)] == [True, False, True, True, False]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 600)
    | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=20,
)
dump_keys = st.sampled_from(sorted(acljson.DUMP_KEYS))
dump_like = st.dictionaries(dump_keys, json_values, max_size=6)


@settings(deadline=None, max_examples=150)
@given(st.binary(max_size=200) | st.builds(lambda d: json.dumps({"dump": d}).encode(), dump_like))
def test_acl_json_parser_never_crashes(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("j") / "acl.json"
    path.write_bytes(raw)
    try:
        acljson.parse_acl_json(os.fspath(path))
    except acljson.AclJsonError as exc:
        assert exc.code in (
            C.ACL_ERROR_PARSE_FILE,
            C.ACL_ERROR_INVALID_DUMP_CONFIG,
            C.ACL_ERROR_INVALID_PROFILING_CONFIG,
        )


op_like = st.fixed_dictionaries(
    {
        "name": st.text(max_size=6),
        "type": st.sampled_from(["Add", "Relu", "MatMul", "Bogus"]),
        "inputs": st.lists(st.sampled_from(["x", "w", "y"]), max_size=3),
        "outputs": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(["y", "z"]),
                    "dtype": st.sampled_from(["float16", "int4", 3]),
                    "format": st.sampled_from(["ND", "NC1HWC0", "X"]),
                    "shape": json_values,
                }
            ),
            max_size=2,
        ),
    }
)
model_like = st.fixed_dictionaries(
    {
        "name": st.text(max_size=5),
        "inputs": st.lists(json_values, max_size=2),
        "ops": st.lists(op_like, max_size=3),
        "outputs": st.lists(st.sampled_from(["y", "z", 1]), max_size=2),
    }
)


@settings(deadline=None, max_examples=150)
@given(
    st.binary(max_size=100) | st.builds(lambda d: json.dumps(d).encode(), model_like | json_values)
)
def test_model_description_parser_never_crashes(raw):
    with contextlib.suppress(model_description.ModelError):
        model_description.load_description_bytes(raw, "fuzz")


@settings(deadline=None, max_examples=100)
@given(json_values)
def test_fault_rule_parser_never_crashes(data):
    with contextlib.suppress(faults.FaultRuleError):
        faults.parse_fault_rules(data, "fuzz")


@settings(deadline=None, max_examples=100)
@given(st.binary(max_size=3 * profiling.OP_RECORD_SIZE + 5))
def test_subscription_record_decoder(raw):
    result = profiling.decode_records(raw)
    if raw and len(raw) % profiling.OP_RECORD_SIZE == 0:
        assert isinstance(result, list) and len(result) == len(raw) // profiling.OP_RECORD_SIZE
    else:
        assert result == C.ACL_ERROR_INVALID_PARAM


config_like = st.dictionaries(
    st.sampled_from(
        ["devices", "soc_name", "hbm_gib", "time_scale", "cost_scale", "seed", "faults", "x"]
    ),
    json_values,
    max_size=4,
)


@settings(deadline=None, max_examples=100)
@given(config_like | json_values)
def test_sim_config_parser_never_crashes(data):
    import aclmon.sim.config as sim_config

    env = os.environ.get(sim_config.CONFIG_ENV)
    os.environ[sim_config.CONFIG_ENV] = json.dumps(data) if isinstance(data, dict) else "[1]"
    try:
        config = sim_config.load_config()
        assert 1 <= config.device_count <= 64
    except (sim_config.SimConfigError, faults.FaultRuleError):
        pass
    finally:
        if env is None:
            del os.environ[sim_config.CONFIG_ENV]
        else:
            os.environ[sim_config.CONFIG_ENV] = env
