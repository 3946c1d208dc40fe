"""A single-operator re-run of a failing operator: a script and its dumped inputs.

:func:`write_repro` writes, into a directory of its own, ``input_<i>.npy`` for
each input of the exception dump (the values the operator got when it failed)
and ``repro.py``: a plain pyACL program (no aclmon import) that initialises
ACL, copies those inputs to the device, runs the operator alone with
``acl.op.compile_and_execute`` and synchronizes. It exits 1 when the device
reports an error again (the fault reproduces: an operator bug, or these input
values), 0 when the operator runs cleanly (the fault needs the job's context:
memory freed or overwritten by other work, concurrency), 2 when it cannot run
the operator (the runtime has no single-operator API, a call failed).

Run it on a device with CANN (``python repro.py --device 0``) or under the
simulator (``aclmon run --sim repro.py``). The exception dump records no
attributes of the operator: an operator that needs some (a Conv2D's strides,
…) names them in ``ATTRS`` at the top, to be filled in by hand.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from aclmon.acl_constants import DATA_TYPE_NAMES, FORMAT_NAMES, data_type_name, format_name
from aclmon.dump import proto_enums as pe
from aclmon.errors import AclmonError

#: inputs larger than this are not written (the script says so)
MAX_INPUT_BYTES = 1 << 30

_ACL_DTYPES = {name: value for value, name in DATA_TYPE_NAMES.items()}
_ACL_FORMATS = {name: value for value, name in FORMAT_NAMES.items()}


def acl_dtype(proto_dtype: int) -> int | None:
    """The aclDataType of a dump proto dtype (the two numberings differ), by name."""
    name = pe.dtype_name(proto_dtype)
    short = name[3:] if name.startswith("DT_") else name
    return _ACL_DTYPES.get(f"ACL_{short}")


def acl_format(proto_format: int) -> int | None:
    short = pe.format_name(proto_format)
    return _ACL_FORMATS.get(f"ACL_FORMAT_{short}", _ACL_FORMATS.get(f"ACL_{short}"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:80] or "op"


_SCRIPT = '''"""Re-run of one failing operator, written by aclmon triage.

{title}
verdict: {verdict}

