"""``--once``'s connect loop (:func:`aclmon.sources.once.connect`) against a
reader that is ready a moment before it says connected, as a fleet feed that
replays a short history is: its last replayed message (nothing pending) can be
taken in before its subscribe call has returned."""

from __future__ import annotations

import pytest

from aclmon.bus.states import AUTH_FAILED, CONNECTED, CONNECTING, DISCONNECTED
from aclmon.errors import AclmonError
from aclmon.sources.once import connect


class ScriptedReader:
    """A reader whose state follows ``states``, one step per fold; ready from the start."""

    description = "nats://127.0.0.1:4222/train"

    def __init__(self, states: list[str], reason: str = "") -> None:
        self._states = states
        self.folds = 0
        self.state_reason = reason

    @property
    def state(self) -> str:
        return self._states[min(self.folds, len(self._states) - 1)]

    def start(self) -> None:
        pass

    def fold(self) -> None:
        self.folds += 1


def test_ready_before_connected_waits_for_connected() -> None:
    reader = ScriptedReader([CONNECTING, CONNECTING, CONNECTING, CONNECTED])
    connect(reader, reader.fold, connect_timeout=10, ready=lambda: True)
    assert reader.state == CONNECTED
    assert reader.folds == 3


def test_ready_and_connected_at_once_does_not_fold() -> None:
    reader = ScriptedReader([CONNECTED])
    connect(reader, reader.fold, connect_timeout=10, ready=lambda: True)
    assert reader.folds == 0


@pytest.mark.parametrize(
    ("state", "reason", "message"),
    [
        (DISCONNECTED, "cannot replay ACLMON_EVENTS: boom", "(disconnected: cannot replay"),
        (AUTH_FAILED, "Authorization Violation", "(auth-failed: Authorization Violation)"),
    ],
)
def test_a_reader_that_ended_before_connecting_is_one_clear_error_at_once(
    state: str, reason: str, message: str
) -> None:
    # A feed whose loop ended sets its "ready" too: the loop stops on it, it does
    # not wait out its timeout.
    reader = ScriptedReader([CONNECTING, state], reason)
    with pytest.raises(AclmonError, match="could not connect") as raised:
        connect(reader, reader.fold, connect_timeout=600, ready=lambda: reader.folds > 0)
    assert message in str(raised.value)
    assert reader.folds == 1


def test_never_connected_times_out_with_its_state() -> None:
    reader = ScriptedReader([CONNECTING])
    with pytest.raises(AclmonError, match=r"\(connecting\)"):
        connect(reader, reader.fold, connect_timeout=0.1, ready=lambda: True)
