"""Host callbacks on a stream (subscribe_report, launch_callback, process_report on
a thread of the job) between model executions."""

import threading

import acl
from jobview import Model, check, show

ACL_CALLBACK_BLOCK = 1
calls = []
reports = []
stop = []
subscribed = threading.Event()


def callback(arguments):
    calls.append(arguments)


def process(arguments):
    context, timeout = arguments
    check(acl.rt.set_context(context), "acl.rt.set_context")
    subscribed.wait()
    while not stop:
        reports.append(acl.rt.process_report(timeout))


check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
model = Model("mlp_head")
thread_id, ret = acl.util.start_thread(process, [context, 50])
check(ret, "acl.util.start_thread")
check(acl.rt.subscribe_report(thread_id, stream), "acl.rt.subscribe_report")
subscribed.set()
for step in range(3):
    check(acl.mdl.execute_async(model.model_id, model.inputs, model.outputs, stream), "execute")
    check(acl.rt.launch_callback(callback, [step, "done"], ACL_CALLBACK_BLOCK, stream), "launch")
show("synchronize", acl.rt.synchronize_stream(stream))
show("calls", calls)
show("output", model.output_sum())
stop.append(True)
check(acl.util.stop_thread(thread_id), "acl.util.stop_thread")
check(acl.rt.unsubscribe_report(thread_id, stream), "acl.rt.unsubscribe_report")
show("unsubscribe again", acl.rt.unsubscribe_report(thread_id, stream))
show("callbacks run by process_report", reports.count(0))
model.release()
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
