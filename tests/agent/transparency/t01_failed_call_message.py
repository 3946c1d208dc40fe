"""A failed call: its code, then its message, read once (the crash of issue 22:
``acl.get_recent_err_msg().splitlines()[0]`` on an empty message)."""

import acl
from jobview import THREAD_LEVEL, check, said, show

check(acl.init(), "acl.init")
ret = acl.rt.set_device(99)
show("set_device(99)", ret)
show("peek", acl.rt.peek_at_last_error(THREAD_LEVEL))
message = acl.get_recent_err_msg()
show("first line", said(message.splitlines()[0]))
show("message", said(message))
show("read again", acl.get_recent_err_msg())
show("last error", acl.rt.get_last_error(THREAD_LEVEL))
show("last error again", acl.rt.get_last_error(THREAD_LEVEL))
check(acl.finalize(), "acl.finalize")
