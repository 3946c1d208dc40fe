"""The DCMI back end against the simulator's DCMI: calls through real C function pointers."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aclmon import dcmi_abi as abi
from aclmon.events.host import HostSnapshot
from aclmon.host.dcmi import DcmiBackend, DcmiUnavailable, find_dcmi_library
from aclmon.host.source import open_backend
from aclmon.sim.config import SimConfig
from aclmon.sim.dcmi import FakeDcmi, trampoline_source
from aclmon.sim.driver import DeviceUse, JobRecord
from aclmon.sim.machine import machine_view


def fake(
    soc: str = "Ascend910B3", devices: int = 4, jobs: list[JobRecord] | None = None, **kw: object
) -> FakeDcmi:
    config = SimConfig(device_count=devices, soc_name=soc)
    return FakeDcmi(lambda: machine_view(config, jobs or []), config=config, **kw)  # type: ignore[arg-type]


def test_a910b_box_reads_every_field_dcmi_has() -> None:
    job = JobRecord(pid=os.getpid(), name="pytest", devices=(DeviceUse(2, 5 << 30, 50, 20, 3),))
    snapshot = DcmiBackend(fake(jobs=[job]), source="sim").refresh()
    assert (snapshot.source, snapshot.state, snapshot.warnings) == ("sim", "ok", ())
    assert [(d.npu_id, d.chip_id, d.logic_id, d.phy_id) for d in snapshot.devices] == [
        (n, 0, n, n) for n in range(4)
    ]
    busy = snapshot.devices[2]
    assert busy.name == "910B3" and busy.health == "OK" and busy.bus_id == "0000:81:00.0"
    assert busy.power_w is not None and busy.power_w > 150  # 50 % busy: well above idle
    assert (busy.aicore_pct, busy.vector_pct, busy.aicpu_pct) == (50, 20, 3)
    assert (busy.hbm_used_mb, busy.hbm_total_mb) == ((2 << 10) + (5 << 10), 64 << 10)
    assert (busy.memory_used_mb, busy.memory_total_mb) == (0, 0)
    assert (busy.aicore_mhz, busy.aicore_max_mhz) == (1800, 1800)
    assert (busy.ecc_single_bit, busy.ecc_double_bit, busy.fault_codes) == (0, 0, ())
    assert snapshot.processes is not None
    [mine] = snapshot.processes
    assert (mine.npu_id, mine.chip_id, mine.pid, mine.memory_mb) == (2, 0, os.getpid(), 5 << 10)
    # Who it is comes from /proc, not from DCMI (which gives only the pid).
    assert mine.command and mine.user and mine.name


def test_what_a_product_does_not_report_stays_unknown() -> None:
    snapshot = DcmiBackend(fake("Ascend310P3"), source="sim").refresh()
    chip = snapshot.devices[1]
    assert chip.power_w is None  # 310P: npu-smi prints NA
    assert chip.hbm_used_mb is None and chip.hbm_total_mb is None  # no HBM, not 0 HBM
    assert chip.vector_pct is None and chip.npu_util_pct is None
    assert chip.memory_total_mb == 64 << 10
    board = DcmiBackend(fake("Ascend310B4", devices=1), source="sim").refresh().devices[0]
    assert board.bus_id is None and (board.hugepages_used, board.hugepages_total) == (15, 15)
    a3 = DcmiBackend(fake("Ascend910_9391"), source="sim").refresh()
    assert [d.power_w is None for d in a3.devices] == [False, True, False, True]
    assert [d.phy_id for d in a3.devices] == [0, 1, 2, 3]
    assert a3.state == "ok"  # "not supported" is an answer, not a problem


def test_hbm_sizes_in_kb_from_an_old_driver_are_read_as_mb() -> None:
    snapshot = DcmiBackend(fake(hbm_in_kb=True), source="sim").refresh()
    assert snapshot.devices[0].hbm_total_mb == 64 << 10


class _Partial:
    """A library that lacks most symbols (an older driver) and fails one call."""

    def __init__(self, inner: FakeDcmi) -> None:
        self.dcmi_init = inner.dcmi_init
        self.dcmi_get_card_list = inner.dcmi_get_card_list
        self.dcmi_get_device_num_in_card = inner.dcmi_get_device_num_in_card
        self.dcmi_get_device_temperature = inner.dcmi_get_device_temperature
        failing = abi.prototype("dcmi_get_device_health")(
            lambda card, device, out: abi.DCMI_ERR_CODE_OPER_NOT_PERMITTED
        )
        self.dcmi_get_device_health = failing


def test_missing_symbols_are_unknown_and_errors_are_named() -> None:
    snapshot = DcmiBackend(_Partial(fake()), source="sim").refresh()
    assert snapshot.state == "partial"
    assert snapshot.warnings[0].startswith("dcmi_get_device_health(card 0, chip 0): -8002")
    assert "operation not permitted" in (snapshot.message or "")
    chip = snapshot.devices[0]
    assert chip.temp_c is not None and chip.health is None and chip.power_w is None
    assert chip.name is None and chip.logic_id is None
    assert snapshot.processes is None  # no process call: unknown, not "none"


def test_a_library_whose_init_fails_is_unavailable() -> None:
    class Broken:
        dcmi_init = abi.prototype("dcmi_init")(lambda: abi.DCMI_ERR_CODE_OPER_NOT_PERMITTED)

    with pytest.raises(DcmiUnavailable, match="dcmi_init failed: -8002"):
        DcmiBackend(Broken())
    with pytest.raises(DcmiUnavailable, match="cannot load"):
        DcmiBackend.load("/nonexistent/libdcmi.so")


def test_an_exception_in_the_fake_never_crosses_into_c() -> None:
    def boom() -> object:
        raise RuntimeError("driver view unreadable")

    broken = FakeDcmi(boom, config=SimConfig())  # type: ignore[arg-type]
    snapshot = DcmiBackend(broken, source="sim").refresh()
    assert snapshot.state == "failed" and "-8005" in (snapshot.message or "")


def test_the_library_is_found_where_the_driver_installs_it(tmp_path: Path) -> None:
    assert find_dcmi_library({"ACLMON_DCMI_LIBRARY": "/x/libdcmi.so"}) == "/x/libdcmi.so"
    (tmp_path / "libdcmi.so").write_bytes(b"")
    assert find_dcmi_library({"LD_LIBRARY_PATH": str(tmp_path)}) == str(tmp_path / "libdcmi.so")


@pytest.fixture(scope="module")
def trampoline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real libdcmi.so that forwards to a FakeDcmi (built with the C compiler)."""
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs a C compiler to build the trampoline libdcmi.so")
        pytest.skip("no C compiler: the in-process fake covers every call, not the loading")
    directory = tmp_path_factory.mktemp("dcmi")
    source = directory / "fake_dcmi.c"
    source.write_text(trampoline_source())
    library = directory / "libdcmi.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-O1", "-o", str(library), str(source)], check=True
    )
    return library


def test_a_real_shared_library_is_loaded_by_path_and_called(trampoline: Path) -> None:
    behind = fake("Ascend910_9391", devices=4)
    behind.bind(ctypes.CDLL(str(trampoline)))
    backend = open_backend("dcmi", env={"ACLMON_DCMI_LIBRARY": str(trampoline)})
    snapshot: HostSnapshot = backend.refresh()
    assert (snapshot.source, snapshot.state, snapshot.version) == ("dcmi", "ok", str(trampoline))
    in_process = DcmiBackend(behind, source="dcmi", version=str(trampoline)).refresh()
    assert snapshot.devices == in_process.devices
    assert behind.calls > 0
