"""The perturb fault: one operator's outputs changed the same way every run, the error
carried downstream (a golden pair for ``aclmon compare``)."""

from __future__ import annotations

import numpy as np
import pytest

from aclmon import acl_constants as C
from aclmon.sim import config as sim_config
from aclmon.sim.faults import FaultRuleError, parse_fault_rule

from . import dumpreader
from .test_dumps import dump_files, run_models

_DUMP_ALL = {"dump_list": [{"model_name": "resnet_tiny"}], "dump_mode": "all"}


def _outputs(dump_dir):
    files = dump_files(dump_dir)
    out = {}
    for path in files.values():
        parsed = dumpreader.read_dump(path.read_bytes())
        out[parsed.op_name] = (parsed.inputs, parsed.outputs)
    return out


def _run(acl, tmp_path, model_path, faults):
    sim_config.configure(faults=faults)
    tmp_path.mkdir()
    dumps = run_models(acl, tmp_path, model_path, _DUMP_ALL)
    acl.finalize()
    return _outputs(dumps)


def test_perturbed_operator_changes_and_the_error_propagates(acl, tmp_path, model_path):
    clean = _run(acl, tmp_path / "clean", model_path, [])
    rule = [{"kind": "perturb", "op": "layer1/conv2", "error": 0.1}]
    first = _run(acl, tmp_path / "one", model_path, rule)
    again = _run(acl, tmp_path / "two", model_path, rule)
    before = ["trans_image", "conv1", "relu1"]
    for op in before:  # upstream of the perturbed operator: identical
        np.testing.assert_array_equal(first[op][1][0].logical(), clean[op][1][0].logical())
    # the perturbed operator: its inputs as clean, its output off by about 10 %
    np.testing.assert_array_equal(
        first["layer1/conv2"][0][0].logical(), clean["layer1/conv2"][0][0].logical()
    )
    mine = first["layer1/conv2"][1][0].logical().astype(np.float64)
    gold = clean["layer1/conv2"][1][0].logical().astype(np.float64)
    relative = np.abs(mine - gold)[gold != 0] / np.abs(gold[gold != 0])
    assert 0.05 < float(np.median(relative)) < 0.2
    # downstream operators read the changed values
    assert not np.array_equal(first["softmax"][1][0].logical(), clean["softmax"][1][0].logical())
    np.testing.assert_array_equal(
        first["layer1/add"][0][0].logical(), first["layer1/conv2"][1][0].logical()
    )
    # the same seed gives the same perturbation: two perturbed runs agree
    for op, (_, outputs) in first.items():
        np.testing.assert_array_equal(outputs[0].logical(), again[op][1][0].logical())


@pytest.mark.parametrize("error", [-0.1, "x", float("inf")])
def test_perturb_rejects_a_bad_error(error):
    with pytest.raises(FaultRuleError):
        parse_fault_rule({"kind": "perturb", "op": "x", "error": error}, "test")


def test_perturb_is_a_known_kind(acl):
    sim_config.configure(faults=[{"kind": "perturb", "op_type": "Conv2D"}])
    assert acl.init() == C.ACL_SUCCESS
    assert parse_fault_rule({"kind": "perturb", "op": "x"}, "t").error == 0.05
