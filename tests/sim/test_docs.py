"""docs/sim.md lists every call the simulated acl module has, and nothing it lacks."""

from __future__ import annotations

import re
import types
from pathlib import Path

from aclmon.sim import acl

DOC = Path(__file__).resolve().parents[2] / "docs" / "sim.md"


def _functions(module: types.ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and isinstance(value, types.FunctionType)
    }


def test_every_supported_call_is_listed():
    text = DOC.read_text()
    section = text.split("## Every supported call", 1)[1].split("\n## ", 1)[0]
    for label, module in (
        ("acl", acl),
        ("acl.rt", acl.rt),
        ("acl.mdl", acl.mdl),
        ("acl.prof", acl.prof),
        ("acl.util", acl.util),
        ("acl.media", acl.media),
        ("acl.op", acl.op),
    ):
        line = re.search(rf"^\*\*`{re.escape(label)}`\*\* \((\d+)\): (.*)$", section, re.M)
        assert line, label
        listed = set(re.findall(r"`(\w+)`", line.group(2)))
        assert listed == _functions(module), label
        assert int(line.group(1)) == len(listed)
