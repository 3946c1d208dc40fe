"""``aclmon convert`` writes exactly what ``np.save``/``tofile`` would, by whichever route.

Unchanged tensors are copied file to file by the kernel, converted ones are
written from one contiguous array; both must give the very bytes numpy writes,
and a kernel that refuses (another file system) or a source that shrank must
still give them.
"""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import numpy as np
import pytest
from dumpfixtures import T, dump_bytes, write

from aclmon.dump import ConvertOptions, convert_file, read_dump
from aclmon.dump import convert as convert_module
from aclmon.dump import proto_enums as pe


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _dump(tmp_path: Path, elements: int) -> tuple[Path, np.ndarray, np.ndarray]:
    big = np.arange(elements, dtype="<f4").reshape(-1, 64)
    small = np.arange(12, dtype="<i4").reshape(3, 4)
    data = dump_bytes(
        inputs=[T(big.tobytes(), dtype=pe.DT_FLOAT, fmt=pe.FORMAT_ND, shape=big.shape)],
        outputs=[T(small.tobytes(), dtype=pe.DT_INT32, fmt=pe.FORMAT_ND, shape=small.shape)],
        buffers=[bytes(range(256)) * 512],
    )
    return write(tmp_path / "src", "Add.add1.1.2.1700000000000000", data), big, small


@pytest.mark.parametrize("elements", [64 * 1024, 64 * 64])  # 256 KiB (kernel copy), 16 KiB
def test_npy_and_bin_are_byte_for_byte_numpys(tmp_path: Path, elements: int) -> None:
    src, big, small = _dump(tmp_path, elements)
    out = tmp_path / "npy"
    out.mkdir()
    result = convert_file(src, out)
    assert result.error is None and result.warnings == []
    name = src.name
    assert (out / f"{name}.input.0.npy").read_bytes() == _npy_bytes(big)
    assert (out / f"{name}.output.0.npy").read_bytes() == _npy_bytes(small)
    assert (out / f"{name}.l1buffer.0.bin").read_bytes() == bytes(range(256)) * 512
    bins = tmp_path / "bin"
    bins.mkdir()
    result = convert_file(src, bins, ConvertOptions(file_type="bin"))
    assert result.error is None
    got = bins / f"{name}.input.0.{big.shape[0]}_64.float32.ND.bin"
    assert got.read_bytes() == big.tobytes()


def test_unchanged_tensors_are_copied_by_the_kernel(tmp_path: Path, monkeypatch) -> None:
    src, big, _ = _dump(tmp_path, 64 * 1024)
    calls: list[int] = []
    real = os.copy_file_range

    def counting(src_fd: int, dst_fd: int, count: int, offset_src: int | None = None) -> int:
        calls.append(count)
        return real(src_fd, dst_fd, count, offset_src)

    monkeypatch.setattr(os, "copy_file_range", counting)
    out = tmp_path / "out"
    out.mkdir()
    assert convert_file(src, out).error is None
    # the 256 KiB input and the 128 KiB buffer; the 48-byte output is one plain write
    assert sorted(calls) == [128 * 1024, big.nbytes]
    assert np.array_equal(np.load(out / f"{src.name}.input.0.npy"), big)


def test_a_refusing_kernel_falls_back_to_writing(tmp_path: Path, monkeypatch) -> None:
    src, big, _ = _dump(tmp_path, 64 * 1024)

    def refuse(*args: object) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", refuse)
    out = tmp_path / "out"
    out.mkdir()
    result = convert_file(src, out)
    assert result.error is None
    assert (out / f"{src.name}.input.0.npy").read_bytes() == _npy_bytes(big)


def test_a_kernel_that_stops_part_way_is_finished_from_memory(tmp_path: Path, monkeypatch) -> None:
    src, big, _ = _dump(tmp_path, 64 * 1024)
    real = os.copy_file_range
    budget = [100_000]  # bytes the kernel copies before it reports 0 (the file shrank)

    def short(src_fd: int, dst_fd: int, count: int, offset_src: int | None = None) -> int:
        count = min(count, budget[0], 4096)
        budget[0] -= count
        return real(src_fd, dst_fd, count, offset_src) if count else 0

    monkeypatch.setattr(os, "copy_file_range", short)
    out = tmp_path / "out"
    out.mkdir()
    assert convert_file(src, out).error is None
    assert (out / f"{src.name}.input.0.npy").read_bytes() == _npy_bytes(big)


