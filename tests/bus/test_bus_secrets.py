"""Secrets never on a command line: environment, private files, refusals; what a
job's own command line shows others (Hello.argv, the registry)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aclmon import cli
from aclmon.bus.secrets import (
    TOKEN,
    SecretError,
    add_secret_option,
    check_private_file,
    read_secret,
)
from aclmon.events import hello_fields
from aclmon.events.redaction import MASK, redact_argv


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_secret_option(parser, TOKEN, "the token")
    return parser.parse_args(list(argv))


def _private(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_secret_comes_from_the_file_else_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ACLMON_TOKEN", "from-env")
    assert read_secret(_parse(), TOKEN) == "from-env"
    token_file = _private(tmp_path / "t", "from-file\n")
    assert read_secret(_parse("--token-file", str(token_file)), TOKEN) == "from-file"
    monkeypatch.delenv("ACLMON_TOKEN")
    assert read_secret(_parse(), TOKEN) is None


def test_a_token_in_argv_is_refused_with_the_way_to_pass_it(monkeypatch):
    with pytest.raises(SecretError) as info:
        read_secret(_parse("--token", "s3cret"), TOKEN)
    message = str(info.value)
    assert "s3cret" not in message
    assert "$ACLMON_TOKEN" in message and "--token-file FILE" in message
    assert "chmod 600" in message


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_token_file_others_may_read_or_change_is_refused(tmp_path, mode):
    token_file = _private(tmp_path / "t", "s3cret", mode)
    with pytest.raises(SecretError, match="chmod 600"):
        read_secret(_parse("--token-file", str(token_file)), TOKEN)


def test_token_files_that_are_not_tokens_are_refused(tmp_path):
    empty = _private(tmp_path / "empty", "\n\n")
    with pytest.raises(SecretError, match="empty"):
        read_secret(_parse("--token-file", str(empty)), TOKEN)
    with pytest.raises(SecretError, match="no such file"):
        read_secret(_parse("--token-file", str(tmp_path / "missing")), TOKEN)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(SecretError, match="not a regular file"):
        read_secret(_parse("--token-file", str(fifo)), TOKEN)  # and it does not block
    with pytest.raises(SecretError, match="not a regular file"):
        check_private_file(str(tmp_path), "--nkey")


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the file away")
def test_a_token_file_of_another_user_is_refused(tmp_path):
    token_file = _private(tmp_path / "t", "s3cret")
    os.chown(token_file, 54321, 54321)
    with pytest.raises(SecretError, match="uid 54321"):
        read_secret(_parse("--token-file", str(token_file)), TOKEN)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--sim", "--token", "s3cret", "job.py"],
        ["attach", "--token", "s3cret", "1"],
        ["attach", "nats://127.0.0.1:1/job", "--token", "s3cret", "--once"],
        ["record", "--token", "s3cret", "1", "out.aclrec"],
        ["record", "nats://127.0.0.1:1/job/h/1", "out.aclrec", "--token", "s3cret"],
        ["events", "--token", "s3cret", "1"],
        ["relay", "--nats", "nats://127.0.0.1:1", "--token", "s3cret"],
        ["relay", "--nats", "nats://127.0.0.1:1", "--agent-token", "s3cret"],
    ],
)
def test_every_command_refuses_a_token_in_argv(argv, tmp_path, monkeypatch, capsys):
    """Before connecting, listening or starting anything: one line saying how."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.py").write_text("raise SystemExit('the job must not run')\n")
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "on the command line is readable by every local user" in err
    assert "-file FILE" in err and "s3cret" not in err
    assert not (tmp_path / "out.aclrec").exists()


def test_python_m_aclmon_agent_refuses_it_too(capsys):
    from aclmon.agent.__main__ import main

    assert main(["--token", "s3cret", "job.py"]) == 1
    assert "--token-file" in capsys.readouterr().err


def test_the_nats_credential_files_must_be_private(tmp_path):
    from aclmon.fleet.connect import Credentials, NatsError

    seed = _private(tmp_path / "relay.nk", "SUAxxx", 0o644)
    with pytest.raises(NatsError, match="chmod 600"):
        Credentials(nkey=str(seed)).check()
    seed.chmod(0o600)
    Credentials(nkey=str(seed)).check()
    key = _private(tmp_path / "client.key", "KEY", 0o640)
    with pytest.raises(NatsError, match="--tls-key"):
        Credentials(tls_key=str(key)).check()


# ---------------------------------------------------------------- what argv shows
@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["train.py", "--password", "hunter2", "--lr", "0.1"],
         ["train.py", "--password", MASK, "--lr", "0.1"]),
        (["train.py", "--api-key=abc", "--epochs=3"], ["train.py", f"--api-key={MASK}", "--epochs=3"]),
        (["job.py", "HF_TOKEN=xyz", "MODE=fast"], ["job.py", f"HF_TOKEN={MASK}", "MODE=fast"]),
        (["job.py", "--db", "postgres://me:pw@db:5432/x"],
         ["job.py", "--db", f"postgres://me:{MASK}@db:5432/x"]),
        (["job.py", "--client-secret", "s", "--no-auth", "data.txt"],
         ["job.py", "--client-secret", MASK, "--no-auth", "data.txt"]),
        (["job.py", "--secret"], ["job.py", "--secret"]),
    ],
)  # fmt: skip
def test_secret_looking_arguments_are_masked(argv, shown):
    assert list(redact_argv(argv)) == shown


@given(st.lists(st.text(max_size=40), max_size=12))
def test_masking_keeps_every_argument_in_place(argv):
    shown = redact_argv(argv)
    assert len(shown) == len(argv)
    for before, after in zip(argv, shown, strict=True):
        assert after == before or MASK in after


def test_hello_and_the_registry_show_the_masked_command_line(tmp_path, monkeypatch):
    from aclmon.bus import registry

    monkeypatch.setattr(sys, "argv", ["train.py", "--password", "hunter2", "WANDB_API_KEY=k"])
    expected = ("train.py", "--password", MASK, f"WANDB_API_KEY={MASK}")
    assert hello_fields("sim", "", 1)[4] == expected
    registry.register("/x.sock", directory=tmp_path)
    (entry,) = registry.list_agents(tmp_path)
    assert entry.argv == expected
    assert "hunter2" not in "".join(p.read_text() for p in tmp_path.iterdir())
