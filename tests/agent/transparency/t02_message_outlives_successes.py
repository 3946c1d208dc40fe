"""A failure the job reads only after many successful calls (which the agent
follows with calls of its own), and failures of destroy calls."""

import acl
from jobview import THREAD_LEVEL, Model, check, said, show

check(acl.init(), "acl.init")
show("set_device(42)", acl.rt.set_device(42))
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
configured, ret = acl.rt.create_stream_with_config(1, 0)
show("create_stream_with_config", ret)
model = Model("mlp_head")
show("peek after successes", acl.rt.peek_at_last_error(THREAD_LEVEL))
show("message after successes", said(acl.get_recent_err_msg()))
show("destroy_stream(bogus)", acl.rt.destroy_stream(0xBAD))
show("destroy_stream(bogus) said", said(acl.get_recent_err_msg()))
show("destroy_context(bogus)", acl.rt.destroy_context(0xBAD))
show("unload(77)", acl.mdl.unload(77))
show("message after two", said(acl.get_recent_err_msg()))
show("last error", acl.rt.get_last_error(THREAD_LEVEL))
model.release()
if configured:
    check(acl.rt.destroy_stream(configured), "acl.rt.destroy_stream")
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
show("reset_device(0) again", acl.rt.reset_device(0))
show("said", said(acl.get_recent_err_msg()))
check(acl.finalize(), "acl.finalize")
show("finalize again", acl.finalize())
show("said", said(acl.get_recent_err_msg()))