def test_converted_layouts_are_written_like_np_save(tmp_path: Path) -> None:
    """A strided result (NC1HWC0 -> NHWC, cropped) is made contiguous once, then written."""
    n, c, h, w, c0 = 2, 20, 3, 5, 16
    c1 = -(-c // c0)
    device = np.arange(n * c1 * h * w * c0, dtype="<f2").reshape(n, c1, h, w, c0)
    tensor = T(
        device.tobytes(),
        dtype=pe.DT_FLOAT16,
        fmt=pe.FORMAT_NC1HWC0,
        shape=device.shape,
        original_shape=(n, h, w, c),
    )
    src = write(tmp_path / "src", "Conv.c1.1.2.1700000000000000", dump_bytes(outputs=[tensor]))
    nchw = device.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :c]
    expected = nchw.transpose(0, 2, 3, 1)
    out = tmp_path / "out"
    out.mkdir()
    result = convert_file(src, out, ConvertOptions(pe.FORMAT_NHWC))
    assert result.error is None and len(result.written) == 1, result
    assert Path(result.written[0]).read_bytes() == _npy_bytes(expected)


def test_scalars_keep_their_shape(tmp_path: Path) -> None:
    value = np.array(7.5, dtype="<f4")
    tensor = T(value.tobytes(), dtype=pe.DT_FLOAT, fmt=pe.FORMAT_ND, shape=())
    src = write(tmp_path / "src", "Add.s.1.2.1700000000000000", dump_bytes(outputs=[tensor]))
    out = tmp_path / "out"
    out.mkdir()
    assert convert_file(src, out).error is None
    got = (out / f"{src.name}.output.0.npy").read_bytes()
    assert got == _npy_bytes(read_dump(src).outputs[0].array)
    assert np.load(out / f"{src.name}.output.0.npy").shape == ()


def test_the_source_is_closed_after_each_file(tmp_path: Path) -> None:
    src, _, _ = _dump(tmp_path, 64 * 1024)
    out = tmp_path / "out"
    out.mkdir()
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        assert convert_file(src, out).error is None
    assert len(os.listdir("/proc/self/fd")) == before
    assert convert_module.KERNEL_COPY_MIN <= 64 * 1024


def test_tensors_written_as_they_are_never_read_into_memory(tmp_path: Path, monkeypatch) -> None:
    """Without -f, a plain-typed dump goes out without its bytes being read (only its
    header); a cast (bf16 -> float32) needs the values and reads that tensor alone."""
    from aclmon.dump import reader

    src, big, _ = _dump(tmp_path, 64 * 1024)
    reads: list[tuple[int, int]] = []
    real = reader._OpenedFile.read

    def spy(self, offset: int, count: int, label: str):
        reads.append((offset, count))
        return real(self, offset, count, label)

    monkeypatch.setattr(reader._OpenedFile, "read", spy)
    out = tmp_path / "out"
    out.mkdir()
    assert convert_file(src, out).error is None
    assert reads == []
    assert (out / f"{src.name}.input.0.npy").read_bytes() == _npy_bytes(big)
    bf16 = np.arange(8, dtype="<f4").view("<u2")[1::2].tobytes()
    tensor = T(bf16, dtype=pe.DT_BF16, fmt=pe.FORMAT_ND, shape=(4,))
    cast = write(tmp_path / "src", "Cast.c.1.2.1700000000000000", dump_bytes(outputs=[tensor]))
    assert convert_file(cast, out).error is None
    assert reads == [(read_dump(cast).outputs[0].offset, len(bf16))]
    assert np.load(out / f"{cast.name}.output.0.npy").dtype == np.float32


def test_a_file_that_shrank_after_its_header_was_read_is_an_error(
    tmp_path: Path, monkeypatch
) -> None:
    src, _, _ = _dump(tmp_path, 64 * 1024)
    real = convert_module.read_dump

    def then_truncate(path, *args, **kwargs):
        dump = real(path, *args, **kwargs)
        os.truncate(path, 200)
        return dump

    monkeypatch.setattr(convert_module, "read_dump", then_truncate)
    out = tmp_path / "out"
    out.mkdir()
    result = convert_file(src, out)
    assert result.error is not None and "shrank" in result.error
