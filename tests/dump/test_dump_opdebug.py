"""Overflow records: msaccucmp's keys and order, status words explained, file names."""

from __future__ import annotations

import json

import pytest
from dumpfixtures import opdebug_new, opdebug_old

from aclmon.dump import decode_opdebug, explain_status, parse_dump_name
from aclmon.dump.opdebug import overflow_target
from aclmon.errors import DecodeError


def test_old_layout_keys_order_and_values():
    record = decode_opdebug(
        opdebug_old(
            {
                0: 1, 8: 2, 16: 3, 24: 4, 32: 0xABC, 40: 0xDEF,  # DHA info
                128: 5, 136: 6, 144: 7, 152: 8, 160: 0x10, 168: 0x20,  # L2 info
                256: 9, 264: 10, 272: 11, 280: 12, 288: 0x1000, 296: 0x2000,  # AI Core info
                512: 0, 768: 0,  # DHA / L2 status
                1024: 0x1000, 1032: 3, 1040: 272,  # AI Core kernel_code, block_idx, status
            }
        )
    )  # fmt: skip
    expected = {
        "DHA Atomic Add": {"model_id": 1, "stream_id": 2, "task_id": 3, "task_type": 4,
                           "pc_start": "0xabc", "para_base": "0xdef", "status": 0},
        "L2 Atomic Add": {"model_id": 5, "stream_id": 6, "task_id": 7, "task_type": 8,
                          "pc_start": "0x10", "para_base": "0x20", "status": 0},
        "AI Core": {"model_id": 9, "stream_id": 10, "task_id": 11, "task_type": 12,
                    "pc_start": "0x1000", "para_base": "0x2000", "kernel_code": "0x1000",
                    "block_idx": 3, "status": 272},
    }  # fmt: skip
    # same keys in the same order => the same JSON text msaccucmp writes
    assert json.dumps(record, indent=4) == json.dumps(expected, indent=4)
    assert explain_status(record) == [
        "AI Core: integer add/sub/mul/mul-add overflow (0x010)",
        "AI Core: overflow in a float32-to-float16 or int32-to-float16 conversion (0x100)",
        "DHA Atomic Add: no overflow",
        "L2 Atomic Add: no overflow",
    ]
    assert overflow_target(record) == {
        "task_id": 11,
        "stream_id": 10,
        "context_id": None,
        "thread_id": None,
    }


def test_old_layout_must_be_2048_bytes():
    with pytest.raises(DecodeError, match="2048"):
        decode_opdebug(b"\x00" * 2047, "Opdebug.Node_OpDebug.1.2.3", 100)


def test_new_layout_msaccucmp_test_vector():
    data = opdebug_new(acc_type=1, words=[0] * 11)  # [0x5a5a5a5a, 0, 1, 1, 0, 88] + 11 x u64 0
    assert len(data) == 24 + 88
    record = decode_opdebug(data)
    expected = {
        "magic": "0x5a5a5a5a",
        "version": 0,
        "acc_list": {
            "valid": 1, "acc_type": "AIV", "rsv": 0, "data_len": 88,
            "data": {"model_id": 0, "stream_id": 0, "task_id": 0, "task_type": 0, "context_id": 0,
                     "thread_id": 0, "pc_start": "0x0", "para_base": "0x0", "core_id": 0,
                     "block_id": 0, "status": 0},
        },
    }  # fmt: skip
    assert json.dumps(record, indent=4) == json.dumps(expected, indent=4)
    assert explain_status(record) == ["AIV status: no overflow"]


def test_new_layout_version_1_four_word_status():
    words = [1, 2, 3, 0, 7, 8, 0x4000, 0x5000, 4, 5, 0x20, 0, 0x400, 0]
    record = decode_opdebug(opdebug_new(acc_type=0, words=words, version=1))
    data = record["acc_list"]["data"]
    assert record["acc_list"]["data_len"] == 112
    assert list(data) == ["model_id", "stream_id", "task_id", "task_type", "context_id", "thread_id",
                          "pc_start", "para_base", "core_id", "block_id", "status"]  # fmt: skip
    assert data["status"] == [0x20, 0, 0x400, 0]
    assert data["pc_start"] == "0x4000" and data["task_id"] == 3
    assert explain_status(record) == [
        "AIC status[0]: floating-point computation overflow (0x020)",
        "AIC status[1]: no overflow",
        "AIC status[2]: CUBE accumulation overflow (0x400)",
        "AIC status[3]: no overflow",
    ]
    assert overflow_target(record) == {
        "task_id": 3,
        "stream_id": 2,
        "context_id": 7,
        "thread_id": 8,
    }


