"""The public surface of aclmon.dump: every export resolves, and the package stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import aclmon.dump


@pytest.mark.parametrize("name", aclmon.dump.__all__)
def test_every_export_resolves(name):
    assert getattr(aclmon.dump, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError):
        aclmon.dump.no_such_thing  # noqa: B018


def test_importing_the_package_and_commands_does_not_import_numpy():
    code = "import sys, aclmon.dump, aclmon.dump.commands; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
