"""A small msprof session directory as ``msprof --export`` leaves it, written by hand
in msprof's header and column order (docs/replay.md, "msprof's exported files").

``PROF_000001_20241203081225589_ABCDEFGHIJ/mindstudio_profiler_output/`` holds
one op_summary, one timeline and one msprof_tx file of one device: three operators
on stream 2 (a Conv2D with cube metrics, a Relu on the vector core, an AI CPU
Cast whose metrics are all N/A), one all-reduce whose task and stream are N/A, a
row without a start time, a MemcpyAsync task only the timeline has, an msproftx
range and a mark.
"""

from __future__ import annotations

import json
from pathlib import Path

SESSION = "PROF_000001_20241203081225589_ABCDEFGHIJ"
STAMP = "20241203081230"

OP_SUMMARY_HEADER = (
    "Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,"
    "Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Num,HF32 Eligible,"
    "Mix Block Num,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
    "Output Data Types,Output Formats,Context ID,aicore_time(us),aic_total_cycles,"
    "aic_mac_time(us),aic_mac_ratio,aic_scalar_time(us),aic_scalar_ratio,"
    "aic_mte1_time(us),aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,"
    "aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,aiv_time(us),"
    "aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,"
    "aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte3_time(us),aiv_mte3_ratio,"
    "aiv_icache_miss_rate,cube_utilization(%)"
)
_NA_AIC = ",".join(["N/A"] * 13)
_NA_AIV = ",".join(["N/A"] * 11)
# msprof ends each start time with a tab so that spreadsheets keep the digits.
OP_SUMMARY_ROWS = (
    "0,1,11,2,resnet/conv1/Conv2D,Conv2D,static,AI_CORE,1733212345678901.234\t,120.5,0,8,NO,0,"
    '"1,3,224,224;64,3,7,7",FLOAT16;FLOAT16,NC1HWC0;FRACTAL_Z,"1,64,112,112",FLOAT16,NC1HWC0,'
    "N/A,118.2,190000,80.1,0.678,5.2,0.044,20.0,0.169,30.5,0.258,4.1,0.035,0.001,"
    f"{_NA_AIV},71.3",
    "0,1,12,2,resnet/relu1/Relu,Relu,static,AI_VECTOR_CORE,1733212345679030.000\t,10.25,8.266,"
    '4,NO,0,"1,64,112,112",FLOAT16,NC1HWC0,"1,64,112,112",FLOAT16,NC1HWC0,N/A,'
    f"{_NA_AIC},9.9,16000,7.5,0.757,1.0,0.101,1.2,0.121,0.2,0.02,0.0,N/A",
    "0,1,13,2,resnet/cast/Cast,Cast,dynamic,AI_CPU,1733212345679050.500\t,33.0,9.25,N/A,N/A,"
    f'N/A,"1,1000",FLOAT,ND,"1,1000",FLOAT16,ND,N/A,{_NA_AIC},{_NA_AIV},N/A',
    "0,N/A,N/A,N/A,hcom_allReduce_1,hcom_allReduce,N/A,COMMUNICATION,"
    "1733212345679100.000\t,200.0,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,"
    f"{_NA_AIC},{_NA_AIV},N/A",
    "0,1,14,2,resnet/fc/MatMul,MatMul,static,AI_CORE,N/A,5.0,N/A,2,NO,0,N/A,N/A,N/A,N/A,"
    f"N/A,N/A,N/A,{_NA_AIC},{_NA_AIV},N/A",
)

TX_HEADER = (
    "Device_id,pid,tid,category,event_type,payload_type,payload_value,Start_time(us),"
    "End_time(us),message_type,message,domain,Device Start_time(us),Device End_time(us)"
)
TX_ROWS = (
    "host,4242,4243,0,start/end,0,0,1733212345678800.000\t,1733212345679400.000\t,0,step 1,"
    "default,N/A,N/A",
    "host,4242,4243,0,marker,0,0,1733212345679000.000\t,1733212345679000.000\t,0,checkpoint,"
    "default,N/A,N/A",
)

HARDWARE_PID = (4242 << 10) | (14 << 5) | 0
CANN_PID = (4242 << 10) | (7 << 5) | 31
TX_PID = (4242 << 10) | (6 << 5) | 31


