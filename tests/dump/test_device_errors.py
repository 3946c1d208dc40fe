"""The device-error-line parser on raw texts of real devices from public issue threads.

Each fixture under fixtures/device_errors/ is a text as it was pasted in a public
thread (its first ``#!`` line names the thread); the test says what every field
of it must read as. The wording, the prefixes and the wraps differ from one to
the next: that is the point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.dump.device_errors import DeviceErrorReader, parse_device_errors
from aclmon.dump.error_bits import BITS, bits_of, decode_registers, describe_bit

FIXTURES = Path(__file__).parent / "fixtures" / "device_errors"


def fixture(name: str) -> str:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#! source: https://github.com/"), "every fixture names its thread"
    return "\n".join(line for line in lines if not line.startswith("#!"))


def only(name: str) -> Any:
    errors = parse_device_errors(fixture(name))
    assert len(errors) == 1, [e.to_dict() for e in errors]
    return errors[0]


def test_every_fixture_names_a_public_thread_of_the_projects_asked_for():
    sources = [
        (FIXTURES / f).read_text(encoding="utf-8").splitlines()[0]
        for f in sorted(p.name for p in FIXTURES.glob("*.txt"))
    ]
    projects = {
        "vllm-project/vllm-ascend",
        "triton-lang/triton-ascend",
        "bitsandbytes-foundation/bitsandbytes",
        "Ascend/pytorch",
    }
    from_projects = [s for s in sources if any(p in s for p in projects)]
    assert len(from_projects) >= 6
    assert {p for p in projects if any(p in s for s in sources)} == projects


def test_vllm_ascend_2630_stars_core_line_extend_line_and_kernel():
    error = only("vllm_ascend_2630.txt")
    core = error.cores[0]
    assert (core.device_id, core.die_id, core.serial, core.core_id) == (5, 0, 65, 44)
    assert core.core_type == "aivec"
    assert core.error_code == (0,)
    assert core.registers["pc_start"] == 0x12C0C2E05000
    assert core.registers["current"] == 0x12C0C2E0595C
    assert core.registers["vec_error_info"] == 0x510430A01C
    assert core.registers["mte_error_info"] == 0x823C9FE1F0
    assert core.registers["ifu_error_info"] == 0x20003FFFEDA00
    assert core.registers["ccu_error_info"] == 0xC454318800000000
    assert core.registers["cube_error_info"] == 0
    assert core.registers["biu_error_info"] == 0
    assert core.registers["aic_error_mask"] == 0x6500020BD00028C
    assert core.registers["para_base"] == 0x12C100523C00
    assert core.extend is not None
    assert core.extend.errcode == (0, 0x8000, 0)
    assert core.extend.fields == {
        "fixp_error0": 0xC9FE1F0, "fixp_error1": 0x82, "fsmId": 1, "tslot": 3, "thread": 0,
        "ctxid": 0, "blk": 3, "sublk": 0, "subErrType": 4,
    }  # fmt: skip
    assert error.error_str.startswith("When the D-cache reads and writes data to the UB")
    assert error.bit_numbers() == [79]
    assert BITS[79].name == "CCU_BUS_ERR"
    assert (error.ret_code, error.ret_text, error.engine) == (0x31, "vector core exception", "AIV")
    assert (error.device_id, error.stream_id, error.report_stream_id) == (5, 2, 2)
    assert (error.task_id, error.flip_num) == (1167, 0)
    assert error.kernel == "ApplyTopKTopPWithSorted_fp32_high_performance_0"


def test_vllm_ascend_2918_torch_banner_and_the_bit_23_text():
    error = only("vllm_ascend_2918.txt")
    core = error.cores[0]
    assert (core.device_id, core.serial, core.core_id, core.core_type) == (5, 11, 2, "aivec")
    assert core.error_code == (0x800000,)
    assert core.registers["para_base"] == 0x124240536400
    assert error.bit_numbers() == [23]
    assert "EZ9999" in error.message_codes
    assert error.logged_ns > 0
    # The stored copy stops inside the sentence: what is there is kept.
    assert error.error_str == "The DDR address of the MTE instruction is out"
    assert "mte_err_type=110: write bus error" in error.register_fields()


def test_vllm_ascend_2976_server_prefix_two_blocks_of_one_error():
    error = only("vllm_ascend_2976.txt")
    assert error.serial == 4 and error.device_id == 2
    first = error.cores[0]
    assert first.core_id == 32 and first.registers["ifu_error_info"] == 0x3F9F8983438C0
    assert first.extend is not None and first.extend.fields["blk"] == 19
    assert error.error_str == "The DDR address of the MTE instruction is out of range."


def test_vllm_ascend_2763_unindented_chain():
    error = only("vllm_ascend_2763.txt")
    assert (error.serial, error.device_id, error.cores[0].core_id) == (8, 6, 40)
    assert error.cores[0].extend is not None
    assert error.cores[0].extend.fields["blk"] == 3
    assert error.bit_numbers() == [79]
    assert (error.ret_code, error.engine) == (0x31, "AIV")


def test_vllm_ascend_4972_timeout_kernel_line_and_host_result():
    error = only("vllm_ascend_4972.txt")
    assert error.kernel == "MoeDistributeDispatchV2_ND_ND_BF16_INT8_high_performance_2000001002"
    assert error.kernel_info_ext == "none"
    assert (error.stream_id, error.task_id, error.program_id) == (2, 7267, 85)
    assert (error.ret_code, error.engine) == (0x25, "AICORE")
    assert error.runtime_result == 507014
    assert error.cores == [] and error.bit_numbers() == []


def test_vllm_ascend_12776_ai_cpu_plog_lines():
    error = only("vllm_ascend_12776.txt")
    assert error.is_aicpu and error.engine in ("AICPU",)
    assert (error.device_id, error.stream_id, error.task_id) == (0, 5, 40187)
    assert error.aicpu_errcode == 1
    assert error.aicpu_message == "execute kernel param invalid"
    assert (error.ret_code, error.ret_text) == (0x2A, "aicpu exception")
    assert error.logged_ns > 0


def test_triton_ascend_494_mpu_fault_third_word_bit_121():
    error = only("triton_ascend_494.txt")
    core = error.cores[0]
    assert (core.device_id, core.serial, core.core_id) == (6, 4, 27)
    assert core.extend is not None and core.extend.errcode == (0, 0x200000000000000, 0)
    assert error.bit_numbers() == [121] and BITS[121].name == "CCU_MPU_ERR"
    assert error.error_str == "The MPU address access is invalid."
    assert core.extend.fields["tslot"] == 1


def test_bitsandbytes_1695_one_block_per_core_starting_mid_error():
    error = only("bitsandbytes_1695.txt")
    assert error.serial == 232 and error.device_id == 6
    blocks = [c.extend.fields["blk"] for c in error.cores if c.extend is not None]
    assert blocks == [33, 36]
    assert [c.core_id for c in error.cores] == [None, 15]
    assert error.cores[1].registers["pc_start"] == 0x124837587968
    assert error.bit_numbers() == [23]


def test_ascend_pytorch_66_host_side_only():
    error = only("ascend_pytorch_66.txt")
    assert error.cores == []
    assert error.runtime_result == 507035
    assert (error.sync_call, error.sync_reason) == (
        "rtDeviceSynchronizeWithTimeout",
        "vector core exception",
    )
    assert "EH9999" in error.message_codes


def test_vllm_ascend_2105_ai_cpu_from_the_host():
    error = only("vllm_ascend_2105.txt")
    assert error.runtime_result == 507018 and error.is_aicpu


def test_vllm_ascend_5043_wrapped_kernel_name():
    error = only("vllm_ascend_5043.txt")
    assert error.kernel == "fused_recurrent_gated_delta_rule_fwd_kernel_46"
    assert error.kernel_info_ext == "fused_recurrent_gated_delta_rule_fwd_kernel"
    assert (error.stream_id, error.task_id, error.flip_num, error.program_id) == (
        2,
        31025,
        554,
        480,
    )
    assert error.sync_reason == "vector core exception"


def test_vllm_ascend_16072_fftsplus_aivector_with_aic_cond():
    error = only("vllm_ascend_16072.txt")
    core = error.cores[0]
    assert core.core_type == "fftsplus aivector"
    assert core.registers["aic_cond"] == 0
    assert error.bit_numbers() == [76]
    assert error.error_str == "The VEC instruction parameter is invalid."


def test_vllm_ascend_16914_newest_wording_in_a_worker_prefix():
    error = only("vllm_ascend_16914.txt")
    core = error.cores[0]
    assert core.wording == "An error occurs on the device"
    assert (core.device_id, core.serial, core.core_id, core.core_type) == (2, 9, 38, "aivec")
    assert core.registers["para_base"] == 0x12C140692C00
    assert (error.ret_code, error.ret_text) == (0x31, "vector core exception")


def test_vllm_ascend_3955_bit_75():
    assert only("vllm_ascend_3955.txt").bit_numbers() == [75]


def test_vllm_ascend_16654_plog_prefix_cut_short():
    error = only("vllm_ascend_16654.txt")
    core = error.cores[0]
    assert (core.serial, core.core_id, core.core_type) == (7, 7, "fftsplus aicore")
    assert core.registers == {"pc_start": 0x12C0C136B000}


def test_pto_dsl_90_wrapped_error_str_and_the_third_word():
    error = only("pto_dsl_90.txt")
    assert error.bit_numbers() == [17, 144]
    assert error.error_str.endswith("the read and write operations occur at the same address.")
    assert "reads l0c" in error.error_str
    assert error.cores[0].extend is not None
    assert error.cores[0].extend.fields["sublk"] == 0


def test_llama_cpp_10108_old_inline_error_str():
    error = only("llama_cpp_10108.txt")
    core = error.cores[0]
    assert (core.device_id, core.die_id, core.error_code) == (0, None, (0x10,))
    assert core.registers["pc_start"] == 0x8001240801311A4
    assert error.bit_numbers() == [4]
    assert error.error_str.startswith("Illegal instruction")


def test_ptoas_482_ascend_950_decimal_bits():
    error = only("ptoas_482.txt")
    core = error.cores[0]
    assert core.a5 and core.error_code == (95,)
    assert core.registers["su_error_info"] == (0xFEFFFEEC1EFE9387, 0x7FDDFEBFF8007FFF)
    assert core.registers["mte_error"] == 0x80000000
    assert error.bit_numbers() == [95]
    assert describe_bit(95, a5=True).name == ""


def test_mindone_269_2023_layout():
    error = only("mindone_269.txt")
    assert error.cores[0].core_type == "aicore" and error.cores[0].core_id == 19
    assert error.bit_numbers() == [23]


def test_the_same_error_twice_is_one_error_and_two_errors_are_two():
    text = fixture("vllm_ascend_2630.txt")
    assert len(parse_device_errors(text + "\n" + text)) == 1
    other = fixture("triton_ascend_494.txt")
    errors = parse_device_errors(text + "\n" + other)
    assert [e.serial for e in errors] == [65, 4]


def test_reader_finds_an_error_by_task():
    reader = DeviceErrorReader()
    for line in fixture("vllm_ascend_2630.txt").splitlines():
        reader.feed(line)
    found = reader.find(0, 2, 1167)
    assert found is not None and found.kernel.startswith("ApplyTopK")
    assert reader.find(0, 2, 1168) is None


# ---------------------------------------------------------------- bits
def test_bits_combine_three_words_as_the_runtime_does():
    assert bits_of((0x800000, 0, 0)) == [23]
    assert bits_of((0, 0x800, 0)) == [75]
    assert bits_of((0, 0, 0x10000)) == [144]
    assert bits_of((0, 0, 1 << 32)) == [145]
    assert bits_of((0x4000000000000000, 0, 0)) == [62]
    assert len(BITS) == 176
    assert BITS[62].name == "VEC_UB_WRAP_AROUND" and BITS[156].name == "VEC_IDATA_INF_NAN"


def test_msaicerr_worked_example_write_bus_error():
    assert decode_registers({"mte_error_info": 0x600004A}, [23])[0] == (
        "mte_err_type=110: write bus error"
    )


# ---------------------------------------------------------------- hostile text
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_never_raises_on_any_text(text):
    parse_device_errors(text)


_LINE_PARTS = st.sampled_from(
    [
        "The error from device(",
        "chipId:1, dieId:0), ",
        "serial number is 7, ",
        "there is an exception of aivec error, core id is 3, ",
        "error code = 0x800000, dump info: pc start: 0x12, current: ",
        "The extend info: errcode:(0x800000, 0, 0) errorStr: x ",
        "subErrType:4.",
        "[FUNC:a][FILE:b][LINE:1]",
        "Aicore kernel execute failed, device_id=0, stream_id=",
        "task_id=12, fault kernel_name=",
        "[AIC_INFO] node_name:a, node_type:b, stream_id:1, task_id:",
        "\n",
        "  ",
        "99999999999999999999999999999999",
        "0x",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE_PARTS, max_size=40))
def test_never_raises_on_pieces_of_real_lines(parts):
    for error in parse_device_errors("".join(parts)):
        error.to_dict()
        error.bits()
        error.register_fields()


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")))
def test_every_fixture_gives_json_values(name):
    import json

    for error in parse_device_errors(fixture(name)):
        json.dumps(error.to_dict())
