"""The agent learns an operator's type from every source the runtime gives: here a
real .om with no description beside it (the CANN log's [AIC_INFO] line names the
type), and a sidecar-only model (named by its description)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

from agenthelpers import MODEL, SimJob, agent_factory, sim_acl

from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION
from aclmon.events import AclException, LogLine, ModelLoaded
from aclmon.sim import config
from aclmon.store import Store

__all__ = ["agent_factory", "sim_acl"]  # fixtures, imported for pytest


def _real_om(path: Path, name: str) -> None:
    """The 256-byte header of a real .om (GE's ModelFileHeader), nothing after it."""
    header = bytearray(256)
    struct.pack_into("<III", header, 0, 0x444F4D49, 256, 0x10000000)
    header[84 : 84 + len(name)] = name.encode()
    path.write_bytes(bytes(header) + bytes(16))


def test_a_real_om_gets_its_types_from_the_cann_log(agent_factory, sim_acl, tmp_path):
    description = tmp_path / "described.json"
    description.write_text(json.dumps(MODEL))
    om = tmp_path / "tiny.om"
    _real_om(om, "tiny")
    config.configure(
        time_scale=0.0,
        models={"tiny": str(description)},  # the header's name maps it: no sidecar
        faults=[{"kind": "aicore_exception", "op": "add1"}],
    )
    agent, events = agent_factory()
    job = SimJob(sim_acl, om)
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    first = events.wait_kind(AclException)
    assert (first.op_name, first.op_type) == ("add1", "")  # nothing named it yet
    events.wait_kind(LogLine, lambda e: "AIC_INFO" in e.text)
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    second = events.wait_kind(
        AclException, lambda e: e.task_id != first.task_id or e.seq > first.seq
    )
    assert second.op_type == "Add"  # the agent learned it from the log line
    store = Store()
    store.apply_many(events.events)
    assert [e["op_type"] for e in store.to_json()["exceptions"]["recent"]] == ["Add", "Add"]
    assert not agent.failures


def test_a_sidecar_only_model_is_named_by_its_description(agent_factory, sim_acl, tmp_path):
    om = tmp_path / "head.om"  # never written: the simulator loads the description
    Path(f"{om}.json").write_text(json.dumps(MODEL))
    assert not os.path.exists(om)
    config.configure(time_scale=0.0, faults=[{"kind": "aicore_exception", "op": "add1"}])
    _agent, events = agent_factory()
    job = SimJob(sim_acl, om)
    loaded = events.wait_kind(ModelLoaded)
    assert (loaded.name, loaded.op_count) == ("tiny", 3)
    assert job.run() == ACL_ERROR_RT_AICORE_EXCEPTION
    assert events.wait_kind(AclException).op_type == "Add"
