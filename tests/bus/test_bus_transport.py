"""Addresses, the runtime directory, socket permissions, handshake rules."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from aclmon import locations
from aclmon.bus import handshake
from aclmon.bus.publisher import Publisher
from aclmon.bus.transport import Address, AddressError, default_address, parse_address
from aclmon.locations import runtime_dir


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "xdg"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/run/x.sock", Address("unix", path="/run/x.sock")),
        ("unix:/run/x", Address("unix", path="/run/x")),
        ("unix:///run/x", Address("unix", path="/run/x")),
        ("./a.sock", Address("unix", path="./a.sock")),
        ("tcp://127.0.0.1:7000", Address("tcp", host="127.0.0.1", port=7000)),
        ("tcp://[::1]:7000", Address("tcp", host="::1", port=7000)),
        ("tcp://node-3.cluster:1", Address("tcp", host="node-3.cluster", port=1)),
    ],
)
def test_parse_address(text: str, expected: Address) -> None:
    assert parse_address(text) == expected
    assert parse_address(str(expected)) == expected


@pytest.mark.parametrize(
    "text", ["", "tcp://host", "tcp://:80", "tcp://h:port", "tcp://h:70000", "unix:", "hello"]
)
def test_bad_addresses_are_one_clear_error(text: str) -> None:
    with pytest.raises(AddressError):
        parse_address(text)


def test_loopback_detection() -> None:
    assert parse_address("tcp://127.0.0.1:1").is_loopback
    assert parse_address("tcp://[::1]:1").is_loopback
    assert parse_address("tcp://localhost:1").is_loopback
    assert not parse_address("tcp://0.0.0.0:1").is_loopback
    assert not parse_address("tcp://10.1.2.3:1").is_loopback
    assert parse_address("/x.sock").is_loopback


def test_runtime_dir_is_private(xdg: Path) -> None:
    path = runtime_dir()
    assert path == xdg / "aclmon"
    info = os.lstat(path)
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert info.st_uid == os.getuid()


def test_runtime_dir_too_open_is_tightened(xdg: Path) -> None:
    (xdg / "aclmon").mkdir(mode=0o755)
    os.chmod(xdg / "aclmon", 0o755)
    assert stat.S_IMODE(os.lstat(runtime_dir()).st_mode) == 0o700


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No XDG_RUNTIME_DIR: the runtime directory goes in a temporary directory that
    other users can write to (sticky, like /tmp); HOME is private to the test."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(locations, "_fallback", None)
    return shared


def test_runtime_dir_defaults_to_the_temporary_directory(shared_tmp: Path) -> None:
    assert runtime_dir() == shared_tmp / f"aclmon-{os.getuid()}"


def _fallback_of(home: Path) -> Path:
    return home / ".cache" / "aclmon" / f"run-{socket.gethostname().split('.', 1)[0]}"


def test_a_planted_symlink_is_not_followed_and_a_private_directory_is_used(
    shared_tmp: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another user plants aclmon-<uid> as a symlink to a directory of theirs: the
    link is never followed; the fallback in our home is used, and said once."""
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    (shared_tmp / f"aclmon-{os.getuid()}").symlink_to(elsewhere)
    path = runtime_dir()
    assert path == _fallback_of(tmp_path / "home")
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o700
    assert runtime_dir() == path
    assert list(elsewhere.iterdir()) == []
    said = [r.getMessage() for r in caplog.records if "instead" in r.getMessage()]
    assert len(said) == 1 and "symlink" in said[0] and str(path) in said[0]


def test_a_planted_file_is_not_a_reason_to_fail(shared_tmp: Path, tmp_path: Path) -> None:
    (shared_tmp / f"aclmon-{os.getuid()}").write_text("not a directory")
    assert runtime_dir() == _fallback_of(tmp_path / "home")


