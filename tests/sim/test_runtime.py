"""Devices, contexts, streams, events, memory accounting and the module surface."""

from __future__ import annotations

import os
import sys
import threading
import types

import numpy as np
import pytest

import aclmon.sim
from aclmon import acl_constants as C
from aclmon.sim import config as sim_config

GIB = 1 << 30


def test_module_surface(acl):
    assert acl.__aclmon_sim__ is True
    for sub in (acl.rt, acl.mdl, acl.prof, acl.util):
        assert isinstance(sub, types.ModuleType)
    assert not hasattr(acl, "ACL_FLOAT")  # pyACL registers functions only
    assert sys.modules["acl"] is acl
    acl.init()
    assert acl.get_version() == (1, 15, 0, 0)
    assert acl.get_soc_name() == "Ascend910B2"
    assert acl.rt.get_device_count() == (8, 0)
    assert acl.rt.get_run_mode() == (C.ACL_HOST, 0)


def test_configured_devices_and_soc(acl):
    sim_config.configure(devices=2, soc_name="Ascend910B4", hbm_gib=1)
    acl.init()
    assert acl.rt.get_device_count() == (2, 0)
    assert acl.get_soc_name() == "Ascend910B4"
    acl.rt.set_device(1)
    assert acl.rt.get_mem_info(C.ACL_HBM_MEM) == (GIB - GIB // 32, GIB, 0)  # 1/32 reserved


def test_memory_accounting_and_oom(acl):
    acl.init()
    acl.rt.set_device(0)
    free0, total, _ = acl.rt.get_mem_info(C.ACL_HBM_MEM)
    assert total == 64 * GIB and free0 == total - 2 * GIB  # the runtime keeps 1/32
    ptr, ret = acl.rt.malloc(40 * GIB, C.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0 and ptr
    free1, _, _ = acl.rt.get_mem_info(C.ACL_HBM_MEM)
    assert free0 - free1 == 40 * GIB + 32  # aclrtMalloc rounds to 32 and adds 32
    assert acl.rt.malloc(30 * GIB, 0) == (0, C.ACL_ERROR_RT_MEMORY_ALLOCATION)
    assert acl.rt.free(ptr) == 0
    assert acl.rt.get_mem_info(C.ACL_HBM_MEM)[0] == free0


def test_memcpy_roundtrip_and_memset(acl):
    acl.init()
    acl.rt.set_device(0)
    src = np.arange(64, dtype=np.float32)
    dev, _ = acl.rt.malloc(src.nbytes, 0)
    assert acl.rt.memcpy(dev, src.nbytes, acl.util.numpy_to_ptr(src), src.nbytes, 1) == 0
    dev2, _ = acl.rt.malloc(src.nbytes, 0)
    assert acl.rt.memcpy(dev2, src.nbytes, dev, src.nbytes, C.ACL_MEMCPY_DEVICE_TO_DEVICE) == 0
    assert acl.rt.memset(dev2, src.nbytes, 0, 16) == 0
    host, _ = acl.rt.malloc_host(src.nbytes)
    assert acl.rt.memcpy(host, src.nbytes, dev2 + 0, src.nbytes, 2) == 0
    back = np.frombuffer(acl.util.ptr_to_bytes(host, src.nbytes), dtype=np.float32)
    np.testing.assert_array_equal(back[4:], src[4:])
    assert not back[:4].any()
    assert acl.rt.memcpy(dev, 8, acl.util.numpy_to_ptr(src), 16, 1) == C.ACL_ERROR_INVALID_PARAM
    assert acl.rt.memcpy(host, 16, dev, 16, 1) == 0  # the kind is reserved: pointers decide
    assert acl.rt.free_host(host) == 0


def test_device_refcount_and_default_context(acl):
    acl.init()
    assert acl.rt.set_device(0) == 0
    assert acl.rt.set_device(0) == 0
    ctx, ret = acl.rt.get_context()
    assert ret == 0 and ctx
    assert acl.rt.get_device() == (0, 0)
    assert acl.rt.reset_device(0) == 0
    assert acl.rt.get_context() == (ctx, 0)  # still referenced once
    assert acl.rt.reset_device(0) == 0
    assert acl.rt.get_context()[1] == C.ACL_ERROR_RT_CONTEXT_NULL


def test_current_context_is_per_thread(acl):
    acl.init()
    ctx0, _ = acl.rt.create_context(0)
    ctx1, _ = acl.rt.create_context(1)
    seen = {}

    def worker() -> None:
        seen["before"] = acl.rt.get_context()[1]
        acl.rt.set_context(ctx0)
        seen["after"] = acl.rt.get_device()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == {"before": C.ACL_ERROR_RT_CONTEXT_NULL, "after": (0, 0)}
    assert acl.rt.get_context() == (ctx1, 0)


def test_streams_events_and_timeout(acl, model_path):
    sim_config.configure(time_scale=1.0, cost_scale=100.0)
    acl.init()
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream_with_config(0, C.ACL_STREAM_FAST_LAUNCH)
    stream_id, ret = acl.rt.stream_get_id(stream)
    assert ret == 0 and stream_id > 0
    model_id, _ = acl.mdl.load_from_file(model_path["mlp_head"])
    ins, outs = _datasets(acl, model_id)
    start, _ = acl.rt.create_event()
    end, _ = acl.rt.create_event()
    acl.rt.record_event(start, stream)
    assert acl.mdl.execute_async(model_id, ins, outs, stream) == 0
    acl.rt.record_event(end, stream)
    assert acl.rt.stream_query(stream) == (C.ACL_STREAM_STATUS_NOT_READY, 0)
    assert acl.rt.query_event_status(end) == (C.ACL_EVENT_RECORDED_STATUS_NOT_READY, 0)
    assert acl.rt.synchronize_stream_with_timeout(stream, 1) == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT
    assert acl.rt.synchronize_event(end) == 0
    assert acl.rt.query_event(end) == (C.ACL_EVENT_STATUS_COMPLETE, 0)
    elapsed, ret = acl.rt.event_elapsed_time(start, end)
    assert ret == 0 and elapsed > 1.0  # the modelled time, not the host's
    assert acl.rt.synchronize_stream(stream) == 0
    assert acl.rt.stream_query(stream) == (C.ACL_STREAM_STATUS_COMPLETE, 0)
    rate, ret = acl.rt.get_device_utilization_rate(0)
    assert ret == 0
    assert set(rate) == {
        "cube_utilization",
        "vector_utilization",
        "aicpu_utilization",
        "memory_utilization",
        "utilization_extend",
    }
    assert rate["cube_utilization"] > 0 and rate["memory_utilization"] == -1
    assert acl.rt.get_device_utilization_rate(1)[0]["cube_utilization"] == 0


def _datasets(acl, model_id):
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, model_id)
    datasets = []
    for count, size_of in (
        (acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index),
        (acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index),
    ):
        ds = acl.mdl.create_dataset()
        for i in range(count):
            size = size_of(desc, i)
            ptr, _ = acl.rt.malloc(size, 0)
            acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size))
        datasets.append(ds)
    return datasets


