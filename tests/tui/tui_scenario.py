"""A fixed, deterministic session: the input of every TUI snapshot and pilot test.

Four devices with contexts and streams, a model running, exceptions with
tensors, profiling state with operator timings, dump and overflow files.
Timestamps and sequence numbers are fixed, so the screen is the same on
every run.
"""

from __future__ import annotations

from aclmon import events as ev
from aclmon.acl_constants import (
    ACL_AICORE_PIPE_UTILIZATION,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_RT_AICORE_OVER_FLOW,
    ACL_ERROR_RT_AICORE_TRAP_EXCEPTION,
    ACL_FLOAT,
    ACL_FLOAT16,
    ACL_FORMAT_FRACTAL_Z,
    ACL_FORMAT_NC1HWC0,
    ACL_FORMAT_ND,
    ACL_INT32,
    ACL_PROF_ACL_API,
    ACL_PROF_AICORE_METRICS,
    ACL_PROF_TASK_TIME,
)

T0 = 1_764_669_600_000_000_000  # 2025-12-02 10:00:00 UTC
DEVICES = 4
SOC = "Ascend910B1"
HBM_TOTAL = 64 * 1024**3


class _Builder:
    def __init__(self) -> None:
        self.seq = 0
        self.ts = T0
        self.events: list[ev.Event] = []

    def add(self, cls: type, *fields: object, dt_ms: int = 10) -> None:
        self.seq += 1
        self.ts += dt_ms * 1_000_000
        self.events.append(cls(self.seq, self.ts, *fields))


def context_handle(device: int) -> int:
    return 0x5500_0000 + device * 0x1000


def stream_handle(device: int, n: int) -> int:
    return 0x7700_0000 + device * 0x1000 + n * 0x10


