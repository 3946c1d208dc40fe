"""A recording from an agent older than schema 4 has exceptions without the model and
execution that raised them: replay takes them from the model load and execute events
(the execution running when the exception fired), and says "–" where there are none."""

from __future__ import annotations

import msgpack
from recordings import T0
from test_replay_app import make_app, text_of, wait_for

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION as AICORE
from aclmon.bus.recording import RecordingReader, RecordingWriter
from aclmon.store import Store
from aclmon.store.replay import ReplayEngine, iter_recording_events
from aclmon.tui.views import ExceptionsView

MS = 1_000_000


def _old_session() -> list:
    """Schema 3: sync executes of resnet (the third raises), an async launch of mlp
    whose stream then reports an exception, and an exception no execution explains."""
    events: list = []

    def add(ms: float, cls, *fields):
        events.append(cls(len(events) + 1, T0 + int(ms * MS), *fields))

    add(0, ev.Hello, 3, "0.0.9", 4242, "node", ("job.py",), "sim", "Ascend910B1", 2)
    add(1, ev.ContextCreated, 0, 0xA0, True)
    add(2, ev.StreamCreated, 0, 0xA0, 0xB0, 3, 0, 0)
    add(3, ev.ModelLoaded, 1, 0, "resnet", 12)
    add(4, ev.ModelLoaded, 2, 0, "mlp", 4)
    for n in range(1, 5):  # synchronous: each End at 10 n ms, after 8 ms of running
        if n == 3:  # fired while execution 3 ran (its End comes after it)
            add(10 * n - 4, ev.AclException, 0, 0, 77, 1, AICORE, "conv1", "Conv2D", (), ())
        add(10 * n, ev.ExecuteEnd, 1, 0, 8 * MS, AICORE if n == 3 else 0)
    add(50, ev.ExecuteEnd, 2, 0xB0, MS, 0)  # execute_async of mlp on stream 3: queued
    add(55, ev.AclException, 0, 3, 91, 1, AICORE, "dense", "MatMul", (), ())
    add(60, ev.AclException, 1, 9, 5, 1, AICORE, "gather", "GatherV2", (), ())  # device 1
    add(70, ev.ExecuteEnd, 1, 0, 8 * MS, 0)  # resnet execution 5: holds none of them
    return events


def write_old_recording(path) -> None:
    """As an agent of schema 3 wrote it: exceptions end after ``outputs``."""
    with RecordingWriter(path, {"source": "test"}) as writer:
        for event in _old_session():
            if type(event) is ev.AclException:
                fields = tuple(event)[: len(event) - 2]
                writer.write_payload(msgpack.packb((ev.AclException.KIND, *fields)))
            else:
                writer.write(event)


def _named(store: Store) -> list[tuple[str, str, int]]:
    return [(e.op_name, e.model_name, e.execution) for e in store.state.exceptions]


def test_replay_names_the_execution_running_when_an_old_exception_fired(tmp_path):
    path = tmp_path / "old.aclmrec"
    write_old_recording(path)
    with RecordingReader(path, background=False) as reader:
        engine = ReplayEngine(reader, reader.path)
        decoded = list(iter_recording_events(engine))
        engine.frames.close()
    assert all(e.model_name == "" for e in decoded if type(e) is ev.AclException)
    store = Store()
    store.apply_many(decoded)
    assert _named(store) == [
        ("conv1", "resnet", 3),  # the synchronous execute running at its time
        ("dense", "mlp", 1),  # the execution last launched on its stream
        ("gather", "", 0),  # nothing ran on device 1: not known
    ]
    assert [m.executions for m in store.state.models.values()] == [5, 1]


async def test_replay_rows_and_detail_show_the_model_or_a_dash(tmp_path):
    path = tmp_path / "old.aclmrec"
    write_old_recording(path)
    app = make_app(path)
    async with app.run_test(size=(150, 44)) as pilot:
        await wait_for(pilot, lambda: app.engine.index.indexed)
        await pilot.press("E")
        await wait_for(pilot, lambda: not app.seeking)
        await pilot.press("2")
        await pilot.pause()
        view = app.query_one(ExceptionsView)
        rows = [view._render_row(n, 150).plain.split() for n in range(3)]
        # the operator, then its model and run (a column of its own)
        assert rows[0][5:9] == ["conv1", "resnet", "run", "3"]
        assert rows[1][5:9] == ["dense", "mlp", "run", "1"]
        assert rows[2][5:7] == ["gather", "–"]
        await pilot.press("end", "enter")
        await pilot.pause()
        title = text_of(app, "#detail-title")
        assert "GatherV2  gather  · model –" in title
