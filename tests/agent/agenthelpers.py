"""Shared helpers: a tiny model, acl.json files, and an event collector."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aclmon.acl_constants import ACL_ERROR_REPEAT_INITIALIZE

#: float16 ND tensors, so that the device shape equals the logical shape (shared with
#: the other test directories' jobs).
MODEL = json.loads((Path(__file__).parents[1] / "tiny_model.json").read_text())

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


class SimJob:
    """A job on the sim: device 0, a context, a stream and the tiny model (inputs non-zero)."""

    def __init__(self, acl: Any, model_file: Path, acl_json: str | None = None) -> None:
        self.acl = acl
        assert acl.init(acl_json) in (0, ACL_ERROR_REPEAT_INITIALIZE)
        assert acl.rt.set_device(0) == 0
        self.context, ret = acl.rt.create_context(0)
        assert ret == 0
        self.stream, ret = acl.rt.create_stream()
        assert ret == 0
        self.model_id, ret = acl.mdl.load_from_file(str(model_file))
        assert ret == 0
        desc = acl.mdl.create_desc()
        assert acl.mdl.get_desc(desc, self.model_id) == 0
        self.inputs = self._dataset(
            desc, acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index
        )
        self.outputs = self._dataset(
            desc, acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index
        )

    def _dataset(self, desc: int, count: int, size_of: Callable[[int, int], int]) -> int:
        acl = self.acl
        dataset = acl.mdl.create_dataset()
        for index in range(count):
            size = size_of(desc, index)
            pointer, ret = acl.rt.malloc(size, 0)
            assert ret == 0
            assert acl.rt.memset(pointer, size, 0x3C, size) == 0
            _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(pointer, size))
            assert ret == 0
        return dataset

    def run(self) -> int:
        """One asynchronous execution and the stream's synchronize; returns its code."""
        ret = self.acl.mdl.execute_async(self.model_id, self.inputs, self.outputs, self.stream)
        return ret or self.acl.rt.synchronize_stream(self.stream)


@pytest.fixture
def sim_acl(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The sim as ``acl``, fresh: no leftover configuration or session."""
    import aclmon.sim
    from aclmon.sim import config, runtime

    monkeypatch.delenv(config.CONFIG_ENV, raising=False)
    monkeypatch.delenv(config.FAULTS_ENV, raising=False)
    config.reset_configuration()
    config.configure(time_scale=0.0)
    module = aclmon.sim.install()
    yield module
    if runtime.runtime() is not None:
        module.finalize()
    config.reset_configuration()


@pytest.fixture
def agent_factory(tmp_path: Path, sim_acl: Any) -> Any:
    """Start agents on the sim (closed and unhooked at the end) with a connected subscriber."""
    from aclmon.agent.core import Agent
    from aclmon.bus.subscriber import Subscriber

    made: list[tuple[Any, Any]] = []

    def make(**options: Any) -> tuple[Any, Collector]:
        options.setdefault("address", str(tmp_path / f"agent{len(made)}.sock"))
        options.setdefault("register", False)
        options.setdefault("sample_interval", 0.1)
        options.setdefault("profiling_output", str(tmp_path / "prof"))
        agent = Agent(sim_acl, **options).start()
        subscriber = Subscriber(agent.address).start()
        made.append((agent, subscriber))
        assert subscriber.wait_connected(10), subscriber.state_reason
        return agent, Collector(subscriber)

    yield make
    for agent, subscriber in made:
        subscriber.close()
        agent.close(restore=True)
