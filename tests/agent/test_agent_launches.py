"""Launch sites and the allocation table as the agent keeps them, in-process on the sim."""

from __future__ import annotations

import time

import pytest

from aclmon.agent.launches import LaunchSites, site_text


def launched_here(sites: LaunchSites, stream: int) -> int:
    """A launch hook's ring append, from this function (the caller's line is recorded)."""
    import sys

    frame = sys._getframe(0)
    ring = sites.rings.get(stream) or sites.new_ring(stream)
    launch = (time.perf_counter_ns(), "mdl.execute_async", frame.f_code, frame.f_lineno)
    ring.append(launch)
    return launch[3]


def test_the_newest_launch_before_the_failure_is_named():
    sites = LaunchSites(depth=4)
    lines = [launched_here(sites, 0xA0) for _ in range(6)]
    captured = time.perf_counter_ns()
    launched_here(sites, 0xA0)  # after the failure was captured: not it
    site, detail = sites.failing_launch([0xA0], captured)
    assert site.endswith(f":{lines[-1]} launched_here")
    assert len(sites.rings[0xA0]) == 4  # bounded
    assert detail["api"] == "mdl.execute_async"
    assert detail["recent"][detail["index"]]["site"] == site
    assert sites.failing_launch([0xB0], captured) == ("", {})
    sites.forget(0xA0)
    assert sites.failing_launch([0xA0], captured) == ("", {})


def test_site_text_is_relative_to_the_working_directory():
    code = test_site_text_is_relative_to_the_working_directory.__code__
    text = site_text(code, 12, cwd=code.co_filename.rsplit("/", 2)[0])
    assert text == f"agent/test_agent_launches.py:12 {code.co_name}"


@pytest.fixture
def agent_on_sim(tmp_path):
    import aclmon.sim
    from aclmon.agent.core import Agent
    from aclmon.sim import config

    config.reset_configuration()
    config.configure(time_scale=0.0)
    acl = aclmon.sim.install()
    agent = Agent(acl, address=str(tmp_path / "a.sock"), register=False).start()
    yield acl, agent
    agent.close(restore=True)
    if aclmon.sim.runtime.runtime() is not None:
        acl.finalize()
    config.reset_configuration()


def test_memcpy_async_notes_its_site_and_malloc_free_fill_the_table(agent_on_sim):
    acl, agent = agent_on_sim
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    device, _ = acl.rt.malloc(64, 0)
    host, _ = acl.rt.malloc_host(64)
    acl.rt.memcpy_async(device, 64, host, 64, 1, stream)  # line noted
    (launch,) = agent.hooks.launches.rings[stream]
    assert launch[1] == "rt.memcpy_async" and launch[2].co_name.startswith("test_memcpy")
    table = agent.hooks.memory.table
    finding = table.classify(device, 64)
    assert finding.status == "inside" and finding.allocation.site.endswith(launch[2].co_name)
    acl.rt.synchronize_stream(stream)
    assert acl.rt.free(device) == 0
    assert table.classify(device, 8).status == "freed"
