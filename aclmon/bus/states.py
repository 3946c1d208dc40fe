"""The words a connection, a source or a fleet feed reports as its ``state``.

One set for every reader of events: the bus :class:`~aclmon.bus.Subscriber`,
the NATS and local fleet feeds, and the viewer's sources (which add
``ENDED`` for a finite source that has delivered everything). The header,
``--once`` and ``aclmon events`` compare against these names, never against
string literals of their own.
"""

from __future__ import annotations

STOPPED = "stopped"  # made, not started
CONNECTING = "connecting"
CONNECTED = "connected"
DISCONNECTED = "disconnected"  # lost or failed; a subscriber retries with backoff
AUTH_FAILED = "auth-failed"  # the token or credentials were refused: no retry helps
CLOSED = "closed"  # closed on purpose
ENDED = "ended"  # a finite source (a fixed list, a replay) has delivered everything

#: states after which waiting longer cannot bring a connection
GIVEN_UP = frozenset({AUTH_FAILED, CLOSED})