def build_events() -> list[ev.Event]:
    b = _Builder()
    b.add(
        ev.Hello,
        ev.SCHEMA_VERSION,
        "0.1.0",
        4242,
        "node-a",
        ("python", "train.py"),
        "sim",
        SOC,
        DEVICES,
    )
    for device in range(DEVICES):
        b.add(ev.DeviceSet, device, 0)
        b.add(ev.ContextCreated, device, context_handle(device), True)
        b.add(ev.ContextCurrent, context_handle(device), 100 + device)
        for n in range(3):
            b.add(
                ev.StreamCreated,
                device,
                context_handle(device),
                stream_handle(device, n),
                device * 8 + n,
                0,
                0,
            )
    # A second, explicit context on device 0 with one stream.
    b.add(ev.ContextCreated, 0, 0x5600_0000, False)
    b.add(ev.StreamCreated, 0, 0x5600_0000, 0x7800_0000, 7, 1, 0)
    b.add(ev.ModelLoaded, 1, 0, "resnet50_bs32", 187)
    b.add(ev.ModelLoaded, 2, 1, "bert_base_seq128", 412)

    # One minute of samples, one every second, so the sparklines have shape.
    for step in range(60):
        for device in range(DEVICES):
            wave = (step * (device + 3) * 7) % 100
            b.add(
                ev.DeviceSample, device, wave, -1 if device == 3 else (wave // 2), (step * 3) % 20,
                (8 + device * 6 + step % 5) * 1024**3, HBM_TOTAL,
                "Alarm" if device == 2 and step > 50 else "OK", 38.0 + device, 180.0 + device * 20,
                dt_ms=1,
            )  # fmt: skip
        b.add(ev.HostSample, 20.0 + (step % 10) * 3.5, 3 * 1024**3 + step * 1024**2, 24, dt_ms=1)
        # Model 1 runs on device 0 stream 0; model 2 on device 1 stream 1.
        b.add(ev.ExecuteBegin, 1, stream_handle(0, 0), 0, dt_ms=100)
        b.add(ev.ExecuteEnd, 1, stream_handle(0, 0), 41_500_000, 0, dt_ms=400)
        last_run_ns = b.ts - 41_500_000
        b.add(ev.ExecuteBegin, 2, stream_handle(1, 1), 1, dt_ms=1)
        b.add(ev.ExecuteEnd, 2, stream_handle(1, 1), 88_000_000, 0, dt_ms=480)

    # Left in a state: model 1 busy on device 0 stream 0, device 1 stream 2 synchronizing.
    b.add(ev.ExecuteBegin, 1, stream_handle(0, 0), 0)
    b.add(ev.StreamSyncBegin, stream_handle(1, 2), 101)
    b.add(ev.StreamSyncBegin, stream_handle(2, 0), 102)
    b.add(ev.StreamSynchronized, stream_handle(2, 0), 5_000_000_000, 507046, 5000)
    b.add(ev.StreamSyncBegin, stream_handle(3, 1), 103)
    b.add(ev.StreamSynchronized, stream_handle(3, 1), 2_350_000, 0, -1)

    ops = [
        ("resnet50/conv1/Conv2D", "Conv2D", 412),
        ("resnet50/layer1/0/conv2/Conv2D", "Conv2D", 233),
        ("resnet50/layer4/2/bn3/BNInferenceD", "BNInferenceD", 64),
        ("resnet50/fc/MatMulV2", "MatMulV2", 97),
        ("resnet50/layer2/1/relu/Relu", "Relu", 12),
        ("resnet50/avgpool/ReduceMeanD", "ReduceMeanD", 31),
        ("trans_Cast_17", "Cast", 5),
    ]
    # aclmon's live operator timings run; the next start is configured for files.
    b.add(ev.ProfilingState, False, True, 0, ACL_AICORE_PIPE_UTILIZATION, (0, 1), "", "aclmon",
          True, ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS,
          ACL_AICORE_PIPE_UTILIZATION, (0, 1))  # fmt: skip
    # The operators of model 1's last run, one after the other on its stream.
    start_us = (last_run_ns + 100_000) // 1000
    for rep in range(8):
        for name, op_type, base_us in ops:
            duration = base_us + (rep * 7) % 13
            b.add(ev.OpTiming, 1, name, op_type, start_us, start_us + duration, duration, dt_ms=1)
            start_us += duration + 3

    conv_in = (
        ev.TensorDesc(ACL_FLOAT16, ACL_FORMAT_NC1HWC0, (32, 4, 224, 224, 16), 0x12C0_0000_0000, 205_520_896, "x"),
        ev.TensorDesc(ACL_FLOAT16, ACL_FORMAT_FRACTAL_Z, (196, 4, 16, 16), 0x12C0_0C40_0000, 401_408, "filter"),
    )  # fmt: skip
    conv_out = (
        ev.TensorDesc(
            ACL_FLOAT16,
            ACL_FORMAT_NC1HWC0,
            (32, 4, 112, 112, 16),
            0x12C0_1000_0000,
            51_380_224,
            "y",
        ),
    )
    matmul_in = (
        ev.TensorDesc(ACL_FLOAT, ACL_FORMAT_ND, (32, 2048), 0x12C2_0000_0000, 262_144, "x1"),
        ev.TensorDesc(ACL_FLOAT, ACL_FORMAT_ND, (2048, 1000), 0x12C2_0004_0000, 8_192_000, "x2"),
    )  # fmt: skip
    matmul_out = (
        ev.TensorDesc(ACL_FLOAT, ACL_FORMAT_ND, (32, 1000), 0x12C2_0080_0000, 128_000, "y"),
    )
    gather_in = (ev.TensorDesc(ACL_INT32, ACL_FORMAT_ND, (128,), 0x12C3_0000_0000, 512, "indices"),)
    for n in range(6):
        b.add(ev.AclException, 0, 0, 1000 + n, 100, ACL_ERROR_RT_AICORE_EXCEPTION,
              "resnet50/conv1/Conv2D", "Conv2D", conv_in, conv_out, "resnet50", 41 + n,
              dt_ms=700)  # fmt: skip
    b.add(ev.AclException, 0, 6, 2001, 100, ACL_ERROR_RT_AICORE_OVER_FLOW,
          "resnet50/fc/MatMulV2", "MatMulV2", matmul_in, matmul_out, "resnet50", 47)  # fmt: skip
    b.add(ev.AclException, 1, 9, 37, 101, ACL_ERROR_RT_AICORE_TRAP_EXCEPTION,
          "bert/embeddings/GatherV2", "", gather_in, ())  # fmt: skip

    b.add(ev.DumpFileSeen, "/var/dump/20251202100000/0/resnet50/1/0/MatMulV2.resnet50_fc_MatMulV2.2001.6.1764669648123456",
          "op-dump", 8_582_400, {"kind": "op-dump", "op_type": "MatMulV2", "op_name": "resnet50/fc/MatMulV2",
                                 "task_id": 2001, "stream_id": 6})  # fmt: skip
    overflow_record = {
        "DHA Atomic Add": {"model_id": 0, "stream_id": 0, "task_id": 0, "task_type": 0, "pc_start": "0x0", "para_base": "0x0", "status": 0},
        "L2 Atomic Add": {"model_id": 0, "stream_id": 0, "task_id": 0, "task_type": 0, "pc_start": "0x0", "para_base": "0x0", "status": 0},
        "AI Core": {"model_id": 1, "stream_id": 6, "task_id": 2001, "task_type": 0, "pc_start": "0x12c000a0", "para_base": "0x12c001f0", "kernel_code": "0x12c000a0", "block_idx": 3, "status": 32},
    }  # fmt: skip
    b.add(ev.DumpFileSeen, "/var/dump/20251202100000/0/resnet50/1/0/Opdebug.Node_OpDebug.2002.6.1764669648123999",
          "overflow", 2_460, {"kind": "overflow", "records": [
              {"output": 0, "record": overflow_record,
               "explained": ["AI Core: floating-point computation overflow (0x020)"]}],
              # the operator the record points at, named by its dump beside the file
              "task_id": 2001, "stream_id": 6, "op_type": "MatMulV2",
              "op_name": "resnet50/fc/MatMulV2",
              "op_dump": "/var/dump/20251202100000/0/resnet50/1/0/MatMulV2.resnet50_fc_MatMulV2.2001.6.1764669648123456"})  # fmt: skip
    b.add(ev.DumpFileSeen, "/var/dump/20251202100000/0/resnet50/1/0/Conv2D.resnet50_conv1_Conv2D.1005.0.1764669648200000",
          "op-dump", 257_302_528, {"kind": "op-dump", "op_type": "Conv2D", "task_id": 1005, "stream_id": 0})  # fmt: skip
    b.add(ev.Drops, 0, "publisher", "queue full")
    b.add(ev.LogLine, "warning", "device 2 health Alarm")
    return b.events


#: the last Conv2D exception's triage, shaped as the agent sends it (docs/triage.md):
#: a use after free found against the job's allocations, launched from train.py
CONV_TRIAGE: dict[str, object] = {
    "verdict": "use after free: Conv2D read input[1] (filter) at 0x12c00c400000, in memory"
    " freed at 10:00:05.120 by rt.free at train.py:141 release_weights before the kernel ran",
    "cause": "use_after_free",
    "error_code": ACL_ERROR_RT_AICORE_EXCEPTION,
    "error_name": "ACL_ERROR_RT_AICORE_EXCEPTION",
    "op_name": "resnet50/conv1/Conv2D",
    "op_type": "Conv2D",
    "kernel": "te_conv2d_3f1c9a_mix_aic",
    "bits": [23],
    "error_bits": [
        "bit 23 MTE_BIU_RDWR_RESP: the MTE touched an invalid GM address, or a cross-device"
        " access timed out",
        "mte_err_type=010: read bus error (secure/non-secure mismatch, no response, atomic fault)",
    ],
    "error_str": "The DDR address of the MTE instruction is out of range.",
    "address_findings": [
        {
            "role": "input",
            "index": 1,
            "name": "filter",
            "address": "0x12c00c400000",
            "size": 401_408,
            "status": "freed",
            "offending": True,
            "overrun": 0,
            "text": "input[1] filter 0x12c00c400000+401408: in freed memory (0x12c00c400000+401408,"
            " freed at 10:00:05.120 by rt.free at train.py:141 release_weights)",
        },
        {
            "role": "input",
            "index": 0,
            "name": "x",
            "address": "0x12c000000000",
            "size": 205_520_896,
            "status": "inside",
            "offending": False,
            "overrun": 0,
            "text": "input[0] x: inside",
        },
        {
            "role": "output",
            "index": 0,
            "name": "y",
            "address": "0x12c010000000",
            "size": 51_380_224,
            "status": "unknown",
            "offending": False,
            "overrun": 0,
            "text": "output[0] y: unknown",
        },
    ],
    "nan_inf_inputs": [],
    "repro": "/var/log/npu/collect/extra-info/aclmon-repro/Conv2D_resnet50_conv1_Conv2D_1005/repro.py",
    "dump_file": "/var/log/npu/collect/extra-info/data-dump/0/exception_info.resnet50_conv1_Conv2D.1005.1764669604200000",
    "sources": ["exception callback", "device error lines", "exception dump", "allocation table"],
    "notes": [],
    "device": {
        "serial": 1005,
        "device_id": 0,
        "stream_id": 0,
        "task_id": 1005,
        "core_type": "aicore",
        "core_ids": [7],
        "pc_start": "0x12c040007000",
        "current_pc": "0x12c0400072c4",
        "ret_code": "0x26",
        "ret_text": "aicore exception",
    },
    "launch": {
        "api": "mdl.execute_async",
        "recent": [
            {"api": "rt.memcpy_async", "site": "train.py:97 load_batch", "ago_ns": 3_912_000},
            {"api": "mdl.execute_async", "site": "train.py:104 train_step", "ago_ns": 3_120_000},
            {"api": "rt.memcpy_async", "site": "train.py:109 train_step", "ago_ns": 1_880_000},
        ],
        "index": 1,
        "stack": [
            "train.py:104 train_step",
            "train.py:152 main",
            "train.py:160 <module>",
            "<frozen runpy>:88 _run_code",
            "/usr/lib/aclmon/agent/runner.py:38 run_script",
        ],
    },
}


def build_triage_events() -> list[ev.Event]:
    """The scenario with the last Conv2D exception (task 1005) launched from train.py
    and triaged (:data:`CONV_TRIAGE`) 5 ms after it, as a live agent sends them."""
    out: list[ev.Event] = []
    for event in build_events():
        if isinstance(event, ev.AclException) and event.task_id == 1005:
            event = event._replace(launch_site="train.py:104 train_step")
            out.append(event)
            out.append(
                ev.Triage(
                    0,
                    event.ts_ns + 5_000_000,
                    event.device_id,
                    event.stream_id,
                    event.task_id,
                    event.ts_ns,
                    CONV_TRIAGE,
                )
            )
        else:
            out.append(event)
    return [event._replace(seq=number) for number, event in enumerate(out, start=1)]


#: operator names of a 12-layer BERT encoder, as TensorFlow's BERT names them
BERT = [
    f"bert/encoder/layer_{layer}/attention/self/{part}/MatMul"
    for layer in range(12)
    for part in ("query", "key", "value")
] + [
    f"bert/encoder/layer_{layer}/attention/output/dense/MatMul" for layer in range(12)
] + ["bert/embeddings/GatherV2", "bert/pooler/dense/Tanh"]  # fmt: skip
#: the operators that fail in :func:`bert_events`: two differ only in the layer
BERT_FAILING = (
    "bert/encoder/layer_1/attention/self/query/MatMul",
    "bert/encoder/layer_11/attention/self/query/MatMul",
    "bert/encoder/layer_11/attention/self/key/MatMul",
    "bert/encoder/layer_1/attention/output/dense/MatMul",
    "bert/encoder/layer_0/attention/self/value/MatMul",
    "bert/embeddings/GatherV2",
)


def bert_events() -> list[ev.Event]:
    """The scenario and, later, a BERT-shaped job's failures: exceptions in operators
    whose names differ only in the layer, their dumps and log lines, and overflow
    records over several steps (two in some), on two processes' logs."""
    events = build_events()
    seq = max(e.seq for e in events)
    for n, name in enumerate(BERT_FAILING):
        seq += 1
        events.append(
            ev.AclException(seq, T0 + (90 + n) * 10**9, n % 4, 12, 4000 + n, 77,
                            ACL_ERROR_RT_AICORE_EXCEPTION, name, "MatMul", (), (),
                            "bert_base_seq128", 1200 + n)
        )  # fmt: skip
        seq += 1
        step = f"/dump/20251202100000/{n % 4}/bert_base_seq128/2/{10 * n}"
        events.append(
            ev.DumpFileSeen(seq, T0 + (90 + n) * 10**9 + 1, f"{step}/MatMul.x.{4000 + n}.12.1",
                            "op-dump", 4096 * (n + 1),
                            {"kind": "op-dump", "op_type": "MatMul", "op_name": name})
        )  # fmt: skip
        if n % 2 == 0:  # overflow records: one a step, two in every other step
            for k in range(1 + n % 4 // 2):
                seq += 1
                events.append(
                    ev.DumpFileSeen(seq, T0 + (90 + n) * 10**9 + 3 + k,
                                    f"{step}/Opdebug.Node_OpDebug.{4100 + n + k}.12.{n}{k}",
                                    "overflow", 2_460,
                                    {"kind": "overflow", "op_type": "MatMul", "op_name": name,
                                     "task_id": 4000 + n, "stream_id": 12, "records": [
                                         {"output": 0, "explained": [
                                             "AI Core: floating-point computation overflow (0x020)"
                                         ]}]})
                )  # fmt: skip
        seq += 1
        events.append(
            ev.LogLine(seq, T0 + (90 + n) * 10**9 + 2, "error", f"aicore error in {name}",
                       "RUNTIME", 4242 + n % 2, "python", T0 + (90 + n) * 10**9, "stream.cc:1")
        )  # fmt: skip
    return events