def test_new_layout_sdma_and_aicpu():
    sdma = decode_opdebug(opdebug_new(acc_type=3, words=[0, 1, 2, 3, 4, 5, 0xA0, 0xB0, 6, 9]))
    assert sdma["acc_list"]["acc_type"] == "SDMA"
    assert (
        sdma["acc_list"]["data"]["src_addr"] == "0xa0"
        and sdma["acc_list"]["data"]["dst_addr"] == "0xb0"
    )
    assert list(sdma["acc_list"]["data"])[-2:] == ["channel_id", "status"]
    assert "overflow reported" in explain_status(sdma)[0]
    aicpu = decode_opdebug(opdebug_new(acc_type=2, words=[0, 1, 2, 3, 4, 5, 6, 0]))
    assert list(aicpu["acc_list"]["data"]) == ["model_id", "stream_id", "task_id", "task_type",
                                               "context_id", "cpu_id", "thread_id", "status"]  # fmt: skip
    assert explain_status(aicpu) == ["AICPU status: no overflow"]


def test_new_layout_data_len_mismatch_and_invalid_are_explained_not_fatal():
    record = decode_opdebug(opdebug_new(acc_type=1, words=[0] * 11, data_len=80, valid=0))
    lines = explain_status(record)
    assert any("not valid" in line for line in lines)
    assert any("data_len 80" in line for line in lines)


def test_new_layout_errors():
    with pytest.raises(DecodeError, match="acc_type 9"):
        decode_opdebug(opdebug_new(acc_type=9, words=[0] * 11), "f", 40)
    with pytest.raises(DecodeError, match="needs 88 data bytes") as info:
        decode_opdebug(opdebug_new(acc_type=0, words=[0] * 5), "f", 40)
    assert info.value.offset == 64


def test_undocumented_bits_are_named_not_guessed():
    record = decode_opdebug(opdebug_old({1040: 0x20 | 0x2}))
    assert explain_status(record)[:2] == [
        "AI Core: floating-point computation overflow (0x020)",
        "AI Core: undocumented status bits 0x2",
    ]
    atomic = decode_opdebug(opdebug_old({512: 0x9}))
    assert "underflow" not in explain_status(atomic)[1] and "overflow" in explain_status(atomic)[1]


@pytest.mark.parametrize(
    "name,fields",
    [
        (
            "Pooling.pool1.1147.1589195081588018",
            ("Pooling", "pool1", 1147, None, 1589195081588018, None, None),
        ),
        (
            "Pooling.pool1.1.5.1732082705016774",
            ("Pooling", "pool1", 1, 5, 1732082705016774, None, None),
        ),
        (
            "Conv2D.Default_conv-op12.2.7.161243956333802",
            ("Conv2D", "Default_conv-op12", 2, 7, 161243956333802, None, None),
        ),
        ("MatMul.mm.5.6.1700000000000000.4.3.2.0", ("MatMul", "mm", 5, 6, 1700000000000000, 3, 2)),
        (
            "Opdebug.Node_OpDebug.12.3.1700000000000001",
            ("Opdebug", "Node_OpDebug", 12, 3, 1700000000000001, None, None),
        ),
        (
            "OpDebug.Node_Opdebug.12.3.1700000000000001",
            ("OpDebug", "Node_Opdebug", 12, 3, 1700000000000001, None, None),
        ),
    ],
)
def test_file_name_grammar(name, fields):
    parsed = parse_dump_name(name)
    assert parsed is not None
    got = (parsed.op_type, parsed.op_name, parsed.task_id, parsed.stream_id, parsed.timestamp,
           parsed.context_id, parsed.thread_id)  # fmt: skip
    assert got == fields
    assert parsed.is_overflow == name.lower().startswith("opdebug.node_opdebug.")


@pytest.mark.parametrize(
    "name", ["x.npy", "Add.1.2", "Add.op.1.2.17.npy", "mapping.csv", "Add.op.a.b.c"]
)
def test_names_outside_the_grammar(name):
    assert parse_dump_name(name) is None
