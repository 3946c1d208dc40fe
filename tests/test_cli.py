import subprocess
import sys

from aclmon import cli


def test_help_lists_available_commands(capsys):
    parser = cli.build_parser()
    help_text = parser.format_help()
    for name, _module, _help in cli.available_commands():
        assert name in help_text


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
