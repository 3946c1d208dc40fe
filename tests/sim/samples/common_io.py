"""Input/output preparation as in the pyACL inference samples (plain ``import acl`` code)."""

import acl
import numpy as np

ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_SUCCESS = 0
NPY_FLOAT16 = 23
NPY_FLOAT32 = 11


def check(ret, what):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed, ret={ret}: {acl.get_recent_err_msg()}")


def prepare_dataset(model_desc, inputs):
    """Device buffers for every input (filled from the numpy arrays) and output."""
    input_dataset = acl.mdl.create_dataset()
    for i, array in enumerate(inputs):
        size = acl.mdl.get_input_size_by_index(model_desc, i)
        dev_ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "acl.rt.malloc")
        host = np.ascontiguousarray(array)
        ret = acl.rt.memcpy(
            dev_ptr, size, acl.util.numpy_to_ptr(host), host.nbytes, ACL_MEMCPY_HOST_TO_DEVICE
        )
        check(ret, "acl.rt.memcpy")
        data = acl.create_data_buffer(dev_ptr, size)
        _, ret = acl.mdl.add_dataset_buffer(input_dataset, data)
        check(ret, "acl.mdl.add_dataset_buffer")
    output_dataset = acl.mdl.create_dataset()
    for i in range(acl.mdl.get_num_outputs(model_desc)):
        size = acl.mdl.get_output_size_by_index(model_desc, i)
        dev_ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "acl.rt.malloc")
        data = acl.create_data_buffer(dev_ptr, size)
        _, ret = acl.mdl.add_dataset_buffer(output_dataset, data)
        check(ret, "acl.mdl.add_dataset_buffer")
    return input_dataset, output_dataset


def fetch_output(model_desc, output_dataset, index):
    data = acl.mdl.get_dataset_buffer(output_dataset, index)
    dev_ptr = acl.get_data_buffer_addr(data)
    size = acl.get_data_buffer_size_v2(data)
    host_ptr, ret = acl.rt.malloc_host(size)
    check(ret, "acl.rt.malloc_host")
    ret = acl.rt.memcpy(host_ptr, size, dev_ptr, size, ACL_MEMCPY_DEVICE_TO_HOST)
    check(ret, "acl.rt.memcpy")
    dims, ret = acl.mdl.get_output_dims(model_desc, index)
    check(ret, "acl.mdl.get_output_dims")
    np_type = NPY_FLOAT16 if acl.mdl.get_output_data_type(model_desc, index) == 1 else NPY_FLOAT32
    array = acl.util.ptr_to_numpy(host_ptr, tuple(dims["dims"]), np_type).copy()
    check(acl.rt.free_host(host_ptr), "acl.rt.free_host")
    return array


def destroy_dataset(dataset):
    for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
        data = acl.mdl.get_dataset_buffer(dataset, i)
        check(acl.rt.free(acl.get_data_buffer_addr(data)), "acl.rt.free")
        check(acl.destroy_data_buffer(data), "acl.destroy_data_buffer")
    check(acl.mdl.destroy_dataset(dataset), "acl.mdl.destroy_dataset")
