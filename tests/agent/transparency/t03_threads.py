"""Each thread its own failure, its own message and code; the hot calls
(synchronize_stream, set_context) fail on some."""

import threading

import acl
from jobview import THREAD_LEVEL, check, said, show

check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
results = {}
turn = threading.Semaphore(0)


def worker(name, fail):
    check(acl.rt.set_context(context), "acl.rt.set_context")
    ret = fail()
    turn.release()  # every thread has failed before any reads
    go.wait()
    results[name] = (
        ret,
        acl.rt.peek_at_last_error(THREAD_LEVEL),
        said(acl.get_recent_err_msg()),
        acl.get_recent_err_msg(),
        acl.rt.get_last_error(THREAD_LEVEL),
    )


go = threading.Event()
failing = {
    "set_device": lambda: acl.rt.set_device(97),
    "set_context": lambda: acl.rt.set_context(0xDEAD),
    "synchronize_stream": lambda: acl.rt.synchronize_stream(0xDEAD),
    "synchronize_device_with_timeout": lambda: acl.rt.synchronize_device_with_timeout(-5),
    "none": lambda: 0,
}
threads = [threading.Thread(target=worker, args=item) for item in failing.items()]
for thread in threads:
    thread.start()
for _ in threads:
    turn.acquire()
go.set()
for thread in threads:
    thread.join()
for name in failing:
    show(name, results[name])
show("main thread", (acl.rt.peek_at_last_error(THREAD_LEVEL), acl.get_recent_err_msg()))
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
