"""A bounded walk over a directory tree, for the agent's dump watcher and the plog finder.

Plain Python, no numpy: the agent imports this inside the job, where a huge or
deep tree must not cost it more than a bounded amount of work per look.
"""

from __future__ import annotations

import os
from collections.abc import Iterator


def walk_files(
    root: str | os.PathLike[str], max_depth: int, max_entries: int, *, ordered: bool = False
) -> Iterator[os.DirEntry[str]]:
    """The regular files below ``root``, depth first, without following links: at
    most ``max_depth`` directories down, looking at no more than ``max_entries``
    entries in all (files and directories). ``ordered``: each directory in name
    order. Unreadable directories and entries are skipped."""
    yield from _walk(os.fspath(root), 0, max_depth, [max_entries], ordered)


def _walk(
    directory: str, depth: int, max_depth: int, budget: list[int], ordered: bool
) -> Iterator[os.DirEntry[str]]:
    try:
        scan = os.scandir(directory)
    except OSError:
        return
    with scan:
        entries = sorted(scan, key=lambda e: e.name) if ordered else scan
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                return
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < max_depth:
                        yield from _walk(entry.path, depth + 1, max_depth, budget, ordered)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            yield entry
