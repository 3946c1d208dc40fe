"""Single-operator launches (acl.op), as a job that builds its own operators does:
launches that work, launches the runtime refuses and handles that fail, each
message and code read as the runtime left it."""

import acl
import numpy as np
from jobview import ACL_MEMCPY_HOST_TO_DEVICE, THREAD_LEVEL, check, said, show

ACL_FLOAT = 0
ACL_FORMAT_ND = 2


def tensor(array):
    desc = acl.create_tensor_desc(ACL_FLOAT, list(array.shape), ACL_FORMAT_ND)
    pointer, ret = acl.rt.malloc(array.nbytes, 0)
    check(ret, "acl.rt.malloc")
    check(
        acl.rt.memcpy(
            pointer, array.nbytes, acl.util.numpy_to_ptr(array), array.nbytes,
            ACL_MEMCPY_HOST_TO_DEVICE,
        ),
        "acl.rt.memcpy",
    )  # fmt: skip
    return desc, acl.create_data_buffer(pointer, array.nbytes), pointer


check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
x = tensor(np.ones((2, 4), np.float32))
y = tensor(np.zeros((2, 4), np.float32))
attr = acl.op.create_attr()
show("compile Add", acl.op.compile("Add", [x[0], x[0]], [y[0]], attr, 0, 0, None))
show("execute_v2 Add", acl.op.execute_v2("Add", [x[0], x[0]], [x[1], x[1]], [y[0]], [y[1]],
                                         attr, stream))  # fmt: skip
show("synchronize", acl.rt.synchronize_stream(stream))
ret = acl.op.execute_v2("Div", [x[0], x[0]], [x[1], x[1]], [y[0]], [y[1]], attr, stream)
show("execute_v2 Div", ret)
message = acl.get_recent_err_msg()
show("first line", said(message.splitlines()[0]))
show("read again", acl.get_recent_err_msg())
show("last error", (acl.rt.get_last_error(THREAD_LEVEL), acl.rt.get_last_error(THREAD_LEVEL)))
handle, ret = acl.op.create_handle("Sub", [x[0], x[0]], [y[0]], attr)
show("create_handle Sub (not compiled)", ret)
show("its message", said(acl.get_recent_err_msg()))
show("compile Sub", acl.op.compile("Sub", [x[0], x[0]], [y[0]], attr, 0, 0, None))
handle, ret = acl.op.create_handle("Sub", [x[0], x[0]], [y[0]], attr)
show("create_handle Sub", ret)
show("execute_with_handle", acl.op.execute_with_handle(handle, [x[1], x[1]], [y[1]], stream))
show("synchronize", acl.rt.synchronize_stream(stream))
show("peek after successes", acl.rt.peek_at_last_error(THREAD_LEVEL))
show("message after successes", acl.get_recent_err_msg())
acl.op.destroy_handle(handle)
ret = acl.op.execute_with_handle(0, [x[1], x[1]], [y[1]], stream)
show("execute_with_handle, no handle", ret)
show("its message", said(acl.get_recent_err_msg()))
acl.op.destroy_attr(attr)
for desc, buffer, pointer in (x, y):
    acl.destroy_data_buffer(buffer)
    acl.destroy_tensor_desc(desc)
    check(acl.rt.free(pointer), "acl.rt.free")
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
