"""Rank identity in Hello: from the launcher's environment, old arrays still decode."""

from __future__ import annotations

import msgpack

from aclmon import events as ev
from aclmon.events.clock import rank_identity


def test_hccl_style_environment():
    env = {"RANK_ID": "3", "RANK_SIZE": "16", "DEVICE_ID": "3",
           "RANK_TABLE_FILE": "/etc/hccl_16p.json", "HCCL_CONNECT_TIMEOUT": "600", "HOME": "/x"}  # fmt: skip
    identity = rank_identity(env, ["train.py"])
    assert identity["rank"] == 3 and identity["rank_size"] == 16
    assert identity["device_id"] == 3 and identity["local_rank"] == -1
    assert identity["job"] == "hccl_16p"  # the rank table's name when no job is given
    assert identity["rank_env"] == {"RANK_ID": "3", "RANK_SIZE": "16", "DEVICE_ID": "3",
                                    "RANK_TABLE_FILE": "/etc/hccl_16p.json",
                                    "HCCL_CONNECT_TIMEOUT": "600"}  # fmt: skip


def test_torchrun_style_environment_and_explicit_job():
    env = {"RANK": "9", "WORLD_SIZE": "32", "LOCAL_RANK": "1", "ACLMON_JOB": "llm-pretrain"}
    identity = rank_identity(env, ["/opt/run/train.py", "--lr", "1"])
    assert (identity["rank"], identity["rank_size"], identity["local_rank"]) == (9, 32, 1)
    assert identity["job"] == "llm-pretrain"


def test_no_launcher_and_garbage_values():
    identity = rank_identity({"RANK_ID": "three", "DEVICE_ID": ""}, ["/opt/run/infer.py"])
    assert identity["job"] == "infer"
    assert identity["rank"] == -1 and identity["device_id"] == -1


def test_a_hello_without_the_rank_fields_still_decodes():
    old = msgpack.packb([1, 1, 2, 1, "0.1.0", 42, "node", ["job.py"], "sim", "Ascend910B1", 8])
    decoder = ev.EventDecoder()
    hello = decoder.decode_payload(old)
    assert isinstance(hello, ev.Hello) and decoder.malformed == 0
    assert (hello.job, hello.rank, hello.device_id, hello.rank_env) == ("", -1, -1, {})
    new = ev.Hello(1, 2, ev.SCHEMA_VERSION, "0.1.0", 42, "node", ("job.py",), "sim", "x", 8,
                   "train", 5, 8, 5, 5, {"RANK_ID": "5"})  # fmt: skip
    assert decoder.decode_payload(ev.encode(new)) == new
