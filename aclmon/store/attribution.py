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
"""

from __future__ import annotations

from aclmon import events as ev
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
    stream.last_launch = (model.model_id, model.executions)


def synchronous_end(s: StoreState, model: ModelState, e: ev.ExecuteEnd) -> None:
    """A synchronous execute of ``model`` ended: the waiting exceptions that fired
    on its device while it ran were raised by it (its newest execution)."""
    start = e.ts_ns - e.duration_ns
    waiting = []
    for exc in s.awaiting_execution:
        if exc.device_id == model.device_id and start <= exc.ts_ns <= e.ts_ns:
            named = exc._replace(model_name=model.name, execution=model.executions)
            _replace_in_ring(s, exc, named)
        else:  # another device's, or another thread's execute may hold it
            waiting.append(exc)
    s.awaiting_execution = waiting


def _replace_in_ring(s: StoreState, old: ev.AclException, new: ev.AclException) -> None:
    ring = s.exceptions
    for index in range(len(ring) - 1, max(-1, len(ring) - 1 - SEARCH_LIMIT), -1):
        if ring[index] is old:
            ring[index] = new
            return
