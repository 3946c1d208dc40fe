"""Shared helpers: a tiny model, acl.json files, and an event collector."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: float16 ND tensors, so that the device shape equals the logical shape.
MODEL = {
    "name": "tiny",
    "inputs": [{"name": "x", "dtype": "float16", "format": "ND", "shape": [4, 8]}],
    "weights": [{"name": "w", "dtype": "float16", "format": "ND", "shape": [8, 8]}],
    "ops": [
        {
            "name": "mm1",
            "type": "MatMul",
            "inputs": ["x", "w"],
            "outputs": [{"name": "y", "dtype": "float16", "format": "ND", "shape": [4, 8]}],
        },
        {
            "name": "add1",
            "type": "Add",
            "inputs": ["y", "y"],
            "outputs": [{"name": "z", "dtype": "float16", "format": "ND", "shape": [4, 8]}],
        },
        {
            "name": "relu1",
            "type": "Relu",
            "inputs": ["z"],
            "outputs": [{"name": "out", "dtype": "float16", "format": "ND", "shape": [4, 8]}],
        },
    ],
    "outputs": ["out"],
}

SIM_JOB = str(Path(__file__).with_name("sim_job.py"))


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(MODEL))
    return path


def write_acl_json(path: Path, **sections: Any) -> Path:
    path.write_text(json.dumps(sections))
    return path


class Collector:
    """Everything a subscriber received, with waiting helpers (timeouts, never wall-clock asserts)."""

    def __init__(self, subscriber: Any) -> None:
        self.subscriber = subscriber
        self.events: list[Any] = []

    def drain(self, timeout: float = 0.05) -> None:
        self.events.extend(self.subscriber.poll(100_000, timeout))

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.events if type(e) is cls]

    def wait_for(
        self, predicate: Callable[[list[Any]], Any], timeout: float = 20.0, what: str = ""
    ) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = predicate(self.events)
            if result:
                return result
            if time.monotonic() > deadline:
                kinds = sorted({type(e).__name__ for e in self.events})
                raise AssertionError(
                    f"timed out waiting for {what or predicate}; got kinds {kinds}"
                )
            self.drain(0.1)

    def wait_kind(self, cls: type, where: Callable[[Any], bool] = lambda e: True, **kw: Any) -> Any:
        def found(events: list[Any]) -> Any:
            return next((e for e in events if type(e) is cls and where(e)), None)

        return self.wait_for(found, what=cls.__name__, **kw)
