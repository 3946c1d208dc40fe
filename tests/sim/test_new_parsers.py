"""Hostile input to the descriptions this round reads: single-operator descriptions
(set_model_dir), static AIPP sections and dynamic-dims gears. Each is either taken or
refused with one clear error; nothing else escapes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.sim import model_description as M
from aclmon.sim import single_op as S

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 300)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
tensor = st.fixed_dictionaries(
    {"type": st.sampled_from(["float16", "int32", "fp32", "bogus"]),
     "format": st.sampled_from(["ND", "NCHW", "XYZ"]),
     "shape": st.lists(st.integers(-2, 8), max_size=4) | json_values}
)  # fmt: skip
op_entry = st.fixed_dictionaries(
    {"op": st.sampled_from(["Add", "Cast"]) | json_values},
    optional={"input_desc": st.lists(tensor | json_values, max_size=3),
              "output_desc": st.lists(tensor, max_size=2),
              "attr": st.lists(st.dictionaries(st.sampled_from(["name", "value"]), json_values),
                               max_size=2)},
)  # fmt: skip


@settings(deadline=None, max_examples=200)
@given(st.lists(op_entry, max_size=3) | json_values)
def test_operator_descriptions_are_taken_or_refused(data):
    try:
        ops = S.parse_op_list(data, "ops.json")
    except M.ModelError as exc:
        assert str(exc).startswith("ops.json")
    else:
        assert all(isinstance(op, S.OpSig) for op in ops)


aipp_section = st.dictionaries(
    st.sampled_from(["aipp_mode", "input_format", "src_image_size_w", "src_image_size_h",
                     "csc_switch", "mean_chn_0", "var_reci_chn_1", "matrix_r0c0", "crop"]),
    json_values, max_size=5,
)  # fmt: skip


@settings(deadline=None, max_examples=200)
@given(
    aipp_section | json_values,
    st.lists(st.integers(-1, 40), min_size=0, max_size=5),
    st.none() | st.lists(st.lists(st.integers(-1, 9), max_size=3), max_size=3),
)
def test_aipp_sections_and_dims_gears_are_taken_or_refused(aipp, shape, dims):
    data = {
        "name": "hostile",
        "inputs": [{"name": "x", "dtype": "float16", "format": "NCHW", "shape": shape, "aipp": aipp}],
        "ops": [{"name": "r", "type": "Relu", "inputs": ["x"],
                 "outputs": [{"name": "y", "dtype": "float16", "format": "NCHW", "shape": shape}]}],
        "outputs": ["y"],
    }  # fmt: skip
    if dims is not None:
        data["dynamic_dims"] = dims
    try:
        parsed = M.parse_description(data, "hostile.json")
    except M.ModelError as exc:
        assert str(exc).startswith("hostile.json")
    else:
        assert parsed["ops"][0].op_type == "Aipp"
