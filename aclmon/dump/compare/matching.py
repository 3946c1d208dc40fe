"""What is compared with what: operators in execution order, their tensors, their goldens.

The NPU side is a dump directory (walked recursively). An operator is known by
its file-name spelling (the runtime writes ``/``, ``.``, space and ``\\`` as
``_``); when it was dumped several times (several steps) the last dump, by
timestamp then task id, is the one compared, as msaccucmp does. Execution order
is that dump's (timestamp, task id).

The golden side is either another dump directory (operators matched by name,
tensors by input/output index) or a directory of ``.npy`` files named as
msaccucmp's goldens are, ``{op_name}.{output_index}.{timestamp}.npy`` with ``/``
and ``.`` in the op name written ``_``. Those hold operator *outputs* only: an
NPU operator's input is compared with the golden output of the operator that
produced it, found through the fusion rule (``-f``) when one is given, else
through the dump itself (the latest earlier output at the same device
address).

Every tensor is compared in its logical layout: a padded device format
(NC1HWC0, FRACTAL_NZ ...) is converted and cropped to its original shape as
``aclmon convert -f`` does, bf16/float8 become float32 as msaccucmp writes them.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aclmon.dump import proto_enums as pe
from aclmon.dump.compare.metrics import Array
from aclmon.dump.naming import DumpName, sanitize_name
from aclmon.errors import AclmonError

#: the DataType column: msaccucmp's names for the proto dtypes it reads ("NaN" otherwise).
DATA_TYPE_NAMES: dict[int, str] = {
    pe.DT_FLOAT: "float32", pe.DT_FLOAT16: "float16", pe.DT_DOUBLE: "float64",
    pe.DT_INT8: "int8", pe.DT_INT16: "int16", pe.DT_INT32: "int32", pe.DT_INT64: "int64",
    pe.DT_UINT8: "uint8", pe.DT_UINT16: "uint16", pe.DT_UINT32: "uint32",
    pe.DT_UINT64: "uint64", pe.DT_BOOL: "bool", pe.DT_COMPLEX64: "complex64",
    pe.DT_COMPLEX128: "complex128", pe.DT_BF16: "bfloat16", pe.DT_UINT1: "uint1",
    pe.DT_UNDEFINED: "int8", pe.DT_RESOURCE: "int64", pe.DT_FLOAT8_E4M3FN: "float8_e4m3fn",
    pe.DT_HIFLOAT8: "hifloat8", pe.DT_FLOAT8_E5M2: "float8_e5m2",
}  # fmt: skip
NAN = "NaN"
INPUT = "input"
OUTPUT = "output"
#: msaccucmp's golden names (the op part may hold dots; the last two fields are numbers).
GOLDEN_NPY = re.compile(r"^(?P<op>.+)\.(?P<index>\d+)\.(?P<ts>\d+)\.npy$")


def data_type_name(proto_dtype: int | None) -> str:
    return NAN if proto_dtype is None else DATA_TYPE_NAMES.get(proto_dtype, NAN)


def address_text(address: int) -> str:
    return str(address) if address else NAN


@dataclass(frozen=True)
class TensorSource:
    """One tensor of one side: what the CSV says about it, and how to get its values."""

    file: str
    role: str  # "input" | "output"
    index: int
    dtype: str  # the DataType cell
    address: int  # 0 when the file has none
    shape: tuple[int, ...]  # as the file states it (a dump's header shape)
    format: int | None  # proto format; None for .npy
    original_shape: tuple[int, ...] = ()
    loader: Callable[[], Array] = field(default=lambda: np.empty(0), repr=False, compare=False)

    def load(self) -> Array:
        """The values in the logical layout; raises :class:`AclmonError` with the reason."""
        return self.loader()

    @property
    def logical_shape(self) -> tuple[int, ...]:
        from aclmon.dump.stats import PADDED_FORMATS

        if self.format in PADDED_FORMATS and self.original_shape:
            return self.original_shape
        return self.shape


def _dump_tensor_loader(tensor: Any) -> Callable[[], Array]:
    def load() -> Array:
        from aclmon.dump.dtypes import to_host_array
        from aclmon.dump.stats import logical_array

        decoded = tensor.decode()
        if not decoded.supported:
            raise AclmonError(f"{tensor.role} {tensor.index}: {decoded.label}")
        array = to_host_array(decoded.array, tensor.data_type)
        logical = logical_array(array, tensor.format, tensor.original_shape)
        return array if logical is None else logical

    return load


def dump_tensors(path: str) -> tuple[list[TensorSource], list[TensorSource], str]:
    """(inputs, outputs, header op name) of a dump file; its header is read now, each
    tensor's bytes when it is loaded. Raises :class:`AclmonError` for a bad file."""
    from aclmon.dump.reader import read_dump

    dump = read_dump(path)
    sides: list[list[TensorSource]] = [[], []]
    for side, role, tensors in ((0, INPUT, dump.inputs), (1, OUTPUT, dump.outputs)):
        for tensor in tensors:
            sides[side].append(
                TensorSource(
                    path,
                    role,
                    tensor.index,
                    data_type_name(tensor.data_type) if not tensor.dtype_label else NAN,
                    tensor.header.address,
                    tuple(tensor.shape),
                    tensor.format,
                    tuple(tensor.original_shape),
                    _dump_tensor_loader(tensor),
                )
            )
    return sides[0], sides[1], dump.op_name


