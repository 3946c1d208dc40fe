"""Another host (tests only): with ``ACLMON_TEST_CLOCK_SKEW_NS`` set, ``time.time``
and ``time.time_ns`` read that many nanoseconds late (early if negative), as on a
machine whose clock drifted; with ``ACLMON_TEST_HOSTNAME``, ``socket.gethostname``
says that name (an agent's Hello and its relay's subjects name the same host, as
viewers require). The monotonic clocks stay the machine's, so processes of
different "hosts" can still act at the same moment."""

import os
import socket
import time

_skew = int(os.environ.get("ACLMON_TEST_CLOCK_SKEW_NS", "0") or 0)
if _skew:
    _time_ns = time.time_ns
    _time = time.time
    time.time_ns = lambda: _time_ns() + _skew
    time.time = lambda: _time() + _skew / 1e9

_hostname = os.environ.get("ACLMON_TEST_HOSTNAME", "")
if _hostname:
    socket.gethostname = lambda: _hostname
