"""At 80x24 and 100x30 the details show their fields as key/value lines that
wrap instead of tables that cut; what identifies a failure stays readable."""

from __future__ import annotations

import pytest
from tui_helpers import make_app, screen_text, static_text, wait_for
from tui_scenario import T0, build_events

from aclmon import events as ev
from aclmon.acl_constants import (
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_RT_AICORE_TRAP_EXCEPTION,
    ACL_FLOAT16,
    ACL_FORMAT_FRACTAL_Z,
    ACL_FORMAT_NC1HWC0,
    error_name,
)
from aclmon.tui.screens import ExceptionDetail
from aclmon.tui.views.exceptions import short_error

NARROW = [(80, 24), (100, 30)]
OP = "bert/encoder/layer_11/attention/self/query/MatMul_fused_bias"
TENSORS = (
    ev.TensorDesc(ACL_FLOAT16, ACL_FORMAT_NC1HWC0, (32, 64, 128, 128, 16), 0x12C4_0000_1234_5000,
                  1_073_741_824, "bert/encoder/layer_11/attention/self/query/input:0"),
    ev.TensorDesc(ACL_FLOAT16, ACL_FORMAT_FRACTAL_Z, (2048, 64, 16, 16), 0x12C4_0000_9ABC_D000,
                  67_108_864, "bert/encoder/layer_11/attention/self/query/kernel:0"),
)  # fmt: skip
DUMP = (
    "/var/log/npu/dump/20251202100000/3/bert_large_uncased_whole_word_masking/7/118/"
    "MatMul.bert_encoder_layer_11_attention_self_query_MatMul.4321.12.1764669648999999"
)


def wide_failure() -> list[ev.Event]:
    """The scenario and, newest, an exception whose fields are all long."""
    events = build_events()
    seq = max(e.seq for e in events)
    ts = T0 + 100 * 10**9
    events.append(
        ev.AclException(seq + 1, ts, 3, 12, 4321, 7777, ACL_ERROR_RT_AICORE_TRAP_EXCEPTION, OP,
                        "BatchMatMulV2", TENSORS, TENSORS[:1], "bert_large", 118)
    )  # fmt: skip
    events.append(
        ev.DumpFileSeen(seq + 2, ts + 1000, DUMP, "op-dump", 1_207_959_552, {
            "kind": "op-dump", "op_type": "BatchMatMulV2", "op_name": OP, "task_id": 4321,
            "stream_id": 12, "tensors": [
                {"role": "input", "index": 0, "dtype": "DT_FLOAT16", "format": "FORMAT_NC1HWC0",
                 "shape": [32, 64, 128, 128, 16], "size": 1_073_741_824},
                {"role": "output", "index": 0, "dtype": "DT_FLOAT16",
                 "format": "FORMAT_FRACTAL_Z", "shape": [2048, 64, 16, 16], "size": 67_108_864},
            ]})
    )  # fmt: skip
    return events


def lines_within(text: str, width: int) -> list[str]:
    lines = text.rstrip("\n").split("\n")
    assert all(len(line.rstrip()) <= width for line in lines)
    return lines


def whole(lines: list[str], *fields: str) -> None:
    """Each field stands whole on one line (neither cut nor broken across lines)."""
    for field in fields:
        assert any(field in line for line in lines), field


@pytest.mark.parametrize("size", NARROW, ids=["80x24", "100x30"])
async def test_exception_detail_is_key_value_lines_when_narrow(size):
    app = make_app(events=wide_failure())
    async with app.run_test(size=size) as pilot:
        await pilot.press("2", "end", "enter")
        assert isinstance(app.screen, ExceptionDetail)
        await pilot.pause()
        shown = screen_text(app)
        # the operator and the error on screen at once, at its top
        whole(shown.split("\n"), "BatchMatMulV2", "ACL_ERROR_RT_AICORE_TRAP_EXCEPTION (507016)")
        assert "bert/encoder/layer_11/attention/self/query" in shown
        width = app.screen.query_one("#detail-body").size.width
        lines = lines_within(static_text(app, "#detail-body"), width)
        whole(lines, "device 3 · stream 12 · task 4321 · thread 7777")
        for t in TENSORS:
            whole(lines, t.name, f"0x{t.address:x}")
        whole(lines, "FLOAT16  NC1HWC0  [32,64,128,128,16]", "FLOAT16  FRACTAL_Z  [2048,64,16,16]")
        whole(lines, "1.0 GiB", "64.0 MiB")
        assert not any("…" in line for line in lines)


async def test_exception_detail_keeps_its_table_when_wide():
    app = make_app(events=wide_failure())
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("2", "end", "enter")
        await pilot.pause()
        body = static_text(app, "#detail-body")
        assert "#  NAME" in body and "ADDRESS" in body  # the table's header
        assert "where" not in body


