"""The job subscribes its model for operator timings through a pipe (profiling
on), reads the records on its own thread, unsubscribes (profiling off)."""

import os

import acl
import numpy as np
from jobview import Model, check, show

ACL_AICORE_PIPE_UTILIZATION = 1
records = []


def read_records(arguments):
    fd, context = arguments
    check(acl.rt.set_context(context), "acl.rt.set_context")
    size, ret = acl.prof.get_op_desc_size()
    check(ret, "acl.prof.get_op_desc_size")
    while True:
        data = os.read(fd, size * 10)
        if not data:
            break
        array = np.frombuffer(data, np.uint8).copy()
        pointer = acl.util.numpy_to_ptr(array)
        count, ret = acl.prof.get_op_num(pointer, len(data))
        check(ret, "acl.prof.get_op_num")
        for index in range(count):
            op_type, _ = acl.prof.get_op_type(pointer, len(data), index, 65)
            op_name, _ = acl.prof.get_op_name(pointer, len(data), index, 275)
            records.append((op_type, op_name))


check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
model = Model("attention_tiny")
read_end, write_end = os.pipe()
config = acl.prof.create_subscribe_config(1, ACL_AICORE_PIPE_UTILIZATION, write_end)
show("subscribe", acl.prof.model_subscribe(model.model_id, config))
show("subscribe twice", acl.prof.model_subscribe(model.model_id, config))
thread_id, ret = acl.util.start_thread(read_records, [read_end, context])
check(ret, "acl.util.start_thread")
for _ in range(3):
    check(acl.mdl.execute(model.model_id, model.inputs, model.outputs), "acl.mdl.execute")
show("unsubscribe", acl.prof.model_un_subscribe(model.model_id))
check(acl.util.stop_thread(thread_id), "acl.util.stop_thread")
os.close(read_end)
check(acl.prof.destroy_subscribe_config(config), "acl.prof.destroy_subscribe_config")
show("records", (len(records), sorted(set(records))))
show("unsubscribe again", acl.prof.model_un_subscribe(model.model_id))
model.release()
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
