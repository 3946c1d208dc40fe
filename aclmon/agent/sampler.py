"""Periodic samples of the devices in use and of the job's host process.

Runs on the agent's control thread. ``get_mem_info`` reports on the device of
the calling thread's current context, so the sampler makes one of the job's
live contexts on that device current *on its own thread* first (current
contexts are per thread: the job's threads are not affected).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aclmon.acl_constants import (
    ACL_DDR_MEM,
    ACL_DEVICE_STATUS_NORMAL,
    ACL_HBM_MEM,
    ACL_SUCCESS,
    DEVICE_UTILIZATION_NOT_SUPPORT,
)
from aclmon.events import DeviceSample, HostSample

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext, DeviceBinder


def _percent(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) else DEVICE_UTILIZATION_NOT_SUPPORT


class Sampler:
    """Samples the host process and each device in use; uses the context and the
    device binder (to make a context of the device current on its own thread)."""

    def __init__(self, ctx: AgentContext, binder: DeviceBinder) -> None:
        self.ctx = ctx
        self.binder = binder
        self._process = None
        try:
            import psutil

            self._process = psutil.Process()
            self._process.cpu_percent(None)  # the first call only sets the baseline
        except Exception as exc:
            ctx.fail("host sampler", exc)

    def sample(self) -> None:
        self.sample_host()
        for device in self.ctx.state.devices_in_use():
            try:
                self.sample_device(device)
            except Exception as exc:
                self.ctx.fail("device sampler", exc)

    def sample_host(self) -> None:
        process = self._process
        if process is None:
            return
        try:
            with process.oneshot():
                cpu = float(process.cpu_percent(None))
                rss = int(process.memory_info().rss)
                threads = int(process.num_threads())
        except Exception as exc:  # psutil.Error (process gone) or an OS quirk
            self.ctx.fail("host sampler", exc)
            return
        self.ctx.emit(HostSample, cpu, rss, threads)

    def sample_device(self, device: int) -> None:
        ctx = self.ctx
        rt = ctx.acl.rt
        cube = vector = aicpu = DEVICE_UTILIZATION_NOT_SUPPORT
        rate = getattr(rt, "get_device_utilization_rate", None)
        if rate is not None:
            info, ret = rate(device)
            if ret == ACL_SUCCESS and isinstance(info, dict):
                cube = _percent(info.get("cube_utilization"))
                vector = _percent(info.get("vector_utilization"))
                aicpu = _percent(info.get("aicpu_utilization"))
        used = total = 0
        if self.binder.bind(device):
            for attr in (ACL_HBM_MEM, ACL_DDR_MEM):  # 310-class devices have DDR, not HBM
                free, total_bytes, ret = rt.get_mem_info(attr)
                if ret == ACL_SUCCESS and total_bytes > 0:
                    used, total = int(total_bytes - free), int(total_bytes)
                    break
        health = "OK"
        query = getattr(rt, "query_device_status", None)
        if query is not None:
            status, ret = query(device)
            if ret == ACL_SUCCESS and status != ACL_DEVICE_STATUS_NORMAL:
                health = "Alarm"
        ctx.emit(DeviceSample, device, cube, vector, aicpu, used, total, health, None, None)