@dataclass(frozen=True)
class OpDump:
    """The dump file compared for one operator."""

    key: str  # the op name as the file name spells it
    op_type: str
    path: str
    timestamp: int
    task_id: int

    @property
    def order(self) -> tuple[int, int]:
        return (self.timestamp, self.task_id)


@dataclass
class DumpDirectory:
    """The operator dumps below a directory, one per operator (its last), in execution order."""

    root: str
    ops: list[OpDump] = field(default_factory=list)
    #: operators dumped more than once -> how many earlier dumps were not compared
    repeated: dict[str, int] = field(default_factory=dict)
    stats_files: list[str] = field(default_factory=list)
    overflow_links: list[Any] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    not_dumps: int = 0  # readable files that are not dump files (or too damaged to tell)
    _by_key: dict[str, OpDump] = field(default_factory=dict, repr=False)

    def find(self, key: str) -> OpDump | None:
        return self._by_key.get(sanitize_name(key))

    def __iter__(self) -> Iterator[OpDump]:
        return iter(self.ops)


def op_dump_of(path: str, name: DumpName) -> OpDump:
    return OpDump(name.op_name, name.op_type, path, name.timestamp, name.task_id)


def index_dump_directory(root: str) -> DumpDirectory:
    """Walk ``root``: its operator dumps (one per operator), statistics CSVs, and the
    overflow records with the operator each points at."""
    from aclmon.dump.index import DumpIndex
    from aclmon.dump.summary import KIND_NANO, KIND_OP_DUMP, KIND_STATS

    if not os.path.isdir(root):
        raise AclmonError(f"{root}: not a directory")
    index = DumpIndex(root)
    found = DumpDirectory(
        root, skipped=list(index.skipped), errors=list(index.errors), not_dumps=index.not_dumps
    )
    found.overflow_links = list(index.links)
    latest: dict[str, OpDump] = {}
    for entry in index.files:
        if entry.kind == KIND_STATS:
            found.stats_files.append(entry.path)
            continue
        if entry.kind not in (KIND_OP_DUMP, KIND_NANO) or entry.name is None:
            continue
        op = op_dump_of(entry.path, entry.name)
        held = latest.get(op.key)
        if held is not None:
            found.repeated[op.key] = found.repeated.get(op.key, 0) + 1
            if held.order > op.order:
                continue
        latest[op.key] = op
    found.ops = sorted(latest.values(), key=lambda op: (op.order, op.key))
    found._by_key = dict(latest)
    return found


@dataclass
class NpyGolden:
    """A directory of golden ``.npy`` files: (op, output index) -> the newest file."""

    root: str
    files: dict[tuple[str, int], str] = field(default_factory=dict)

    def output(self, op_name: str, index: int) -> TensorSource | None:
        path = self.files.get((sanitize_name(op_name), index))
        if path is None:
            return None
        return npy_tensor(path, index)

    def op_names(self) -> set[str]:
        return {op for op, _ in self.files}


