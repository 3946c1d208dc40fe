"""Benchmark the layout conversion of ``aclmon convert -f`` alone (no file I/O).

For FRACTAL_NZ -> ND and NC1HWC0 -> NCHW/NHWC, on realistic float16 shapes
(multiples of 16 and not, so with and without padding to remove), two arms
side by side in alternating rounds:

* two copies: the reshape that merges the padded axes (a copy), then the
  crop made contiguous (a second copy) -- what ``convert -f`` did before;
* aclmon: what ``convert -f`` does now (``convert_contiguous``, else
  ``convert_to_host`` made contiguous), each element copied once.

Each arm's result is checked against the other. Reported per shape: the best
CPU time of each arm (both are single-threaded numpy copies; CPU time keeps
other processes' load out of the figures) and ``speedup`` = two copies / aclmon (> 1: aclmon faster).
The last line is one JSON object: the per-shape speedups and their geometric
mean per format.

Run: python bench/bench_layout.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable

import numpy as np

from aclmon.dump import proto_enums as pe
from aclmon.dump.formats import convert_contiguous, convert_to_host

C0 = 16
#: FRACTAL_NZ tensors by their ND shape (matmul weights and activations, an embedding)
NZ_SHAPES = [(4096, 4096), (1000, 1000), (2048, 1000), (8, 1000, 1000), (30522, 768), (64, 77, 768)]
#: NC1HWC0 tensors by their NCHW shape (C not a multiple of 16 in two)
NC1HWC0_SHAPES = [(16, 120, 64, 64), (32, 64, 56, 56), (8, 3, 224, 224), (64, 1024, 7, 7)]
_FROM_NCHW = {pe.FORMAT_NCHW: (0, 1, 2, 3), pe.FORMAT_NHWC: (0, 2, 3, 1)}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def nz_device(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    *batch, rows, cols = shape
    dims = (*batch, _ceil(cols, C0), _ceil(rows, 16), 16, C0)
    return rng.standard_normal(math.prod(dims), dtype=np.float32).astype(np.float16).reshape(dims)


def nz_two_copies(device: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    *batch, rows, cols = shape
    b = math.prod(batch)
    c1, no, ni, c0 = device.shape[-4:]
    merged = device.reshape(b, c1, no, ni, c0).transpose(0, 2, 3, 1, 4).reshape(b, no * ni, c1 * c0)
    return np.ascontiguousarray(merged[:, :rows, :cols].reshape(shape))


def nc1hwc0_device(nchw: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    n, c, h, w = nchw
    dims = (n, _ceil(c, C0), h, w, C0)
    return rng.standard_normal(math.prod(dims), dtype=np.float32).astype(np.float16).reshape(dims)


def nc1hwc0_two_copies(device: np.ndarray, target: tuple[int, ...], dst: int) -> np.ndarray:
    n, c1, h, w, c0 = device.shape
    nchw = device.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w).transpose(_FROM_NCHW[dst])
    return np.ascontiguousarray(nchw[tuple(slice(0, t) for t in target)])


def aclmon_convert(device: np.ndarray, src: int, target: tuple[int, ...], dst: int) -> np.ndarray:
    """What ``convert -f`` runs on one tensor (aclmon.dump.convert._to_target_format)."""
    converted = convert_contiguous(device, src, target, dst)
    if converted is None:
        converted = np.ascontiguousarray(convert_to_host(device, src, target, dst))
    return converted


def best_of(arms: dict[str, Callable[[], np.ndarray]], rounds: int) -> dict[str, float]:
    best = dict.fromkeys(arms, math.inf)
    for _ in range(rounds):
        for name, arm in arms.items():
            t0 = time.process_time()
            arm()
            best[name] = min(best[name], time.process_time() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    cases: list[tuple[str, str, Callable[[], np.ndarray], Callable[[], np.ndarray]]] = []
    for shape in NZ_SHAPES:
        device = nz_device(shape, rng)
        cases.append(
            (
                "FRACTAL_NZ",
                "x".join(map(str, shape)),
                lambda d=device, s=shape: nz_two_copies(d, s),
                lambda d=device, s=shape: aclmon_convert(d, pe.FORMAT_FRACTAL_NZ, s, pe.FORMAT_ND),
            )
        )
    for nchw in NC1HWC0_SHAPES:
        device = nc1hwc0_device(nchw, rng)
        for dst in _FROM_NCHW:
            target = tuple(nchw[axis] for axis in _FROM_NCHW[dst])
            cases.append(
                (
                    f"NC1HWC0->{pe.format_name(dst)}",
                    "x".join(map(str, target)),
                    lambda d=device, t=target, f=dst: nc1hwc0_two_copies(d, t, f),
                    lambda d=device, t=target, f=dst: aclmon_convert(d, pe.FORMAT_NC1HWC0, t, f),
                )
            )
    figures: dict[str, float] = {}
    by_format: dict[str, list[float]] = {}
    for fmt, label, two, one in cases:
        want, got = two(), one()
        assert got.flags.c_contiguous and np.array_equal(got, want), (fmt, label)
        best = best_of({"two": two, "aclmon": one}, args.rounds)
        speedup = best["two"] / best["aclmon"]
        print(
            f"{fmt:16} {label:18} {want.nbytes / 2**20:7.1f} MiB  two copies "
            f"{best['two'] * 1e3:7.2f} ms  aclmon {best['aclmon'] * 1e3:7.2f} ms  "
            f"speedup {speedup:.2f}"
        )
        figures[f"{fmt}:{label}"] = round(speedup, 3)
        by_format.setdefault(fmt.split("->")[0], []).append(speedup)
    for fmt, values in by_format.items():
        figures[f"{fmt.lower()}_speedup_geomean"] = round(math.prod(values) ** (1 / len(values)), 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
