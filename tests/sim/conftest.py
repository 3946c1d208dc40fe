"""Fixtures for the simulated runtime: a fresh ``acl`` per test, models, dump reader."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import aclmon.sim
from aclmon.sim import config as sim_config
from aclmon.sim import runtime as sim_runtime

MODELS_DIR = Path(aclmon.sim.MODELS_DIR)


@pytest.fixture
def acl(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The sim as ``acl``, with no leftover configuration or session."""
    monkeypatch.delenv(sim_config.CONFIG_ENV, raising=False)
    monkeypatch.delenv(sim_config.FAULTS_ENV, raising=False)
    sim_config.reset_configuration()
    sim_config.configure(time_scale=0.0)
    module = aclmon.sim.install()
    yield module
    if sim_runtime.runtime() is not None:
        module.finalize()
    sim_config.reset_configuration()


@pytest.fixture
def model_path() -> dict[str, str]:
    return {p.stem: os.fspath(p) for p in MODELS_DIR.glob("*.json")}
