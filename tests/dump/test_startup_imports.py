"""What ``aclmon --help`` and ``aclmon decode FILE`` import (issue: start-up time).

Each runs in a fresh interpreter; the third-party packages it loaded are
compared with what the command needs. ml_dtypes alone takes longer to import
than numpy, so it must load only when a tensor of one of its types is met.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dumpfixtures import T, dump_bytes, write

from aclmon.dump import proto_enums as pe

REPO = Path(__file__).resolve().parents[2]

_PROBE = """
import contextlib, io, json, sys
from aclmon.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
std = set(sys.stdlib_module_names)
third = sorted({m.split(".")[0] for m in sys.modules} - std - {"aclmon", "__main__"})
# site hooks some environments install at start-up, not imports of ours
third = [m for m in third if not m.startswith("_")]
print(json.dumps({"code": code, "third_party": third, "modules": sorted(sys.modules)}))
"""


def _imports(*argv: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=REPO,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def float_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = np.arange(12, dtype="<f4").tobytes()
    tensor = T(data, dtype=pe.DT_FLOAT, fmt=pe.FORMAT_ND, shape=(3, 4))
    directory = tmp_path_factory.mktemp("startup")
    return write(directory, "Add.add1.1.0.1700000000000000", dump_bytes(outputs=[tensor]))


def test_help_imports_no_third_party_package() -> None:
    result = _imports("--help")
    assert result["code"] == 0
    assert result["third_party"] == []
    # the command modules are read for their arguments only
    assert not [m for m in result["modules"] if m.startswith(("aclmon.tui.app", "aclmon.store"))]


def test_decode_of_a_float32_dump_imports_numpy_only(float_dump: Path) -> None:
    result = _imports("decode", str(float_dump))
    assert result["code"] == 0
    assert result["third_party"] == ["numpy"]


def test_decode_of_a_bfloat16_dump_imports_ml_dtypes(tmp_path: Path) -> None:
    data = np.arange(4, dtype="<f4").view("<u2")[1::2].tobytes()  # upper halves: bf16
    tensor = T(data, dtype=pe.DT_BF16, fmt=pe.FORMAT_ND, shape=(4,))
    path = write(tmp_path, "Add.add1.1.0.1700000000000000", dump_bytes(outputs=[tensor]))
    result = _imports("decode", str(path))
    assert result["code"] == 0
    assert result["third_party"] == ["ml_dtypes", "numpy"]


def test_convert_of_a_float32_dump_imports_numpy_only(float_dump: Path, tmp_path: Path) -> None:
    result = _imports("convert", "-d", str(float_dump), "-out", str(tmp_path))
    assert result["code"] == 0
    assert result["third_party"] == ["numpy"]
    assert (tmp_path / f"{float_dump.name}.output.0.npy").exists()
