"""Runs tests/agent/sim_job.py once GATE exists, so a live viewer can connect first.

usage: gated_job.py GATE sim_job-arguments...
"""

import os
import runpy
import sys
import time

gate = sys.argv[1]
deadline = time.monotonic() + 30
while not os.path.exists(gate) and time.monotonic() < deadline:
    time.sleep(0.02)
job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "agent", "sim_job.py")
sys.argv = [job, *sys.argv[2:]]
runpy.run_path(job, run_name="__main__")
