"""The fleet: every agent of a job, on one host or many, in one view.

- :mod:`aclmon.fleet.subjects`: NATS subject names, stream names and the kind
  tables the relay routes frames by (no NATS import: viewers and tests share it).
- :mod:`aclmon.fleet.relay`: ``aclmon relay``, one per host, forwarding each
  local agent's frames unchanged to NATS (asyncio, ``nats-py``).
- :mod:`aclmon.fleet.nats_source`: a viewer's feed from NATS (core subjects
  live, JetStream for history), per source.
- :mod:`aclmon.fleet.local`: the same feed from every agent on this host.
- :mod:`aclmon.fleet.server`: finding and starting a ``nats-server`` binary.

The agent inside the job never imports this package: it keeps its Unix-socket
publisher, and the relay is an ordinary bus client.
"""