@pytest.mark.parametrize("size", NARROW, ids=["80x24", "100x30"])
async def test_dump_detail_is_key_value_lines_when_narrow(size):
    app = make_app(events=wide_failure())
    async with app.run_test(size=size) as pilot:
        await pilot.press("4", "end")
        await wait_for(pilot, lambda: "4321" in static_text(app, "#dump-detail"))
        width = app.screen.query_one("#dump-detail").size.width
        lines = lines_within(static_text(app, "#dump-detail"), width)
        # the name folds when longer than the pane, but nothing is cut
        joined = "".join(line.strip() for line in lines)
        assert DUMP.rsplit("/", 1)[1] in joined and DUMP.rsplit("/", 1)[0] in joined
        whole(lines, "op-dump · 1.1 GiB", "BatchMatMulV2", "task 4321 · stream 12")
        # a table row where it fits, else key/value lines: whole either way
        for fields in (("input", "FORMAT_NC1HWC0", "[32, 64, 128, 128, 16]", "1.0 GiB"),
                       ("output", "FORMAT_FRACTAL_Z", "[2048, 64, 16, 16]", "64.0 MiB")):  # fmt: skip
            assert any(
                all(f in line or f.replace(" ", "") in line for f in fields) for line in lines
            ), fields
        assert not any("…" in line for line in lines)


@pytest.mark.parametrize("size", NARROW, ids=["80x24", "100x30"])
async def test_exception_row_shows_the_op_name_its_model_run_and_the_code(size):
    app = make_app(events=wide_failure())
    async with app.run_test(size=size) as pilot:
        await pilot.press("2")
        await pilot.pause()
        rows = [r for r in screen_text(app).split("\n") if "MatMul_fused_bias" in r]
        assert len(rows) == 1
        row = rows[0]
        # the operator's last segments, the model and its run, the code; the error's
        # short name where it fits beside them (not at 80 columns: the name comes first)
        assert "/MatMul_fused_bias" in row and "run 118" in row and "bert_" in row
        assert "507016" in row
        assert ("AIC_TRAP_EXC" in row or "AICORE_TRAP_EXC" in row) == (size[0] >= 100)
        assert "/embeddings/GatherV2" in screen_text(app)


def test_error_names_shorten_word_by_word_before_any_cut():
    aicore, trap = (
        error_name(ACL_ERROR_RT_AICORE_EXCEPTION),
        error_name(ACL_ERROR_RT_AICORE_TRAP_EXCEPTION),
    )
    assert short_error(aicore, 40) == "ACL_ERROR_RT_AICORE_EXCEPTION"
    assert short_error(aicore, 16) == "AICORE_EXCEPTION"
    assert short_error(aicore, 12) == "AICORE_EXC"
    assert short_error(trap, 12) == "AIC_TRAP_EXC"
    assert short_error(trap, 10) == "AIC_…P_EXC"
    assert short_error(error_name(999_999), 12) == "ACL e…999999"  # unknown: cut where it shows


@pytest.mark.parametrize("size", NARROW, ids=["80x24", "100x30"])
async def test_host_line_names_the_script_and_never_wraps(size):
    events = build_events()
    hello = events[0]
    assert isinstance(hello, ev.Hello)
    argv = ("/usr/bin/python3", "/home/user/projects/bert/run_pretraining.py", "--config",
            "/home/user/projects/bert/configs/large_uncased_whole_word_masking.json", "--fp16")  # fmt: skip
    events[0] = hello._replace(argv=argv)
    app = make_app(events=events)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        width = app.screen.query_one("#host-line").size.width
        host = lines_within(static_text(app, "#host-line"), width)
        assert host[0].startswith("HOST  pid 4242 on node-a  run_pretraining.py ")
        assert "…" in host[0] and "(python3)" in host[0]  # cut in the middle: both ends stay
        assert "cpu" in host[-1] and "threads 24" in host[-1]


async def test_the_dumps_list_keeps_its_cursor_on_screen_when_its_rows_change():
    """Overflow only, then every file again: the cursor (following the end)
    is on screen, not left above a list scrolled to its top."""
    events = build_events()
    seq = max(e.seq for e in events)
    for i in range(120):
        events.append(ev.DumpFileSeen(seq + 1 + i, T0 + 10**11 + i * 10**6,
                                      f"/d/Add.add{i}.{i}.3.1", "op-dump", 100, {"kind": "op-dump"}))  # fmt: skip
    app = make_app(events=events)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        vlist = app.dumps_view.vlist
        await wait_for(pilot, lambda: vlist.scroll_y > 0)
        await pilot.press("o", "end", "o")
        await wait_for(pilot, lambda: vlist.row_count > 100)
        await pilot.pause()
        height = vlist.scrollable_content_region.height
        assert vlist.scroll_y <= vlist.cursor < vlist.scroll_y + height


@pytest.mark.parametrize("size", [(100, 30), (160, 48)], ids=["100x30", "160x48"])
async def test_focus_is_visible_in_the_dumps_split_panes(size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.press("4")
        await pilot.pause()
        pane = app.screen.query_one("#dump-detail-scroll")
        vlist = app.dumps_view.vlist
        edge = "border_top" if size[0] < 120 else "border_left"
        primary = app.current_theme.primary

        def colour(widget, side: str) -> str:
            return getattr(widget.styles, side)[1].hex.lower()

        assert colour(vlist, "border_left") == primary.lower()
        unfocused = colour(pane, edge)
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is pane
        assert colour(pane, edge) == primary.lower() != unfocused
        assert colour(vlist, "border_left") != primary.lower()


async def test_help_never_cuts_a_binding_id_at_80_columns():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        body = app.screen.query_one("#help-body")
        lines = lines_within(static_text(app, "#help-body"), body.size.width)
        ids = {i for i in app.binding_ids() if not i.startswith("replay.")}
        assert len(ids) > 40
        words = {word for line in lines for word in line.split()}
        assert ids <= words
        assert not any("…" in line for line in lines)
