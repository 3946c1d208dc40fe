"""Misuse returns the documented CANN codes (pyacl_api.md §1.3, §4.5)."""

from __future__ import annotations

import json
import os

import pytest

from aclmon import acl_constants as C

ACL_PROF_TASK_TIME = 0x0002


def test_acl_init_twice_and_finalize_twice(acl):
    assert acl.init() == 0
    assert acl.init() == C.ACL_ERROR_REPEAT_INITIALIZE
    assert acl.finalize() == 0
    assert acl.finalize() == C.ACL_ERROR_REPEAT_FINALIZE


def test_calls_before_init(acl):
    assert acl.rt.set_device(0) == C.ACL_ERROR_UNINITIALIZE
    assert acl.prof.init("/nonexistent") == C.ACL_ERROR_UNINITIALIZE
    assert "UNINITIALIZE" in acl.get_recent_err_msg()


def test_prof_start_before_init(acl):
    acl.init()
    cfg = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, ACL_PROF_TASK_TIME)
    assert cfg != 0
    assert acl.prof.start(cfg) == C.ACL_ERROR_PROF_NOT_RUN
    assert acl.prof.stop(cfg) == C.ACL_ERROR_PROF_NOT_RUN
    assert acl.prof.finalize() == C.ACL_ERROR_PROF_NOT_RUN
    assert acl.prof.set_config(C.ACL_PROF_STORAGE_LIMIT, "500MB") == C.ACL_ERROR_PROF_NOT_RUN


def test_second_prof_init(acl, tmp_path):
    acl.init()
    assert acl.prof.init(os.fspath(tmp_path)) == 0
    assert acl.prof.init(os.fspath(tmp_path)) == C.ACL_ERROR_REPEAT_INITIALIZE


def test_device_started_twice(acl, tmp_path):
    acl.init()
    acl.prof.init(os.fspath(tmp_path))
    first = acl.prof.create_config([0, 1], C.ACL_AICORE_NONE, 0, ACL_PROF_TASK_TIME)
    second = acl.prof.create_config([1], C.ACL_AICORE_NONE, 0, ACL_PROF_TASK_TIME)
    assert acl.prof.start(first) == 0
    assert acl.prof.start(second) == C.ACL_ERROR_PROF_ALREADY_RUN
    assert acl.prof.stop(second) == C.ACL_ERROR_INVALID_PARAM  # not the config that started
    assert acl.prof.set_config(C.ACL_PROF_STORAGE_LIMIT, "500MB") == C.ACL_ERROR_PROF_ALREADY_RUN
    assert acl.prof.stop(first) == 0
    assert acl.prof.stop(first) == C.ACL_ERROR_PROF_NOT_RUN
    assert acl.prof.finalize() == 0


def test_prof_init_when_acl_json_profiles(acl, tmp_path):
    config = tmp_path / "acl.json"
    config.write_text(json.dumps({"profiler": {"switch": "on", "output": os.fspath(tmp_path)}}))
    assert acl.init(os.fspath(config)) == 0
    assert acl.prof.init(os.fspath(tmp_path)) == C.ACL_ERROR_PROF_ALREADY_RUN


def _load(acl, path):
    acl.rt.set_device(0)
    model_id, ret = acl.mdl.load_from_file(path)
    assert ret == 0
    return model_id


def test_subscription_mixed_with_api_mode(acl, model_path, tmp_path):
    acl.init()
    model_id = _load(acl, model_path["mlp_head"])
    r, w = os.pipe()
    try:
        sub = acl.prof.create_subscribe_config(1, C.ACL_AICORE_PIPE_UTILIZATION, w)
        assert acl.prof.init(os.fspath(tmp_path)) == 0
        assert acl.prof.model_subscribe(model_id, sub) == C.ACL_ERROR_PROF_API_CONFLICT
        assert acl.prof.finalize() == 0
        assert acl.prof.model_subscribe(model_id, sub) == 0
        assert acl.prof.model_subscribe(model_id, sub) == C.ACL_ERROR_PROF_REPEAT_SUBSCRIBE
        assert acl.prof.init(os.fspath(tmp_path)) == C.ACL_ERROR_PROF_API_CONFLICT
        assert acl.prof.model_un_subscribe(model_id) == 0
        assert acl.prof.model_un_subscribe(model_id) == C.ACL_ERROR_INVALID_MODEL_ID
        assert acl.prof.model_subscribe(999, sub) == C.ACL_ERROR_INVALID_MODEL_ID
    finally:
        os.close(r)


def test_prof_create_config_rejects_bad_input(acl):
    acl.init()
    assert acl.prof.create_config([99], C.ACL_AICORE_NONE, 0, ACL_PROF_TASK_TIME) == 0
    assert acl.prof.create_config([0], 42, 0, ACL_PROF_TASK_TIME) == 0
    with pytest.raises(TypeError):
        acl.prof.create_config((0,), C.ACL_AICORE_NONE, 0, ACL_PROF_TASK_TIME)


