"""Helpers of an acllite application: return checks and copies to the device."""

import acl
import constants as const
from acllite_logger import log_error


def check_ret(message, ret):
    if ret != const.ACL_SUCCESS:
        raise Exception(f"{message} failed ret={ret}: {acl.get_recent_err_msg()}")


def copy_data_to_device(data_ptr, size, kind):
    device_ptr, ret = acl.rt.malloc(size, const.ACL_MEM_MALLOC_NORMAL_ONLY)
    check_ret("acl.rt.malloc", ret)
    ret = acl.rt.memcpy(device_ptr, size, data_ptr, size, kind)
    if ret != const.ACL_SUCCESS:
        log_error("copy to device failed, ret=%d", ret)
        acl.rt.free(device_ptr)
        return None
    return device_ptr


def copy_data_host_to_device(data_ptr, size):
    return copy_data_to_device(data_ptr, size, const.ACL_MEMCPY_HOST_TO_DEVICE)


def copy_data_device_to_device(data_ptr, size):
    return copy_data_to_device(data_ptr, size, const.ACL_MEMCPY_DEVICE_TO_DEVICE)


def align_up(value, align):
    return ((value + align - 1) // align) * align


def yuv420sp_size(width, height):
    return width * height * 3 // 2
