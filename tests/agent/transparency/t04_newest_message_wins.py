"""A failure the agent hooks, then one it does not (or the other way round):
the job reads the newer message, as the runtime keeps only that."""

import acl
from jobview import THREAD_LEVEL, check, said, show

ACL_MEMCPY_DEVICE_TO_DEVICE = 3
check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
show("hooked", acl.rt.set_device(99))
pointer, ret = acl.rt.malloc(1 << 60, 0)
show("unhooked malloc", ret)
show("reads", said(acl.get_recent_err_msg()))
show("code", acl.rt.get_last_error(THREAD_LEVEL))
pointer, ret = acl.rt.malloc(1 << 60, 0)
show("unhooked again", ret)
show("hooked again", acl.rt.create_context(55)[1])
show("reads", said(acl.get_recent_err_msg()))
show("peek", acl.rt.peek_at_last_error(THREAD_LEVEL))
show(
    "hooked, then read twice",
    (acl.rt.set_device(98), said(acl.get_recent_err_msg()), acl.get_recent_err_msg()),
)
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
