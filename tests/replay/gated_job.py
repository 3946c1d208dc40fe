"""Runs a job script once GATE exists, so a live viewer can connect first.

usage: gated_job.py GATE SCRIPT [script arguments...]
"""

import os
import runpy
import sys
import time

gate, script = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 30
while not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.02)
sys.argv = [script, *sys.argv[3:]]
runpy.run_path(script, run_name="__main__")
