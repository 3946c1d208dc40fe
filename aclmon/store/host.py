"""HostNpuSample folded into the state: the host's newest reading and each chip's history.

The snapshot inside the event comes from anyone who can publish or write a
recording, so it is checked field by field (``HostSnapshot.from_plain``); one
that fails is counted and its reason kept, and the state is left as it was.
A reading without chips (the back end failed or timed out) updates the state
line but keeps the last good reading and the histories, as the host source
itself does on screen. Histories are kept for the chips of the newest reading
only, each bounded, so neither a long session nor a hostile source grows them.
"""

from __future__ import annotations

from aclmon import events as ev
from aclmon.events.host import HostSnapshot
from aclmon.store.state import ChipHistory, HostNpus


def fold_host_npu_sample(npus: HostNpus, e: ev.HostNpuSample) -> None:
    try:
        snapshot = HostSnapshot.from_plain(e.snapshot)
    except ValueError as exc:
        npus.refused += 1
        npus.refused_reason = str(exc)
        return
    if e.host != npus.host:
        # Another machine's readings: its chips are not these chips.
        npus.chips.clear()
        npus.snapshot = None
        npus.host = e.host
    npus.samples += 1
    npus.latest = snapshot
    npus.agent_pids = frozenset(e.agent_pids)
    if not snapshot.devices and npus.snapshot is not None:
        return
    npus.snapshot = snapshot
    chips = npus.chips
    present = set()
    for device in snapshot.devices:
        present.add(device.key)
        history = chips.get(device.key)
        if history is None:
            history = chips[device.key] = ChipHistory()
        history.aicore_pct.append(device.aicore_pct)
        history.power_w.append(device.power_w)
        history.temp_c.append(device.temp_c)
        no_hbm = device.hbm_total_mb is None
        history.memory_used_mb.append(device.memory_used_mb if no_hbm else device.hbm_used_mb)
    for key in [key for key in chips if key not in present]:
        del chips[key]