Run on a device:      python repro.py [--device N]
Run on the simulator: aclmon run --sim repro.py
Exit status: 1 the device reports an error again (it reproduces), 0 the operator
ran cleanly (the fault needs the job's context), 2 it could not be run.
"""

import argparse
import os
import sys

import numpy as np

import acl

HERE = os.path.dirname(os.path.abspath(__file__))
OP_TYPE = {op_type!r}
# (file, aclDataType, aclFormat, shape): the inputs as the operator got them
INPUTS = {inputs}
# (aclDataType, aclFormat, shape, bytes)
OUTPUTS = {outputs}
# The exception dump records no attributes: set the operator's here, e.g. {{"strides": [1, 1]}}.
ATTRS = {{}}
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_ENGINE_SYS = 0
ACL_COMPILE_SYS = 0


def call(what, result):
    ret = result[-1] if isinstance(result, tuple) else result
    if ret != 0:
        print(f"{{what}} failed: {{ret}} {{acl.get_recent_err_msg()}}", file=sys.stderr)
        sys.exit(2)
    return result[0] if isinstance(result, tuple) and len(result) == 2 else result


def set_attrs(attr):
    for name, value in ATTRS.items():
        if isinstance(value, bool):
            call(f"set_attr_bool {{name}}", acl.op.set_attr_bool(attr, name, int(value)))
        elif isinstance(value, int):
            call(f"set_attr_int {{name}}", acl.op.set_attr_int(attr, name, value))
        elif isinstance(value, float):
            call(f"set_attr_float {{name}}", acl.op.set_attr_float(attr, name, value))
        elif isinstance(value, str):
            call(f"set_attr_string {{name}}", acl.op.set_attr_string(attr, name, value))
        elif all(isinstance(v, int) for v in value):
            call(f"set_attr_list_int {{name}}", acl.op.set_attr_list_int(attr, name, list(value)))
        else:
            call(f"set_attr_list_float {{name}}", acl.op.set_attr_list_float(attr, name, list(value)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", type=int, default={device})
    args = parser.parse_args()
    if not hasattr(getattr(acl, "op", None), "compile_and_execute"):
        print("this runtime has no single-operator API (acl.op.compile_and_execute)", file=sys.stderr)
        return 2
    call("acl.init", acl.init())
    call("acl.rt.set_device", acl.rt.set_device(args.device))
    stream = call("acl.rt.create_stream", acl.rt.create_stream())
    in_descs, in_buffers, out_descs, out_buffers, held = [], [], [], [], []
    for name, dtype, fmt, shape in INPUTS:
        array = np.ascontiguousarray(np.load(os.path.join(HERE, name)))
        size = max(array.nbytes, 1)
        device = call("acl.rt.malloc", acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST))
        held.append(array)
        host = acl.util.numpy_to_ptr(array)
        call("acl.rt.memcpy", acl.rt.memcpy(device, size, host, array.nbytes, ACL_MEMCPY_HOST_TO_DEVICE))
        in_descs.append(acl.create_tensor_desc(dtype, list(shape), fmt))
        in_buffers.append(acl.create_data_buffer(device, array.nbytes))
    for dtype, fmt, shape, size in OUTPUTS:
        device = call("acl.rt.malloc", acl.rt.malloc(max(size, 1), ACL_MEM_MALLOC_HUGE_FIRST))
        out_descs.append(acl.create_tensor_desc(dtype, list(shape), fmt))
        out_buffers.append(acl.create_data_buffer(device, size))
    attr = acl.op.create_attr()
    set_attrs(attr)
    ret = acl.op.compile_and_execute(
        OP_TYPE, in_descs, in_buffers, out_descs, out_buffers, attr,
        ACL_ENGINE_SYS, ACL_COMPILE_SYS, "", stream,
    )
    if ret == 0:
        ret = acl.rt.synchronize_stream(stream)
    if ret != 0:
        print(f"reproduced: {{OP_TYPE}} failed with {{ret}}: {{acl.get_recent_err_msg()}}")
        return 1
    print(f"{{OP_TYPE}} ran cleanly on these inputs: the fault needs the job's context")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def write_repro(
    directory: str | os.PathLike[str],
    dump: Any,
    *,
    op_type: str,
    op_name: str = "",
    task_id: int = -1,
    device_id: int = 0,
    verdict: str = "",
) -> Path:
    """Write the re-run of the operator of ``dump`` (a
    :class:`~aclmon.dump.reader.DumpFile`, an exception dump) under ``directory``;
    returns the script's path. Raises :class:`AclmonError` when the dump's inputs
    cannot be read or the directory cannot be written."""
    if not op_type:
        raise AclmonError("the operator's type is not known: no single-operator re-run")
    target = Path(directory) / _slug(f"{op_type}_{op_name}_{task_id}" if op_name else op_type)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AclmonError(f"cannot write the re-run into {target}: {exc}") from exc
    inputs = []
    for tensor in dump.inputs:
        dtype = acl_dtype(tensor.data_type)
        fmt = acl_format(tensor.format)
        if dtype is None or fmt is None:
            raise AclmonError(
                f"input[{tensor.index}] of {dump.path}: {tensor.dtype_name}/"
                f"{tensor.format_name} has no aclDataType/aclFormat"
            )
        if tensor.size > MAX_INPUT_BYTES:
            raise AclmonError(f"input[{tensor.index}] is larger than {MAX_INPUT_BYTES} bytes")
        try:
            array = np.asarray(tensor.array)
        except (AclmonError, ValueError) as exc:
            raise AclmonError(f"input[{tensor.index}] of {dump.path}: {exc}") from exc
        name = f"input_{tensor.index}.npy"
        try:
            np.save(target / name, array)
        except OSError as exc:
            raise AclmonError(f"cannot write {target / name}: {exc}") from exc
        inputs.append((name, dtype, fmt, [int(d) for d in tensor.shape]))
    outputs = []
    for tensor in dump.outputs:
        dtype = acl_dtype(tensor.data_type)
        fmt = acl_format(tensor.format)
        if dtype is None or fmt is None:
            raise AclmonError(f"output[{tensor.index}] of {dump.path} has no aclDataType/aclFormat")
        outputs.append((dtype, fmt, [int(d) for d in tensor.shape], int(tensor.size)))
    described = ", ".join(f"{n} {data_type_name(d)} {format_name(f)} {s}" for n, d, f, s in inputs)
    title = (
        f"operator {op_type} {op_name} (task {task_id}, device {device_id}); inputs: {described}"
    )
    script = _SCRIPT.format(
        title=title.replace('"""', "'''"),
        verdict=(verdict or "(none)").replace('"""', "'''"),
        op_type=op_type,
        inputs=repr(inputs),
        outputs=repr(outputs),
        device=int(device_id) if device_id >= 0 else 0,
    )
    path = target / "repro.py"
    try:
        path.write_text(script, encoding="utf-8")
    except OSError as exc:
        raise AclmonError(f"cannot write {path}: {exc}") from exc
    return path
