"""What the transparency scripts share: their arguments, and the job's view printed
with the process id and the clock masked (the only things that differ between runs).

Plain pyACL code: the scripts import ``acl`` and this, nothing of aclmon.
"""

import json
import os
import re
import sys

import acl
import numpy as np

ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
THREAD_LEVEL = 0

_PID = re.compile(r"PID: \d+")
_TIME = re.compile(r"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3}")
_STAMP = re.compile(r"\d{14,}")


def said(text):
    """A runtime message as the job would log it, minus pid and time."""
    return _TIME.sub("<time>", _PID.sub("PID: <pid>", text))


def show(label, value):
    print(f"{label}: {value!r}", flush=True)


def check(ret, what):
    if ret != 0:
        raise SystemExit(f"{what} failed: {ret}")


def model_path(name):
    """A shipped model description (the directory is the script's first argument)."""
    return os.path.join(sys.argv[1], f"{name}.json")


def work_dir(*parts):
    """The script's own scratch directory (its second argument), or a path in it."""
    os.makedirs(sys.argv[2], exist_ok=True)
    return os.path.join(sys.argv[2], *parts)


def acl_json(config):
    """An acl.json in the scratch directory, for acl.init."""
    path = work_dir("acl.json")
    with open(path, "w") as handle:
        json.dump(config, handle)
    return path


def masked_names(root):
    """The files below ``root``, relative, with timestamps masked, sorted."""
    names = []
    for directory, _, files in os.walk(root):
        for name in files:
            relative = os.path.relpath(os.path.join(directory, name), root)
            names.append(_STAMP.sub("<t>", relative))
    return sorted(names)


class Model:
    """A loaded model with its input and output buffers, as the samples build them."""

    def __init__(self, name, fill=0.5):
        self.model_id, ret = acl.mdl.load_from_file(model_path(name))
        check(ret, "acl.mdl.load_from_file")
        self.desc = acl.mdl.create_desc()
        check(acl.mdl.get_desc(self.desc, self.model_id), "acl.mdl.get_desc")
        self.buffers = []
        self.inputs = self._dataset(
            acl.mdl.get_num_inputs(self.desc), acl.mdl.get_input_size_by_index, fill
        )
        self.outputs = self._dataset(
            acl.mdl.get_num_outputs(self.desc), acl.mdl.get_output_size_by_index, None
        )

    def _dataset(self, count, size_of, fill):
        dataset = acl.mdl.create_dataset()
        for index in range(count):
            size = size_of(self.desc, index)
            pointer, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
            check(ret, "acl.rt.malloc")
            if fill is not None:
                host = np.full(size // 2, fill, np.float16)
                check(
                    acl.rt.memcpy(
                        pointer,
                        size,
                        acl.util.numpy_to_ptr(host),
                        host.nbytes,
                        ACL_MEMCPY_HOST_TO_DEVICE,
                    ),
                    "acl.rt.memcpy",
                )
            self.buffers.append(pointer)
            _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(pointer, size))
            check(ret, "acl.mdl.add_dataset_buffer")
        return dataset

    def output_sum(self):
        """The first output's bytes, summed: what the job computed."""
        data = acl.mdl.get_dataset_buffer(self.outputs, 0)
        size = acl.get_data_buffer_size_v2(data)
        host = np.zeros(size, np.uint8)
        check(
            acl.rt.memcpy(
                acl.util.numpy_to_ptr(host),
                size,
                acl.get_data_buffer_addr(data),
                size,
                ACL_MEMCPY_DEVICE_TO_HOST,
            ),
            "acl.rt.memcpy",
        )
        return int(host.sum())

    def release(self):
        for dataset in (self.inputs, self.outputs):
            for index in range(acl.mdl.get_dataset_num_buffers(dataset)):
                acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(dataset, index))
            acl.mdl.destroy_dataset(dataset)
        for pointer in self.buffers:
            acl.rt.free(pointer)
        check(acl.mdl.unload(self.model_id), "acl.mdl.unload")
        acl.mdl.destroy_desc(self.desc)