def test_wrappers_see_each_user_call_once(acl, model_path):
    """The agent replaces attributes; the sim's own code must not go through them."""
    calls: dict[str, int] = {}
    originals = {}
    for sub in (acl.rt, acl.mdl, acl.prof):
        for name, fn in list(vars(sub).items()):
            if callable(fn) and not name.startswith("_"):
                originals[(sub, name)] = fn

                def wrapper(*args, _fn=fn, _key=f"{sub.__name__}.{name}"):
                    calls[_key] = calls.get(_key, 0) + 1
                    return _fn(*args)

                setattr(sub, name, wrapper)
    try:
        acl.init()
        acl.rt.set_device(0)
        model_id, _ = acl.mdl.load_from_file(model_path["mlp_head"])
        ins, outs = _datasets(acl, model_id)
        acl.mdl.execute(model_id, ins, outs)
        acl.rt.reset_device(0)
    finally:
        for (sub, name), fn in originals.items():
            setattr(sub, name, fn)
    assert calls["acl.mdl.execute"] == 1
    assert calls["acl.rt.set_device"] == 1
    assert calls["acl.rt.reset_device"] == 1
    assert "acl.rt.synchronize_stream" not in calls
    assert calls["acl.rt.malloc"] == 2  # one input, one output


def test_exception_callback_that_raises_is_dropped(acl, model_path, capsys):
    sim_config.configure(
        faults=[{"kind": "aicore_exception", "op": "softmax", "model": "mlp_head"}]
    )
    acl.init()
    acl.rt.set_device(0)
    calls = []

    def bad_callback(info):
        calls.append(info)
        raise RuntimeError("boom")

    acl.rt.set_exception_info_callback(bad_callback)
    model_id, _ = acl.mdl.load_from_file(model_path["mlp_head"])
    ins, outs = _datasets(acl, model_id)
    assert acl.mdl.execute(model_id, ins, outs) == C.ACL_ERROR_RT_AICORE_EXCEPTION
    assert acl.mdl.execute(model_id, ins, outs) == C.ACL_ERROR_RT_AICORE_EXCEPTION
    assert len(calls) == 1
    assert "removed" in capsys.readouterr().err


