"""Test-wide settings: the simulated runtime writes its plog, and its driver records
(what the simulated npu-smi and DCMI list), under temporary directories."""

from __future__ import annotations

import os
import tempfile


def pytest_configure(config: object) -> None:
    # The sim writes plog files as CANN does (default: $HOME/ascend/log); a test run
    # must not fill the user's home, and tests that read the plog set their own path.
    if not os.environ.get("ASCEND_PROCESS_LOG_PATH"):
        os.environ["ASCEND_PROCESS_LOG_PATH"] = tempfile.mkdtemp(prefix="aclmon-test-plog-")
    # Sim jobs publish the devices they hold there (aclmon.sim.driver); tests that read
    # them set their own directory.
    if not os.environ.get("ACLMON_SIM_DRIVER_DIR"):
        os.environ["ACLMON_SIM_DRIVER_DIR"] = tempfile.mkdtemp(prefix="aclmon-test-driver-")
