"""The garbage collector's settings in aclmon's own processes.

A viewer decodes events in bursts: a read of the bus, a NATS message, a piece of
a recording becomes a thousand or more event tuples at once, each of which the
cyclic collector tracks. With CPython's default first threshold (700 new
container objects) a collection follows nearly every burst and walks every
event still waiting to be shown, and the oldest generations walk them again: 10
to 20 % of a subscriber's time on a fast stream (docs/benchmarks.md). Events
hold no reference cycles and a viewer drops them within a refresh, so most die
before a collection that waits for :data:`FIRST_THRESHOLD` new objects.

Only aclmon's own processes change it (the console command, for every
subcommand but ``run``). ``aclmon run`` executes the user's script in its own
process: the job keeps its interpreter's settings, as it keeps everything else
it can observe.
"""

from __future__ import annotations

import gc

#: new container objects between two collections of the youngest generation in a
#: viewer (CPython's default is 700)
FIRST_THRESHOLD = 50_000


def tune_for_viewer() -> None:
    """Raise the first collection threshold to :data:`FIRST_THRESHOLD`, never
    lower it; a collector switched off (threshold 0) stays off. The older
    generations keep their thresholds."""
    first, second, third = gc.get_threshold()
    if 0 < first < FIRST_THRESHOLD:
        gc.set_threshold(FIRST_THRESHOLD, second, third)
