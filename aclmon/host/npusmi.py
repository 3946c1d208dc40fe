"""The npu-smi back end: the host read through the ``npu-smi`` command.

A refresh runs ``npu-smi info`` (every chip and process in one table), and, for
what the table lacks (AI CPU, vector core and control CPU use, bandwidth),
``npu-smi info -t usages -i CARD`` per card. Per-card calls are slow on real
hosts (seconds for eight cards), so a live view asks one card per refresh in
turn (``details="rotate"``) and keeps each card's last answer; ``--once`` asks
every card (``details="all"``). ``npu-smi info -m`` (the ACL device id of each
chip) is asked once: the mapping does not change while the host runs.

Where npu-smi is: ``ACLMON_NPU_SMI`` (a path or a command line, such as
``python -m aclmon.sim.npu_smi``), else ``npu-smi`` on PATH, else
``/usr/local/bin`` and ``/usr/local/sbin`` (where containers bind-mount it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Literal

from aclmon.events.host import DeviceReading, HostSnapshot, ProcessReading, SourceName
from aclmon.host.npusmi_text import (
    MAX_WARNINGS,
    MappedChip,
    NpuSmiFormatError,
    parse_chip_values,
    parse_info,
    parse_mapping,
    usage_values,
    with_logic_ids,
)
from aclmon.host.processes import complete
from aclmon.host.tool import ToolError, ToolTimeout, run_tool

NPU_SMI_ENV = "ACLMON_NPU_SMI"
SEARCH_DIRS = ("/usr/local/bin", "/usr/local/sbin")
DEFAULT_TIMEOUT = 5.0

Details = Literal["all", "rotate", "none"]
Runner = Callable[[list[str], float], str]


def find_npu_smi(env: Mapping[str, str] | None = None) -> list[str] | None:
    """The command that runs npu-smi here, or None."""
    env = os.environ if env is None else env
    configured = env.get(NPU_SMI_ENV, "").strip()
    if configured:
        return shlex.split(configured)
    found = shutil.which("npu-smi", path=env.get("PATH"))
    if found:
        return [found]
    for directory in SEARCH_DIRS:
        candidate = os.path.join(directory, "npu-smi")
        if os.access(candidate, os.X_OK):
            return [candidate]
    return None


class NpuSmiBackend:
    """Reads the host through npu-smi; one :meth:`refresh` is one snapshot."""

    source: SourceName = "npu-smi"

    def __init__(
        self,
        command: list[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        details: Details = "rotate",
        runner: Runner = run_tool,
    ) -> None:
        self.command = command
        self.timeout = timeout
        self.details = details
        self._run = runner
        self._mapping: list[MappedChip] | None = None
        self._mapping_tried = False
        #: card -> chip -> the DeviceReading fields its last ``-t usages`` gave.
        self._usages: dict[int, dict[int, dict[str, int | None]]] = {}
        self._next_card = 0

    def close(self) -> None:
        """Nothing stays open between runs."""

    def refresh(self) -> HostSnapshot:
        started = time.monotonic()
        taken_ns = time.time_ns()
        warnings: list[str] = []
        try:
            table = parse_info(self._run([*self.command, "info"], self.timeout))
        except ToolTimeout as exc:
            return self._problem("timeout", str(exc), taken_ns, started)
        except (ToolError, NpuSmiFormatError) as exc:
            return self._problem("failed", str(exc), taken_ns, started)
        warnings.extend(table.warnings)
        devices = table.devices
        mapping = self._logic_mapping(warnings)
        if mapping is not None:
            devices = with_logic_ids(devices, mapping)
        devices = self._with_usages(devices, warnings)
        processes: tuple[ProcessReading, ...] | None = None
        if table.processes is not None:
            processes = complete(list(table.processes))
        return HostSnapshot(
            source="npu-smi",
            state="partial" if warnings else "ok",
            message=warnings[0] if warnings else None,
            devices=devices,
            processes=processes,
            version=f"npu-smi {table.tool_version}, driver {table.driver_version}",
            taken_ns=taken_ns,
            refresh_ms=(time.monotonic() - started) * 1000,
            warnings=tuple(warnings[:MAX_WARNINGS]),
        )

    def _problem(
        self, state: Literal["timeout", "failed"], message: str, taken_ns: int, started: float
    ) -> HostSnapshot:
        return HostSnapshot(
            source="npu-smi",
            state=state,
            message=message,
            devices=(),
            processes=None,
            taken_ns=taken_ns,
            refresh_ms=(time.monotonic() - started) * 1000,
        )

    def _logic_mapping(self, warnings: list[str]) -> list[MappedChip] | None:
        if not self._mapping_tried:
            self._mapping_tried = True
            try:
                self._mapping = parse_mapping(
                    self._run([*self.command, "info", "-m"], self.timeout)
                )
            except (ToolError, NpuSmiFormatError) as exc:
                warnings.append(f"no ACL device ids (npu-smi info -m): {exc}")
        return self._mapping

    def _cards_to_ask(self, cards: list[int]) -> list[int]:
        if self.details == "none" or not cards:
            return []
        if self.details == "all":
            return cards
        card = cards[self._next_card % len(cards)]
        self._next_card += 1
        return [card]

    def _with_usages(
        self, devices: tuple[DeviceReading, ...], warnings: list[str]
    ) -> tuple[DeviceReading, ...]:
        cards = sorted({device.npu_id for device in devices})
        for card in self._cards_to_ask(cards):
            args = [*self.command, "info", "-t", "usages", "-i", str(card)]
            try:
                chips = parse_chip_values(self._run(args, self.timeout))
            except ToolTimeout as exc:
                warnings.append(str(exc))
                break  # one slow card is enough: the others would stall the refresh too
            except (ToolError, NpuSmiFormatError) as exc:
                warnings.append(str(exc))
                continue
            self._usages[card] = {chip: usage_values(block) for chip, block in chips.items()}
        result = []
        for device in devices:
            values = self._usages.get(device.npu_id, {}).get(device.chip_id)
            if values:
                # The table's own AI Core figure stays: it is as fresh as this refresh.
                known = {k: v for k, v in values.items() if getattr(device, k) is None}
                device = replace(device, **known)  # type: ignore[arg-type]  # fields by name
            result.append(device)
        return tuple(result)
