"""An inference service in the common shape: a multiprocessing pool whose workers
each initialise ACL, load the model and serve requests. The parent never touches ACL.

usage: pool_job.py START_METHOD STOP_FILE MODEL
Each request waits for STOP_FILE, so the three workers stay up while a test looks.
"""

import multiprocessing
import os
import sys
import time

import acl
import numpy as np

ACL_MEMCPY_HOST_TO_DEVICE = 1
_model = {}


def start_worker(model_path):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    model_id, ret = acl.mdl.load_from_file(model_path)
    assert ret == 0, acl.get_recent_err_msg()
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    datasets = []
    for count, size_of in (
        (acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index),
        (acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index),
    ):
        dataset = acl.mdl.create_dataset()
        for index in range(count):
            size = size_of(desc, index)
            ptr, ret = acl.rt.malloc(size, 0)
            host = np.ones(size, np.uint8)
            acl.rt.memcpy(ptr, size, acl.util.numpy_to_ptr(host), size, ACL_MEMCPY_HOST_TO_DEVICE)
            acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(ptr, size))
        datasets.append(dataset)
    _model.update(model_id=model_id, inputs=datasets[0], outputs=datasets[1])


def serve(request, stop_file):
    ret = acl.mdl.execute(_model["model_id"], _model["inputs"], _model["outputs"])
    deadline = time.monotonic() + 60
    while not os.path.exists(stop_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    return request, ret, multiprocessing.current_process().name


if __name__ == "__main__":
    method, stop_file, model_path = sys.argv[1:4]
    context = multiprocessing.get_context(method)
    pool = context.Pool(3, initializer=start_worker, initargs=(model_path,))
    results = pool.starmap(serve, [(i, stop_file) for i in range(3)], chunksize=1)
    pool.close()
    pool.join()
    assert sorted(r[1] for r in results) == [0, 0, 0], results
    print("served", sorted(r[0] for r in results), flush=True)