def index_npy_golden(root: str) -> NpyGolden:
    golden = NpyGolden(root)
    newest: dict[tuple[str, int], int] = {}
    for current, dirs, names in os.walk(root):
        dirs.sort()
        for name in names:
            match = GOLDEN_NPY.match(name)
            if match is None:
                continue
            key = (sanitize_name(match["op"]), int(match["index"]))
            stamp = int(match["ts"])
            if key not in newest or stamp >= newest[key]:
                newest[key] = stamp
                golden.files[key] = os.path.join(current, name)
    return golden


def npy_tensor(path: str, index: int) -> TensorSource:
    """A golden ``.npy`` (an operator output); its header is read now, its values on load."""
    dtype_name, shape = _npy_header(path)

    def load() -> Array:
        try:
            array: Array = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise AclmonError(f"{os.path.basename(path)}: cannot read: {exc}") from None
        return array

    return TensorSource(path, OUTPUT, index, dtype_name, 0, shape, None, (), load)


def _npy_header(path: str) -> tuple[str, tuple[int, ...]]:
    """(DataType cell, shape) from a .npy header; ("NaN", ()) when it cannot be read
    (the load then says why)."""
    from numpy.lib import format as npy_format

    try:
        with open(path, "rb") as handle:
            version = npy_format.read_magic(handle)
            if version == (1, 0):
                shape, _, dtype = npy_format.read_array_header_1_0(handle)
            else:
                shape, _, dtype = npy_format.read_array_header_2_0(handle)
    except (OSError, ValueError, EOFError, SyntaxError):
        return NAN, ()
    name = "bfloat16" if dtype.name == "bfloat16" else dtype.name
    if dtype.kind not in "biufc" and name != "bfloat16":
        name = NAN
    if any(not isinstance(d, int) or d < 0 for d in shape) or math.prod(shape) > 1 << 40:
        return name, ()
    return name, tuple(int(d) for d in shape)


def has_npy(root: str) -> bool:
    return any(any(GOLDEN_NPY.match(n) for n in names) for _, _, names in os.walk(root))


class Golden:
    """The golden side: another dump directory, or a directory of golden ``.npy`` files."""

    def __init__(self, root: str) -> None:
        if not os.path.isdir(root):
            raise AclmonError(f"{root}: not a directory")
        self.root = root
        self.dumps: DumpDirectory | None = None
        self.npy: NpyGolden | None = None
        dumps = index_dump_directory(root)
        if dumps.ops or dumps.stats_files:
            self.dumps = dumps
        elif has_npy(root):
            self.npy = index_npy_golden(root)
        else:
            raise AclmonError(
                f"{root}: no operator dumps, statistics CSVs or golden .npy files "
                "({op_name}.{output_index}.{timestamp}.npy)"
            )

    @property
    def kind(self) -> str:
        return "npy" if self.npy is not None else "dump"


class Producers:
    """Which operator output sits at a device address, over time: an input of an
    operator comes from the latest output at its address written before it runs."""

    def __init__(self) -> None:
        self._by_address: dict[int, list[tuple[tuple[int, int], str, int]]] = {}
        self._lock = threading.Lock()

    def add(self, op: OpDump, outputs: Iterable[TensorSource]) -> None:
        self._insert(op, [(tensor.address, tensor.index) for tensor in outputs])

    def find(self, address: int, before: tuple[int, int]) -> tuple[str, int] | None:
        with self._lock:
            entries = self._by_address.get(address)
            if not entries:
                return None
            at = bisect.bisect_left(entries, (before, "", -1))
            if at == 0:
                return None
            _, key, index = entries[at - 1]
            return key, index

    def fill(self, ops: Iterable[OpDump]) -> None:
        """Every output address of these operators (their headers only)."""
        from aclmon.dump.reader import read_dump

        for op in ops:
            try:
                dump = read_dump(op.path, header_only=True)
            except AclmonError:
                continue  # the operator's own row will say why
            self._insert(op, [(tensor.header.address, tensor.index) for tensor in dump.outputs])

    def _insert(self, op: OpDump, outputs: Iterable[tuple[int, int]]) -> None:
        """``(address, output index)`` of ``op``'s outputs, kept in execution order."""
        with self._lock:
            for address, index in outputs:
                if address:
                    bisect.insort(
                        self._by_address.setdefault(address, []), (op.order, op.key, index)
                    )
