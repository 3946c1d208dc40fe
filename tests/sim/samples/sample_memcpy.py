"""Memory copies the way the public samples write them: a host buffer read back with
DEVICE_TO_HOST (the kind CANN treats as reserved), an async copy, a 2D copy, and, when
asked, a copy that runs past the end of a DVPP buffer."""

import json
import sys

import acl
import numpy as np
from common_io import check

ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEFAULT = 4
result_path = sys.argv[1]
overrun = "--overrun" in sys.argv

check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")

# A host buffer from malloc_host, filled and read back with DEVICE_TO_HOST.
data = np.arange(256, dtype=np.float32)
host, ret = acl.rt.malloc_host(data.nbytes)
check(ret, "acl.rt.malloc_host")
check(
    acl.rt.memcpy(host, data.nbytes, acl.util.numpy_to_ptr(data), data.nbytes,
                  ACL_MEMCPY_HOST_TO_DEVICE),
    "acl.rt.memcpy",
)  # fmt: skip
read_back = np.zeros_like(data)
check(
    acl.rt.memcpy(acl.util.numpy_to_ptr(read_back), data.nbytes, host, data.nbytes,
                  ACL_MEMCPY_DEVICE_TO_HOST),
    "acl.rt.memcpy",
)  # fmt: skip

# Device round trip, async then 2D (rows of 8 floats out of rows of 16).
device, ret = acl.rt.malloc(data.nbytes, 0)
check(ret, "acl.rt.malloc")
check(
    acl.rt.memcpy_async(device, data.nbytes, host, data.nbytes, ACL_MEMCPY_HOST_TO_DEVICE, stream),
    "acl.rt.memcpy_async",
)
check(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")
columns = np.zeros((16, 8), dtype=np.float32)
check(
    acl.rt.memcpy2d(acl.util.numpy_to_ptr(columns), 8 * 4, device, 16 * 4, 8 * 4, 16,
                    ACL_MEMCPY_DEVICE_TO_HOST),
    "acl.rt.memcpy2d",
)  # fmt: skip

result = {
    "read_back": read_back.tolist(),
    "columns": columns.tolist(),
}
if overrun:
    dvpp, ret = acl.media.dvpp_malloc(1000)
    check(ret, "acl.media.dvpp_malloc")
    big = np.ones(2000, dtype=np.uint8)
    result["overrun_ret"] = acl.rt.memcpy(
        dvpp, 2000, acl.util.numpy_to_ptr(big), 2000, ACL_MEMCPY_DEFAULT
    )
    result["overrun_message"] = acl.get_recent_err_msg()
    result["async_overrun_ret"] = acl.rt.memcpy_async(
        dvpp, 2000, acl.util.numpy_to_ptr(big), 2000, ACL_MEMCPY_DEFAULT, stream
    )
    result["async_sync_ret"] = acl.rt.synchronize_stream(stream)
    result["after_ret"] = acl.rt.synchronize_stream(stream)
    check(acl.media.dvpp_free(dvpp), "acl.media.dvpp_free")

check(acl.rt.free(device), "acl.rt.free")
check(acl.rt.free_host(host), "acl.rt.free_host")
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
with open(result_path, "w") as f:
    json.dump(result, f)
