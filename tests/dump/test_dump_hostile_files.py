"""Hostile dump files and directories: no crash, no raw control characters,
nothing skipped silently."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from dumpfixtures import T, dump_bytes, write

from aclmon.dump.report import decode_report
from aclmon.errors import DecodeError

REPO = Path(__file__).parents[2]
NAME = "Add.add1.3.1.1700000000000000"


def _env() -> dict[str, str]:
    return dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )


def _aclmon(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aclmon", *args], env=_env(), text=True,
                          capture_output=True, timeout=60, **kw)  # fmt: skip


def _big_dump(directory: Path) -> Path:
    values = np.arange(1 << 19, dtype=np.float32)  # 2 MiB of data
    return write(directory, NAME, dump_bytes(outputs=[T(values.tobytes(), shape=[values.size])]))


def test_a_dump_truncated_while_it_is_decoded_does_not_kill_the_reader(tmp_path: Path) -> None:
    """Another process cuts the file short between its opening and the tensor's read:
    a DecodeError naming the file, the offset and the tensor (never SIGBUS)."""
    path = _big_dump(tmp_path)
    size = path.stat().st_size
    script = textwrap.dedent(f"""
        import os
        from aclmon.dump.reader import read_dump
        from aclmon.dump.stats import tensor_stats
        from aclmon.errors import DecodeError
        dump = read_dump({str(path)!r})
        os.truncate({str(path)!r}, 64)  # another process cuts the file short
        for tensor in dump.tensors:
            try:
                tensor_stats(tensor.decode().array)
            except DecodeError as exc:
                print(exc)
        print("survived")
    """)
    result = subprocess.run([sys.executable, "-c", script], env=_env(), text=True,
                            capture_output=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, f"killed by signal {-result.returncode}: {result.stderr}"
    assert result.stdout.splitlines() == [
        f"{NAME}: at byte 64: output 0: the file shrank from {size} bytes since it was opened",
        "survived",
    ]


def test_a_file_replaced_after_it_was_opened_is_named(tmp_path: Path) -> None:
    from aclmon.dump.reader import read_dump

    path = _big_dump(tmp_path)
    dump = read_dump(path)
    offset = dump.outputs[0].offset
    (tmp_path / "new").mkdir()
    os.replace(_big_dump(tmp_path / "new"), path)  # a writer renames a new file over it
    with pytest.raises(DecodeError) as info:
        dump.outputs[0].array  # noqa: B018
    assert str(info.value) == (
        f"{NAME}: at byte {offset}: output 0: the file was replaced since its header was read"
    )


def test_a_file_that_shrinks_while_its_header_is_read_is_named(tmp_path: Path) -> None:
    from aclmon.dump import reader

    path = _big_dump(tmp_path)
    size = path.stat().st_size
    real_read_into = reader._read_into

    def shrinking(handle, out, *args):
        os.truncate(path, 10)  # cut short between the stat and the read
        return real_read_into(handle, out, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reader, "_read_into", shrinking)
        report = decode_report(str(path))
    assert report["error"] == (
        f"{NAME}: at byte 10: the file shrank from {size} bytes while it was being read"
    )


def test_decode_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    values = np.arange(64, dtype=np.float32)
    for i in range(300):
        write(tmp_path, f"Add.add{i}.3.1.17000000000{i:05d}",
              dump_bytes(outputs=[T(values.tobytes(), shape=[64])]))  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "aclmon", "decode", str(tmp_path)], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # `| head -1`
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.wait(60)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_control_characters_in_names_are_shown_not_obeyed(tmp_path: Path) -> None:
    evil = "x\x1b]0;PWNED\x07\x1b[2J\u202e.bin"
    write(tmp_path, evil, b"not a dump")
    named = _aclmon("decode", str(tmp_path / evil))
    listed = _aclmon("decode", str(tmp_path), "--json")
    for text in (named.stdout, named.stderr, listed.stdout, listed.stderr):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "x\\x1b]0;PWNED\\x07\\x1b[2J\\u202e.bin" in named.stdout + named.stderr


def test_decode_dir_says_what_it_skipped_and_why(tmp_path: Path) -> None:
    values = np.arange(4, dtype=np.float32)
    write(tmp_path, NAME, dump_bytes(outputs=[T(values.tobytes(), shape=[4])]))
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    # A directory so deep that its path is longer than the system allows.
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(20):
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    result = _aclmon("decode", str(tmp_path))
    assert NAME in result.stdout
    lines = result.stderr.splitlines()
    assert f"aclmon decode: skipped {tmp_path / 'gone'}: no such file or directory" in lines
    assert any(line.endswith(": file name too long") for line in lines), lines
    assert f"aclmon decode: skipped 1 file that is not a dump file in {tmp_path}" in lines
    assert result.returncode == 1