def test_without_a_usable_home_a_fresh_private_directory_is_used(
    shared_tmp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (shared_tmp / f"aclmon-{os.getuid()}").write_text("not a directory")
    (tmp_path / "home").write_text("HOME is a file")
    path = runtime_dir()
    assert path.parent == shared_tmp and path.name.startswith(f"aclmon-{os.getuid()}-")
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o700
    assert runtime_dir() == path


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the directory away")
def test_runtime_dir_of_someone_else_is_not_used(shared_tmp: Path, tmp_path: Path) -> None:
    foreign = shared_tmp / f"aclmon-{os.getuid()}"
    foreign.mkdir(mode=0o777)
    os.chown(foreign, 54321, 54321)
    assert runtime_dir() == _fallback_of(tmp_path / "home")
    assert list(foreign.iterdir()) == []


def test_aclmon_run_starts_when_another_user_planted_its_directory(
    shared_tmp: Path, tmp_path: Path
) -> None:
    """The job is never kept from starting: it runs, its agent listens in the
    fallback directory, and a viewer of the same user finds it there."""
    (shared_tmp / f"aclmon-{os.getuid()}").symlink_to(tmp_path)
    script = tmp_path / "job.py"
    script.write_text("import time; time.sleep(0.5); print('job ran')\n")
    result = subprocess.run(
        [sys.executable, "-m", "aclmon", "run", "--sim", str(script)],
        capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "job ran" in result.stdout
    fallback = _fallback_of(tmp_path / "home")
    assert f"listening on unix:{fallback}/agent-" in result.stderr
    assert "instead" in result.stderr


def test_unix_socket_is_0600_in_private_dir(xdg: Path) -> None:
    with Publisher() as publisher:
        address = parse_address(publisher.address)
        assert address == default_address()
        assert Path(address.path).parent == xdg / "aclmon"
        info = os.lstat(address.path)
        assert stat.S_ISSOCK(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o600
    assert not os.path.exists(address.path)  # removed on close


def test_second_publisher_on_a_live_socket_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "p.sock")
    with Publisher(path), pytest.raises(AddressError, match="in use"):
        Publisher(path).start()


def test_stale_socket_file_is_replaced(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "p.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens
    with Publisher(str(path)) as publisher:
        assert publisher.address == f"unix:{path}"


def test_non_loopback_tcp_needs_a_token() -> None:
    from aclmon.errors import AclmonError

    with pytest.raises(AclmonError, match="token"):
        Publisher("tcp://0.0.0.0:0").start()


# ---------------------------------------------------------------- handshake rules
NONCE = b"n" * 32


def _hello(token: str | None, readonly: bool = False) -> dict:
    return handshake.client_hello(handshake.server_hello(NONCE, True), token, readonly)


@pytest.mark.parametrize(
    ("policy", "hello", "ok", "commands"),
    [
        # Unix socket, no token: the file mode is the authentication.
        (handshake.Policy(None, True, True), _hello(None), True, True),
        (handshake.Policy(None, True, True), _hello(None, readonly=True), True, False),
        # Loopback TCP without a token: receive only, for everyone.
        (handshake.Policy(None, True, False), _hello(None), True, False),
        # A token anywhere: commands need the proof; receiving does not on loopback.
        (handshake.Policy("s3cret", True, False), _hello("s3cret"), True, True),
        (handshake.Policy("s3cret", True, False), _hello(None), True, False),
        (handshake.Policy("s3cret", True, False), _hello("s3cret", readonly=True), True, False),
        (handshake.Policy("s3cret", True, True), _hello(None), True, False),
        # A wrong proof is refused, never downgraded.
        (handshake.Policy("s3cret", True, False), _hello("guess"), False, False),
        # Non-loopback: the token is needed even to receive.
        (handshake.Policy("s3cret", False, False), _hello(None), False, False),
        (handshake.Policy("s3cret", False, False), _hello("s3cret"), True, True),
        # Not a client hello at all.
        (handshake.Policy(None, True, True), [1, 2, 3], False, False),
        (
            handshake.Policy(None, True, True),
            {"bus": 1, "readonly": "no", "proof": None},
            False,
            False,
        ),
    ],
)
def test_handshake_rules(policy: handshake.Policy, hello: object, ok: bool, commands: bool) -> None:
    verdict = handshake.judge(policy, NONCE, hello)
    assert (verdict.ok, verdict.commands) == (ok, commands)


def test_proof_never_contains_the_token_and_depends_on_the_nonce() -> None:
    first = handshake.prove("s3cret", b"a" * 32)
    assert b"s3cret" not in first
    assert first != handshake.prove("s3cret", b"b" * 32)