def _meta(pid: int, name: str, label: str, sort: int) -> list[dict[str, object]]:
    return [
        {"name": "process_name", "pid": pid, "tid": 0, "ph": "M", "args": {"name": name}},
        {"name": "process_labels", "pid": pid, "tid": 0, "ph": "M", "args": {"labels": label}},
        {"name": "process_sort_index", "pid": pid, "tid": 0, "ph": "M",
         "args": {"sort_index": sort}},
    ]  # fmt: skip


def _task(name: str, ts: str, dur: float, task: int, task_type: str) -> dict[str, object]:
    return {
        "name": name, "pid": HARDWARE_PID, "tid": 2, "ts": ts, "dur": dur, "ph": "X",
        "args": {"Model Id": 1, "Task Type": task_type, "Physic Stream Id": 2, "Task Id": task,
                 "Batch Id": 0, "Subtask Id": 4294967295, "connection_id": 7},
    }  # fmt: skip


def timeline_events() -> list[dict[str, object]]:
    """msprof_*.json: a top-level array, metadata first, ``ts`` as strings."""
    return [
        *_meta(HARDWARE_PID, "Ascend Hardware", "NPU 0", 14),
        {"name": "thread_name", "pid": HARDWARE_PID, "tid": 2, "ph": "M",
         "args": {"name": "Stream 2"}},
        *_meta(CANN_PID, "CANN", "CPU", 7),
        *_meta(TX_PID, "python3", "CPU", 6),
        _task("resnet/conv1/Conv2D", "1733212345678901.234", 120.5, 11, "AI_CORE"),
        _task("resnet/relu1/Relu", "1733212345679030.000", 10.25, 12, "AI_VECTOR_CORE"),
        _task("resnet/cast/Cast", "1733212345679050.500", 33.0, 13, "AI_CPU"),
        _task("MemcpyAsync", "1733212345679300.000", 12.0, 15, "MEMCPY_ASYNC"),
        {"name": "AscendCL@aclmdlExecute", "pid": CANN_PID, "tid": 4243,
         "ts": "1733212345678850.000", "dur": 500.0, "ph": "X",
         "args": {"Thread Id": 4243, "Mode": "ACL_MODEL", "level": "acl", "id": "0",
                  "item_id": "0", "connection_id": 7}},
        {"name": "step 1", "pid": TX_PID, "tid": 4243, "ts": "1733212345678800.000",
         "dur": 600.0, "ph": "X",
         "args": {"Category": "0", "Payload_type": "0", "Payload_value": "0",
                  "Message_type": "0", "event_type": "start/end"}},
        {"name": "HostToDevice30064771072", "pid": CANN_PID, "tid": 4243, "ph": "s",
         "cat": "HostToDevice", "id": "30064771072", "ts": "1733212345678860.000"},
        {"name": "HostToDevice30064771072", "pid": HARDWARE_PID, "tid": 2, "ph": "f",
         "cat": "HostToDevice", "id": "30064771072", "ts": "1733212345678901.234", "bp": "e"},
        {"name": "HBM", "pid": HARDWARE_PID, "tid": 0, "ph": "C",
         "ts": "1733212345678900.000", "args": {"Read(MB/s)": 10.0}},
    ]  # fmt: skip


def op_summary_text() -> str:
    return "\n".join((OP_SUMMARY_HEADER, *OP_SUMMARY_ROWS)) + "\n"


def tx_text() -> str:
    return "\n".join((TX_HEADER, *TX_ROWS)) + "\n"


def write_session(root: Path) -> Path:
    """The session directory under ``root``; returns its output directory."""
    output = root / SESSION / "mindstudio_profiler_output"
    output.mkdir(parents=True)
    (output / f"op_summary_{STAMP}.csv").write_text(op_summary_text())
    (output / f"msprof_{STAMP}.json").write_text(json.dumps(timeline_events()))
    (output / f"msprof_tx_{STAMP}.csv").write_text(tx_text())
    (root / SESSION / "mindstudio_profiler_log").mkdir()
    (root / SESSION / "mindstudio_profiler_log" / "msprof_analysis_0.log").write_text("ok\n")
    return output
