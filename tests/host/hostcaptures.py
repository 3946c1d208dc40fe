"""Real npu-smi outputs from public sources (tests/host/captures/*.txt).

Each file starts with ``# source:`` and ``# product:`` lines and ``# ---``; what
follows is the captured text, byte for byte (trailing spaces included).
"""

from __future__ import annotations

from pathlib import Path

CAPTURES = Path(__file__).parent / "captures"


def capture(name: str) -> str:
    """The captured text of ``captures/<name>`` (without its source header)."""
    header, separator, body = (CAPTURES / name).read_text().partition("# ---\n")
    assert separator and "# source: " in header, f"{name} names no source"
    return body


def all_captures(prefix: str = "") -> list[str]:
    return sorted(path.name for path in CAPTURES.glob(f"{prefix}*.txt"))
