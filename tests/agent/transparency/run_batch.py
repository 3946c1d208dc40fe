"""Runs the scripts named on the command line one after another, each as
``__main__`` with ``sys.argv = [script, MODEL_DIR, WORK/name]``, the way
``python script.py`` would, and prints each one's exit status. A script may end
the whole process (the last one does, by a signal): that is the batch's own
exit status.

usage: run_batch.py MODEL_DIR WORK script.py...
"""

import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
model_dir, work = sys.argv[1], sys.argv[2]
environment = dict(os.environ)
for name in sys.argv[3:]:
    path = os.path.join(here, name)
    os.environ.clear()  # what one script sets (its faults) is not the next one's
    os.environ.update(environment)
    sys.argv = [path, model_dir, os.path.join(work, name[:-3])]
    print(f"== {name}", flush=True)
    try:
        runpy.run_path(path, run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = exc.code
    except Exception as exc:  # what the job would die of
        status = f"{type(exc).__name__}: {exc}"
    sys.stdout.flush()
    print(f"== {name} status {status!r}", flush=True)
