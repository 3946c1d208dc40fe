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

A replay builds a large state once (the recording's index, its snapshots, the
timeline's slices: nearly two million tracked objects for a 1,000,000-event
recording) and keeps it to the end. Every full collection walked all of it again
(0.6 to 2 s on a 2-core machine, stopping the UI and the workers alike) and a
seek or playback met one whenever enough new objects had survived. Once that state is
built, :func:`freeze_long_lived` moves it out of the collector's reach.
"""

from __future__ import annotations

import gc

#: new container objects between two collections of the youngest generation in a
#: viewer (CPython's default is 700)
FIRST_THRESHOLD = 50_000

#: set by :func:`tune_for_viewer`: this process is one of aclmon's own viewers
_viewer = False


def tune_for_viewer() -> None:
    """Raise the first collection threshold to :data:`FIRST_THRESHOLD`, never
    lower it; a collector switched off (threshold 0) stays off. The older
    generations keep their thresholds. Marks the process as a viewer's, for
    :func:`freeze_long_lived`."""
    global _viewer
    _viewer = True
    first, second, third = gc.get_threshold()
    if 0 < first < FIRST_THRESHOLD:
        gc.set_threshold(FIRST_THRESHOLD, second, third)


def freeze_long_lived() -> bool:
    """In a viewer's process (:func:`tune_for_viewer` was called), move every
    object the collector tracks now to its permanent generation (``gc.freeze``):
    later collections, the full ones included, walk only what is created after.
    Called once a long-lived state is built; reference counting still frees
    whatever of it dies later (only a cycle among those objects would stay).
    Anywhere else (a test process, a library caller) it does nothing. Returns
    whether it froze."""
    if not _viewer:
        return False
    gc.freeze()
    return True