def test_op_getters_reject_long_lengths(acl):
    acl.init()
    assert acl.prof.get_op_type(1, 10, 0, 5000) == ("", C.ACL_ERROR_INVALID_PARAM)
    op = acl.mdl.create_and_get_op_desc(0, 0, 0, 5000)
    assert op == ("", 0, 0, 0, 0, C.ACL_ERROR_INVALID_PARAM)
    assert acl.mdl.create_and_get_op_desc(0, 0, 12345, 256)[-1] == C.ACL_ERROR_OP_NOT_FOUND


def test_runtime_misuse_codes(acl):
    acl.init()
    assert acl.rt.set_device(8) == C.ACL_ERROR_RT_INVALID_DEVICEID
    assert acl.rt.create_stream() == (0, C.ACL_ERROR_RT_CONTEXT_NULL)
    assert acl.rt.malloc(16, 0) == (0, C.ACL_ERROR_RT_CONTEXT_NULL)
    assert acl.rt.get_context() == (0, C.ACL_ERROR_RT_CONTEXT_NULL)
    acl.rt.set_device(0)
    assert acl.rt.destroy_stream(0x1234) == C.ACL_ERROR_RT_INVALID_HANDLE
    assert acl.rt.destroy_stream(0) == C.ACL_ERROR_INVALID_PARAM
    assert acl.rt.malloc(0, 0)[1] == C.ACL_ERROR_INVALID_PARAM
    assert acl.rt.free(0x1234) == C.ACL_ERROR_RT_PARAM_INVALID
    assert acl.mdl.unload(42) == C.ACL_ERROR_INVALID_MODEL_ID
    with pytest.raises(TypeError):
        acl.rt.set_exception_info_callback(42)


def test_null_and_unknown_handles(acl):
    acl.init()
    acl.rt.set_device(0)
    default, _ = acl.rt.get_context()
    stream, _ = acl.rt.create_stream()
    for call in (acl.rt.set_context, acl.rt.destroy_context, acl.rt.destroy_event):
        assert call(0) == C.ACL_ERROR_INVALID_PARAM, call.__name__
        assert call(0x1234) == C.ACL_ERROR_RT_INVALID_HANDLE, call.__name__
    assert "does not exist" in acl.get_recent_err_msg()
    assert acl.rt.destroy_context(default) == C.ACL_ERROR_RT_INVALID_HANDLE  # the default one
    assert "cannot be destroyed" in acl.get_recent_err_msg()
    event, _ = acl.rt.create_event()
    for call in (acl.rt.record_event, acl.rt.stream_wait_event):
        args = (event, 0x1234) if call is acl.rt.record_event else (0x1234, event)
        assert call(*args) == C.ACL_ERROR_RT_INVALID_HANDLE, call.__name__  # the stream
    assert acl.rt.record_event(0x1234, stream) == C.ACL_ERROR_RT_INVALID_HANDLE  # the event
    assert acl.rt.record_event(event, stream) == C.ACL_SUCCESS
    assert acl.rt.stream_wait_event(stream, event) == C.ACL_SUCCESS
    assert acl.rt.destroy_event(event) == C.ACL_SUCCESS


def test_msproftx_unknown_stamp(acl):
    acl.init()
    for call, c_name in ((acl.prof.mark, "aclprofMark"), (acl.prof.push, "aclprofPush")):
        assert call(0x1234) == C.ACL_ERROR_INVALID_PARAM, c_name
        message = acl.get_recent_err_msg()
        assert "unknown stamp" in message and c_name in message
    assert acl.prof.range_start(0x1234) == (0, C.ACL_ERROR_INVALID_PARAM)
    stamp = acl.prof.create_stamp()
    assert acl.prof.mark(stamp) == acl.prof.push(stamp) == acl.prof.pop() == C.ACL_SUCCESS
    assert acl.prof.pop() == C.ACL_ERROR_INVALID_PARAM  # nothing pushed is left


def test_stream_from_another_context(acl, model_path):
    acl.init()
    acl.rt.set_device(0)
    model_id, _ = acl.mdl.load_from_file(model_path["mlp_head"])
    other_ctx, _ = acl.rt.create_context(1)
    stream, _ = acl.rt.create_stream()  # belongs to other_ctx
    acl.rt.set_device(0)  # back to device 0's default context
    ds = acl.mdl.create_dataset()
    assert acl.mdl.execute_async(model_id, ds, ds, stream) == C.ACL_ERROR_RT_STREAM_CONTEXT
    acl.rt.set_context(other_ctx)
    assert acl.mdl.execute_async(model_id, ds, ds, stream) == C.ACL_ERROR_INVALID_PARAM


