import subprocess
import sys

import pytest

from aclmon import cli


def test_help_lists_every_command_and_each_has_its_own_help():
    help_text = cli.build_parser().format_help()
    for name, _module, _help in cli.COMMANDS:
        assert f"    {name} " in help_text
        with pytest.raises(SystemExit) as exited:
            cli.main([name, "--help"])
        assert exited.value.code == 0


def test_no_command_prints_help_and_fails(capsys):
    assert cli.main([]) == 2
    assert "usage: aclmon" in capsys.readouterr().out


def test_help_does_not_import_textual_or_numpy():
    code = (
        "import sys, aclmon.cli as c; c.build_parser();"
        "print('textual' in sys.modules, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
