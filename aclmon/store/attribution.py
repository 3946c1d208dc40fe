"""Which model execution raised an exception, when the exception does not say.

Agents of schema 4 and later name it in the AclException (``model_name``,
``execution``). A recording made by an older agent, or an exception its agent
could not place, has only the model load and execute events around it; the
store completes the exception from those, as the agent does:

* a synchronous ``mdl.execute`` running on the exception's device when the
  exception fired: the exception is noted as waiting, and the first End of a
  synchronous execute on that device whose span (its start to its end) holds
  the exception's time names it; its number is the model's executions counted
  with that End, exact because every earlier execution ended before it;
* otherwise the execution last launched on the exception's stream
  (``execute_async``, whose End precedes the failure it later causes).

An exception neither names keeps ``model_name`` empty; viewers say "–".

A model execution failed when its execute failed, when an exception is
attributed to it, or when the first synchronize of its stream after it was
launched failed (an ``execute_async`` whose error surfaces there) and no
exception had already named a failed execution of that stream since its last
successful synchronize (then the failed synchronize is that same failure); each
failed execution counts once in ``ModelState.failures``, wherever it surfaced
(:func:`note_failed_run`).
"""

from __future__ import annotations

from aclmon import events as ev
from aclmon.events import optypes
from aclmon.store.state import ModelState, StoreState, StreamState

#: exceptions waiting for the End of the synchronous execute that raised them
AWAITING_LIMIT = 256
#: how far back in the exception ring a waiting exception is looked for
SEARCH_LIMIT = 1024


def attribute_exception(
    s: StoreState, e: ev.AclException, stream: StreamState | None
) -> ev.AclException:
    """``e`` with the execution last launched on its stream, if it names none;
    noted as waiting for a synchronous execute's End either way."""
    if e.model_name:
        return e
    launch = stream.last_launch if stream is not None else None
    model = s.models.get(launch[0]) if launch is not None else None
    if launch is not None and model is not None:
        e = e._replace(model_name=model.name, execution=launch[1])
    s.awaiting_execution.append(e)
    del s.awaiting_execution[:-AWAITING_LIMIT]
    return e


def note_launch(stream: StreamState, model: ModelState) -> None:
    """An ``execute_async`` of ``model`` on ``stream`` ended (was queued): the
    failures the stream reports next are this execution's."""
    stream.last_launch = stream.unsynced_launch = (model.model_id, model.executions)


def synchronous_end(s: StoreState, model: ModelState, e: ev.ExecuteEnd) -> None:
    """A synchronous execute of ``model`` ended: the waiting exceptions that fired
    on its device while it ran were raised by it (its newest execution)."""
    start = e.ts_ns - e.duration_ns
    waiting = []
    for exc in s.awaiting_execution:
        if exc.device_id == model.device_id and start <= exc.ts_ns <= e.ts_ns:
            named = exc._replace(model_name=model.name, execution=model.executions)
            _replace_in_ring(s, exc, named)
            note_failed_run(model, model.executions)
        else:  # another device's, or another thread's execute may hold it
            waiting.append(exc)
    s.awaiting_execution = waiting


def learned_op_type(s: StoreState, op_name: str, op_type: str) -> None:
    """``op_name`` is an ``op_type`` (a timing, a dump's name, the CANN log said so):
    the exceptions of that operator that name no type take it, the newest first."""
    if not optypes.learn(s.op_types, op_name, op_type):
        return
    key = optypes.sanitize_op_name(op_name)
    ring = s.exceptions
    for index in range(len(ring) - 1, max(-1, len(ring) - 1 - SEARCH_LIMIT), -1):
        e = ring[index]
        if not e.op_type and e.op_name and optypes.sanitize_op_name(e.op_name) == key:
            ring[index] = e._replace(op_type=op_type)


def typed(s: StoreState, e: ev.AclException) -> ev.AclException:
    """``e`` with its op type: its own, else the one learned for its operator."""
    if e.op_type:
        learned_op_type(s, e.op_name, e.op_type)
        return e
    known = optypes.type_of(s.op_types, e.op_name)
    return e._replace(op_type=known) if known else e


def _replace_in_ring(s: StoreState, old: ev.AclException, new: ev.AclException) -> None:
    ring = s.exceptions
    for index in range(len(ring) - 1, max(-1, len(ring) - 1 - SEARCH_LIMIT), -1):
        if ring[index] is old:
            ring[index] = new
            return


def note_failed_run(model: ModelState, execution: int) -> None:
    """Execution ``execution`` of ``model`` failed; counted once however often it is
    reported (an exception, then the failed synchronize it causes)."""
    if execution > 0 and execution not in model.failed_runs:
        model.failed_runs.append(execution)
        model.failures += 1


def synchronized(s: StoreState, stream: StreamState, ret: int) -> None:
    """A synchronize of ``stream`` returned ``ret``: if it failed, so did the execution
    launched on it since its last successful one; either way that one is settled."""
    launch, stream.unsynced_launch = stream.unsynced_launch, None
    model = s.models.get(launch[0]) if launch is not None and ret != 0 else None
    if launch is not None and model is not None:
        note_failed_run(model, launch[1])


def failed_exception_run(s: StoreState, e: ev.AclException) -> bool:
    """``e`` names the execution that raised it: that execution failed. False when
    it names none (or a model the store cannot tell)."""
    if not e.model_name or e.execution <= 0:
        return False
    named = [
        m for m in s.models.values() if m.name == e.model_name and m.device_id in (e.device_id, -1)
    ]
    candidates = [m for m in named if m.loaded] or named
    if len(candidates) != 1:
        return False
    note_failed_run(candidates[0], e.execution)
    return True