def test_fault_nth_and_times(acl, model_path):
    sim_config.configure(
        faults=[{"kind": "aicore_exception", "op_type": "Relu", "every": 2, "times": 2}]
    )
    acl.init()
    acl.rt.set_device(0)
    model_id, _ = acl.mdl.load_from_file(model_path["mlp_head"])
    ins, outs = _datasets(acl, model_id)
    results = [acl.mdl.execute(model_id, ins, outs) for _ in range(6)]
    assert results == [0, C.ACL_ERROR_RT_AICORE_EXCEPTION, 0, C.ACL_ERROR_RT_AICORE_EXCEPTION, 0, 0]


def test_run_script_sets_argv_and_restores(acl, tmp_path):
    script = tmp_path / "prog.py"
    out = tmp_path / "out.txt"
    script.write_text(
        "import sys, acl\n"
        "open(sys.argv[2], 'w').write(repr((sys.argv[1], acl.__aclmon_sim__, __name__)))\n"
    )
    before = sys.argv[:]
    aclmon.sim.run_script(os.fspath(script), ["x", os.fspath(out)])
    assert out.read_text() == repr(("x", True, "__main__"))
    assert sys.argv == before


def test_bad_sim_config_fails_init_cleanly(acl, monkeypatch, capsys):
    monkeypatch.setenv(sim_config.FAULTS_ENV, '[{"kind": "explode", "op": "x"}]')
    assert acl.init() == C.ACL_ERROR_INVALID_PARAM
    assert "kind must be one of" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [{"devices": 0}, {"seed": "x"}, {"nope": 1}])
def test_configure_validates(bad):
    with pytest.raises(sim_config.SimConfigError):
        sim_config.configure(**bad)


def test_operator_costs_follow_their_work_and_launches_vary_a_little():
    """Not every op on one floor (the operator table would show identical rows): a
    bigger matmul costs more than a smaller one, and each launch varies within ±6 %,
    the same for the same task id."""
    from aclmon.sim.model import launch_jitter
    from aclmon.sim.model_description import TensorSpec, _op_cost_ns

    def matmul(m: int) -> int:
        a = TensorSpec("a", 1, 2, (m, m))
        b = TensorSpec("b", 1, 2, (m, m))
        return _op_cost_ns("MatMul", [a, b], [TensorSpec("c", 1, 2, (m, m))])

    assert matmul(16) < matmul(256) < matmul(4096)
    factors = {launch_jitter(task) for task in range(1, 200)}
    assert len(factors) > 150 and min(factors) >= 0.94 and max(factors) <= 1.06
    assert launch_jitter(42) == launch_jitter(42)
