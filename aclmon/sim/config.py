"""Simulation control: device count, SoC, memory, seed, clock scale and fault rules.

This lives outside the ``acl`` namespace on purpose: a pyACL program cannot see
it, exactly as it cannot see the hardware it runs on. The settings come from
(later wins):

1. the defaults below (8 devices of a 910B-class SoC with 64 GiB HBM each);
2. the JSON file named by ``ACLMON_SIM_CONFIG``;
3. the fault rules in ``ACLMON_SIM_FAULTS`` (a JSON file path or inline JSON);
4. :func:`configure` called from Python before ``acl.init``.

The runtime reads the configuration when ``acl.init`` is called, so a change
takes effect at the next init. See docs/sim.md for every key.
"""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from aclmon.sim.faults import FaultRule, parse_fault_rules

CONFIG_ENV = "ACLMON_SIM_CONFIG"
FAULTS_ENV = "ACLMON_SIM_FAULTS"

GIB = 1 << 30


class SimConfigError(ValueError):
    """A simulation config file or fault rule is invalid (names the source)."""


@dataclass(frozen=True)
class SimConfig:
    """Everything about the simulated machine that is not part of the acl API."""

    device_count: int = 8
    soc_name: str = "Ascend910B2"
    hbm_bytes: int = 64 * GIB
    ai_core_count: int = 24
    vector_core_count: int = 48
    aicpu_core_count: int = 6
    l2_cache_bytes: int = 192 << 20
    #: wall-clock seconds per simulated device second; 0 = never wait for the device.
    time_scale: float = 1.0
    #: multiplies every operator's modelled duration (the demo uses it to look busy).
    cost_scale: float = 1.0
    seed: int = 0
    version: tuple[int, int, int] = (1, 15, 0)
    #: acl.rt.get_run_mode: ACL_HOST (1, a PCIe card in a server) or ACL_DEVICE (0, the
    #: program runs on the board's own CPU, as on an Atlas 200 DK).
    run_mode: int = 1
    #: .om path (as given, absolute, or file name) or model name -> model description.
    models: tuple[tuple[str, str], ...] = ()
    faults: tuple[FaultRule, ...] = field(default_factory=tuple)


#: SimConfig fields no settings key sets: facts of the simulated SoC, and the fault
#: rules (a key of their own, parsed by aclmon.sim.faults).
_FIXED = frozenset({"l2_cache_bytes", "version", "faults"})
#: settings key -> the SimConfig field it sets: each other field under its own name,
#: plus two shorter spellings. A value's type is that of the field's default.
_KEYS = {f.name: f.name for f in fields(SimConfig) if f.name not in _FIXED} | {
    "devices": "device_count",
    "hbm_gib": "hbm_bytes",
}
_DEFAULTS = SimConfig()

RUN_MODES = {"host": 1, "device": 0}

_lock = threading.Lock()
_override: dict[str, Any] = {}
_override_faults: tuple[FaultRule, ...] | None = None


def _apply(config: SimConfig, data: dict[str, Any], source: str) -> SimConfig:
    changes: dict[str, Any] = {}
    for key, value in data.items():
        if key == "faults":
            changes["faults"] = parse_fault_rules(value, source)
            continue
        if key not in _KEYS:
            raise SimConfigError(f"{source}: unknown key {key!r}")
        attr = _KEYS[key]
        kind = type(getattr(_DEFAULTS, attr))
        if key == "models":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and k and v for k, v in value.items()
            ):
                raise SimConfigError(f"{source}: models must map .om paths or names to files")
            changes["models"] = tuple(sorted(value.items()))
            continue
        if key == "run_mode":
            if value not in RUN_MODES:
                raise SimConfigError(f'{source}: run_mode must be "host" or "device"')
            changes[attr] = RUN_MODES[value]
            continue
        if kind is str:
            if not isinstance(value, str) or not value:
                raise SimConfigError(f"{source}: {key} must be a non-empty string")
            changes[attr] = value
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise SimConfigError(f"{source}: {key} must be a finite number")
        if key in ("hbm_gib", "hbm_bytes") and not 0 < value <= (
            4096 if key == "hbm_gib" else 4096 * GIB
        ):
            raise SimConfigError(f"{source}: {key} must be positive and at most 4 TiB")
        if key == "hbm_gib":
            changes[attr] = int(value * GIB)
        elif kind is int:
            if int(value) != value:
                raise SimConfigError(f"{source}: {key} must be an integer")
            changes[attr] = int(value)
        else:
            changes[attr] = float(value)
    config = replace(config, **changes)
    if not 1 <= config.device_count <= 64:
        raise SimConfigError(f"{source}: devices must be in [1, 64]")
    if config.hbm_bytes <= 0:
        raise SimConfigError(f"{source}: HBM size must be positive")
    if config.time_scale < 0 or config.cost_scale < 0:
        raise SimConfigError(f"{source}: time_scale and cost_scale must be >= 0")
    return config


def _read_json(text_or_path: str, source: str) -> Any:
    stripped = text_or_path.strip()
    if stripped.startswith(("{", "[")):
        text = stripped
    else:
        try:
            text = Path(stripped).read_text(encoding="utf-8")
        except OSError as exc:
            raise SimConfigError(f"{source}: cannot read {stripped!r}: {exc.strerror}") from None
        source = f"{source} ({stripped})"
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SimConfigError(f"{source}: invalid JSON: {exc}") from None


def configure(*, faults: list[dict[str, Any]] | None = None, **settings: Any) -> None:
    """Override settings from Python (tests, the demo); takes effect at the next acl.init.

    ``settings`` uses the config-file keys (``devices``, ``soc_name``, ``hbm_gib``,
    ``time_scale``, ``cost_scale``, ``seed``...); ``faults`` is a list of fault rules.
    """
    global _override_faults
    _apply(SimConfig(), settings, "aclmon.sim.configure")  # validate now, not at init
    with _lock:
        _override.update(settings)
        if faults is not None:
            _override_faults = parse_fault_rules(faults, "aclmon.sim.configure")


def reset_configuration() -> None:
    """Forget every :func:`configure` override."""
    global _override_faults
    with _lock:
        _override.clear()
        _override_faults = None


def load_config() -> SimConfig:
    """The effective configuration: defaults, then the env files, then overrides."""
    config = SimConfig()
    path = os.environ.get(CONFIG_ENV)
    if path:
        data = _read_json(path, CONFIG_ENV)
        if not isinstance(data, dict):
            raise SimConfigError(f"{CONFIG_ENV}: the file must hold a JSON object")
        config = _apply(config, data, CONFIG_ENV)
    faults_text = os.environ.get(FAULTS_ENV)
    if faults_text:
        data = _read_json(faults_text, FAULTS_ENV)
        if isinstance(data, dict) and "faults" in data:
            data = data["faults"]
        config = replace(config, faults=parse_fault_rules(data, FAULTS_ENV))
    with _lock:
        if _override:
            config = _apply(config, dict(_override), "aclmon.sim.configure")
        if _override_faults is not None:
            config = replace(config, faults=_override_faults)
    return config
