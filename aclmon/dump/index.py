"""Index a dump directory: walk, classify, link overflow records to operator dumps.

Works on the documented ``{dump_path}/{time}/{device}/{model}/{model_id}/{step}/``
tree and on flat directories alike: every file below the root is classified by
name and first bytes. An overflow record points at the operator that
overflowed by (task id, stream id) — plus context/thread for FFTS+ sub-tasks —
and is linked to the operator dump with those ids, preferring one in the same
directory (ids repeat across steps and devices).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any

from aclmon.dump.naming import DumpName, parse_dump_name
from aclmon.dump.summary import (
    KIND_NANO,
    KIND_OP_DUMP,
    KIND_OVERFLOW,
    classify,
    classify_or_raise,
)
from aclmon.errors import AclmonError


@dataclass
class IndexedFile:
    path: str
    kind: str
    size: int
    name: DumpName | None
    #: the directory levels below the root, e.g. ("20200808163566", "0", "model", "11", "0").
    parts: tuple[str, ...] = ()

    @property
    def location(self) -> dict[str, str | int]:
        """The documented levels ``{time}/{device}/{model}/{model_id}/{step}`` that this
        file's directory has (read from the end, so the root may sit above or at
        ``{dump_path}``); empty for a flat directory or an unrecognised tree."""
        for start in range(len(self.parts)):
            time_dir = self.parts[start]
            if len(time_dir) == 14 and time_dir.isdigit():  # YYYYmmddHHMMSS
                levels = self.parts[start:]
                break
        else:
            return {}
        found: dict[str, str | int] = {"time": levels[0]}
        for key, value in zip(
            ("device_id", "model_name", "model_id", "step"), levels[1:], strict=False
        ):
            if key in ("device_id", "model_id", "step"):
                if not value.isdigit():
                    break
                found[key] = int(value)
            else:
                found[key] = value
        return found


@dataclass
class OverflowLink:
    overflow: IndexedFile
    output: int  # which output of the Opdebug file holds the record
    record: dict[str, Any]
    target: dict[str, int | None]
    op_dump: IndexedFile | None  # None when no operator dump matches


class DumpIndex:
    """Classified files below ``directory`` and the overflow -> op-dump links, found
    when the index is made (a walk of the tree and a read of each overflow file)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)
        self.files: list[IndexedFile] = []
        self.links: list[OverflowLink] = []
        #: overflow files that could not be decoded, one line each
        self.errors: list[str] = []
        #: files (or directories) that could not be looked at, and why
        self.skipped: list[tuple[str, str]] = []
        #: readable files that are not dump files
        self.not_dumps = 0
        self._by_task: dict[int, list[IndexedFile]] = {}
        self._walk()
        for f in self.op_dumps:
            if f.name is not None:
                self._by_task.setdefault(f.name.task_id, []).append(f)
        self._link()

    @property
    def op_dumps(self) -> list[IndexedFile]:
        return [f for f in self.files if f.kind in (KIND_OP_DUMP, KIND_NANO)]

    @property
    def overflows(self) -> list[IndexedFile]:
        return [f for f in self.files if f.kind == KIND_OVERFLOW]

    def find(
        self, task_id: int, stream_id: int | None, near: str | None = None
    ) -> list[IndexedFile]:
        """Operator dumps with these ids; those in directory ``near`` first."""
        hits = [
            f
            for f in self._by_task.get(task_id, [])
            if stream_id is None or f.name is None or f.name.stream_id in (None, stream_id)
        ]
        if near is not None:
            hits.sort(key=lambda f: os.path.dirname(f.path) != near)
        return hits

    def _walk(self) -> None:
        root = self.directory

        def unreadable(exc: OSError) -> None:
            self.skipped.append((exc.filename or root, (exc.strerror or str(exc)).lower()))

        for current, dirs, names in os.walk(root, onerror=unreadable):
            dirs.sort()
            rel = os.path.relpath(current, root)
            parts = () if rel == "." else tuple(rel.split(os.sep))
            for name in sorted(names):
                path = os.path.join(current, name)
                try:
                    kind = classify_or_raise(path)
                    size = os.path.getsize(path) if kind is not None else 0
                except OSError as exc:
                    self.skipped.append((path, (exc.strerror or str(exc)).lower()))
                    continue
                if kind is None:
                    self.not_dumps += 1
                    continue
                self.files.append(IndexedFile(path, kind, size, parse_dump_name(name), parts))

    def _link(self) -> None:
        from aclmon.dump.opdebug import decode_opdebug, overflow_target
        from aclmon.dump.reader import read_dump

        for overflow in self.overflows:
            try:
                dump = read_dump(overflow.path)
                for tensor in dump.outputs:
                    record = decode_opdebug(
                        bytes(tensor.raw), os.path.basename(overflow.path), tensor.offset
                    )
                    target = overflow_target(record)
                    self.links.append(
                        OverflowLink(
                            overflow, tensor.index, record, target, self._match(target, overflow)
                        )
                    )
            except AclmonError as exc:
                self.errors.append(str(exc))

    def _match(self, target: dict[str, int | None], overflow: IndexedFile) -> IndexedFile | None:
        task, stream = target.get("task_id"), target.get("stream_id")
        if task is None:
            return None
        hits = self.find(task, stream, near=os.path.dirname(overflow.path))
        thread = target.get("thread_id")
        # FFTS+ sub-task dumps carry the thread id in their name; prefer the same thread.
        if thread is not None:
            hits.sort(key=lambda f: not (f.name and f.name.thread_id in (None, thread)))
        return hits[0] if hits else None


#: files looked at in one directory when linking a single overflow file
MAX_DIR_SCAN = 20_000


def find_op_dump(directory: str, task_id: int, stream_id: int | None) -> str:
    """The newest operator dump in ``directory`` (not below it) with this task id
    (and stream id, when the name has one); "" if none. What links an overflow
    record named on its own to the operator it points at."""
    best: tuple[int, str] | None = None
    try:
        with os.scandir(directory) as entries:
            for n, entry in enumerate(entries):
                if n >= MAX_DIR_SCAN:
                    break
                name = parse_dump_name(entry.name)
                if name is None or name.is_overflow or name.task_id != task_id:
                    continue
                if stream_id is not None and name.stream_id not in (None, stream_id):
                    continue
                if classify(entry.path) != KIND_OP_DUMP:
                    continue  # exception dumps and nano files are not the operator's dump
                if best is None or name.timestamp > best[0]:
                    best = (name.timestamp, entry.path)
    except OSError:
        return ""
    return best[1] if best else ""


def overflow_operator(opdebug_path: str, target: dict[str, int | None]) -> dict[str, Any]:
    """The operator an overflow record points at (``target``: its task and stream
    ids), named by the operator dump with those ids beside the Opdebug file:
    ``{"op_dump", "op_type", "op_name"}``, or ``{}`` when none is there. The
    Opdebug file's own name (``Opdebug.Node_OpDebug.{task}...``) names no operator."""
    from aclmon.dump.reader import read_dump

    task = target.get("task_id")
    if not isinstance(task, int):
        return {}
    stream = target.get("stream_id")
    found = find_op_dump(
        os.path.dirname(opdebug_path) or ".", task, stream if isinstance(stream, int) else None
    )
    name = parse_dump_name(os.path.basename(found)) if found else None
    if name is None:
        return {}
    op_name = name.op_name  # "/" and "." made "_" by the writer; the header has the real one
    with contextlib.suppress(AclmonError, OSError):
        op_name = read_dump(found, header_only=True).op_name or op_name
    return {"op_dump": found, "op_type": name.op_type, "op_name": op_name}
