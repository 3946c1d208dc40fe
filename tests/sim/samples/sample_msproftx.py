"""msproftx (pyACL guide): mark, push/pop and range_start/range_stop variants."""

import sys

import acl
from common_io import check

ACL_PROF_MSPROFTX = 0x0080
ACL_PROF_TASK_TIME = 0x0002
ACL_AICORE_NONE = 0xFF

variant, prof_path = sys.argv[1], sys.argv[2]
device_id = 0

check(acl.init(), "acl.init")
check(acl.rt.set_device(device_id), "acl.rt.set_device")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
check(acl.prof.init(prof_path), "acl.prof.init")
config = acl.prof.create_config(
    [device_id], ACL_AICORE_NONE, 0, ACL_PROF_MSPROFTX | ACL_PROF_TASK_TIME
)
check(acl.prof.start(config), "acl.prof.start")

stamp = acl.prof.create_stamp()
if stamp == 0:
    raise RuntimeError("acl.prof.create_stamp failed")
message = f"{variant} stamp"
check(acl.prof.set_stamp_trace_message(stamp, message, len(message)), "set_stamp_trace_message")
if variant == "mark":
    check(acl.prof.mark(stamp), "acl.prof.mark")
elif variant == "push_pop":
    check(acl.prof.push(stamp), "acl.prof.push")
    check(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")
    check(acl.prof.pop(), "acl.prof.pop")
elif variant == "range":
    range_id, ret = acl.prof.range_start(stamp)
    check(ret, "acl.prof.range_start")
    check(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")
    check(acl.prof.range_stop(range_id), "acl.prof.range_stop")
acl.prof.destroy_stamp(stamp)

check(acl.prof.stop(config), "acl.prof.stop")
check(acl.prof.destroy_config(config), "acl.prof.destroy_config")
check(acl.prof.finalize(), "acl.prof.finalize")
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.reset_device(device_id), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
