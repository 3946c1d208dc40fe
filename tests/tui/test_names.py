"""Operator names cut by path segments: the differing and the last segments stay."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from tui_scenario import BERT

from aclmon.tui.names import ELLIPSIS, NameFitter, fit_name


def test_names_that_differ_only_in_the_layer_index_stay_told_apart():
    names = NameFitter(BERT)
    layer_11 = "bert/encoder/layer_11/attention/self/query/MatMul"
    layer_1 = "bert/encoder/layer_1/attention/self/query/MatMul"
    assert names.fit(layer_11, 26) == "…/layer_11/…/query/MatMul"
    assert names.fit(layer_1, 26) == "…/layer_1/…/query/MatMul"
    # narrower: the layer first (it tells the most names apart), then what fits
    assert names.fit(layer_11, 20) == "…/layer_11/…/MatMul"
    # wider: the segments nearest the end fill the room
    assert names.fit(layer_11, 30) == "…/layer_11/…/self/query/MatMul"
    assert names.fit(layer_11, 60) == layer_11


def test_every_name_of_a_bert_model_is_distinct_at_26_columns():
    names = NameFitter(BERT)
    fitted = [names.fit(name, 26) for name in BERT]
    assert len(set(fitted)) == len(BERT)
    assert all(len(text) <= 26 for text in fitted)


def test_a_name_without_segments_is_cut_in_the_middle():
    assert NameFitter(["trans_Cast_17_fused_long_name"]).fit(
        "trans_Cast_17_fused_long_name", 12
    ) == ("trans…g_name")


def test_a_last_segment_longer_than_the_width_is_cut_in_the_middle():
    assert fit_name("a/b/VeryLongFusedOperatorName", 12) == "…/Very…rName"


def test_a_name_alone_keeps_its_last_segments():
    assert fit_name("resnet50/layer4/2/bn3/BNInferenceD", 24) == "…/2/bn3/BNInferenceD"


segment = st.text(alphabet="abcxyz_0123456789", min_size=1, max_size=8)
path = st.lists(segment, min_size=1, max_size=7).map("/".join)


@given(st.lists(path, min_size=1, max_size=30, unique=True), st.integers(0, 60))
def test_a_fitted_name_never_exceeds_its_width(names, width):
    fitter = NameFitter(names)
    for name in names:
        fitted = fitter.fit(name, width)
        assert len(fitted) <= width
        if len(name) <= width:
            assert fitted == name


@given(st.lists(segment, min_size=2, max_size=6), segment, segment, st.integers(0, 4))
def test_two_names_differing_in_one_segment_differ_when_there_is_room(parts, one, other, index):
    """Room for the last segment, the differing one and two marks: the two differ."""
    if one == other:
        return
    index %= len(parts) - 1
    a, b = list(parts), list(parts)
    a[index], b[index] = one, other
    first, second = "/".join(a), "/".join(b)
    fitter = NameFitter([first, second])
    width = len(parts[-1]) + max(len(one), len(other)) + 2 * len(ELLIPSIS) + 3
    assert fitter.fit(first, width) != fitter.fit(second, width)


async def test_bert_names_that_differ_only_in_the_layer_stay_apart_on_screen_at_80x24():
    from tui_helpers import make_app, screen_text
    from tui_scenario import bert_events

    app = make_app(events=bert_events())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        rows = screen_text(app).split("\n")
        layer_1 = [r for r in rows if "…/layer_1/…/query/MatMul" in r]
        layer_11 = [r for r in rows if "…/layer_11/…/query/MatMul" in r]
        assert len(layer_1) == 1 and len(layer_11) == 1
        assert "run 1200" in layer_1[0] and "run 1201" in layer_11[0]