def test_load_errors(acl, tmp_path):
    acl.init()
    acl.rt.set_device(0)
    assert (
        acl.mdl.load_from_file(os.fspath(tmp_path / "missing.json"))[1] == C.ACL_ERROR_INVALID_FILE
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert acl.mdl.load_from_file(os.fspath(bad))[1] == C.ACL_ERROR_PARSE_FILE
    bad.write_text(json.dumps({"name": "m", "inputs": [], "ops": [], "outputs": []}))
    assert acl.mdl.load_from_file(os.fspath(bad))[1] == C.ACL_ERROR_PARSE_FILE
    assert "non-empty" in acl.get_recent_err_msg()


def test_callback_misuse(acl):
    acl.init()
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    assert acl.rt.launch_callback(print, None, 0, stream) == C.ACL_ERROR_RT_STREAM_SUBSCRIBE
    assert acl.rt.process_report(0) == C.ACL_ERROR_RT_THREAD_SUBSCRIBE
    import threading

    me = threading.get_native_id()
    assert acl.rt.subscribe_report(me, stream) == 0
    assert acl.rt.subscribe_report(me, stream) == C.ACL_ERROR_RT_STREAM_SUBSCRIBE
    assert "aclrtSubscribeReport" in acl.get_recent_err_msg()
    assert acl.rt.subscribe_report(me, 0x1234) == C.ACL_ERROR_RT_INVALID_HANDLE
    assert acl.rt.process_report(10) == C.ACL_ERROR_RT_REPORT_TIMEOUT
    seen = []
    assert acl.rt.launch_callback(seen.append, "x", 0, stream) == 0
    assert acl.rt.process_report(1000) == 0 and seen == ["x"]
    assert acl.rt.unsubscribe_report(me + 1, stream) == C.ACL_ERROR_RT_STREAM_SUBSCRIBE
    assert "aclrtUnsubscribeReport" in acl.get_recent_err_msg()
    assert acl.rt.unsubscribe_report(me, stream) == 0
    assert acl.rt.process_report(0) == C.ACL_ERROR_RT_THREAD_SUBSCRIBE  # its last stream went


def test_step_info_records_training_trace(acl, tmp_path):
    acl.init()
    acl.rt.set_device(0)
    acl.prof.init(os.fspath(tmp_path))
    cfg = acl.prof.create_config([0], C.ACL_AICORE_NONE, 0, C.ACL_PROF_TRAINING_TRACE)
    assert acl.prof.start(cfg) == 0
    step = acl.prof.create_step_info()
    assert acl.prof.get_step_timestamp(step, C.ACL_STEP_START, 0) == 0
    assert acl.prof.get_step_timestamp(step, C.ACL_STEP_END, 0) == 0
    assert acl.prof.get_step_timestamp(step, 7, 0) == C.ACL_ERROR_INVALID_PARAM
    assert acl.prof.destroy_step_info(step) is None
    assert acl.prof.get_step_timestamp(step, C.ACL_STEP_END, 0) == C.ACL_ERROR_INVALID_PARAM
    assert acl.prof.stop(cfg) == 0
    (session,) = tmp_path.glob("PROF_*")
    tags = [
        json.loads(x)["tag"]
        for x in (session / "host/data/step_trace.jsonl").read_text().splitlines()
    ]
    assert tags == ["start", "end"]


def test_subscription_never_stalls_on_a_full_pipe(acl, model_path):
    from aclmon.sim import runtime as sim_runtime

    acl.init()
    model_id = _load(acl, model_path["resnet_tiny"])
    r, w = os.pipe()
    try:
        sub = acl.prof.create_subscribe_config(1, C.ACL_AICORE_PIPE_UTILIZATION, w)
        assert acl.prof.model_subscribe(model_id, sub) == 0
        desc = acl.mdl.create_desc()
        acl.mdl.get_desc(desc, model_id)
        ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
        for ds, size in (
            (ins, acl.mdl.get_input_size_by_index(desc, 0)),
            (outs, acl.mdl.get_output_size_by_index(desc, 0)),
        ):
            ptr, _ = acl.rt.malloc(size, 0)
            acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size))
        for _ in range(40):  # 480 records of 368 bytes: more than a 64 KiB pipe holds
            assert acl.mdl.execute(model_id, ins, outs) == 0
        assert sim_runtime.runtime().extras["prof"].dropped_records > 0
        assert acl.prof.model_un_subscribe(model_id) == 0
    finally:
        os.close(r)
    bad = acl.prof.create_subscribe_config(1, C.ACL_AICORE_PIPE_UTILIZATION, 9999)
    assert acl.prof.model_subscribe(model_id, bad) == C.ACL_ERROR_INVALID_PARAM
