"""A multiprocessing worker (fork) that initialises ACL, as an inference service's
workers do: under aclmon it gets an agent of its own at that acl.init, and still
reads what its own failed calls said (once, per thread, newest wins), including
what its parent's thread left unread before the fork."""

import multiprocessing
import threading

import acl
from jobview import THREAD_LEVEL, check, model_path, said


def failures_in_a_thread():
    """A thread of the worker: its own failure, its own message."""
    ret = acl.rt.set_device(96)
    return ret, said(acl.get_recent_err_msg()), acl.rt.get_last_error(THREAD_LEVEL)


def worker(connection):
    seen = [("left by the parent", said(acl.get_recent_err_msg()))]
    seen.append(("acl.init", acl.init()))  # the worker's own agent starts here
    ret = acl.rt.set_device(99)
    message = acl.get_recent_err_msg()
    seen.append(("set_device(99)", ret, said(message.splitlines()[0]), said(message)))
    seen.append(("read again", acl.get_recent_err_msg(), acl.rt.get_last_error(THREAD_LEVEL)))
    check(acl.rt.set_device(0), "acl.rt.set_device")
    _, ret = acl.mdl.load_from_file(model_path("no_such_model"))
    seen.append(("load_from_file", ret, acl.rt.peek_at_last_error(THREAD_LEVEL)))
    seen.append(("hooked again", acl.rt.create_context(55)[1]))
    seen.append(("newest", said(acl.get_recent_err_msg()), acl.get_recent_err_msg()))
    results = []
    thread = threading.Thread(target=lambda: results.append(failures_in_a_thread()))
    thread.start()
    thread.join()
    seen.append(("thread", *results[0]))
    seen.append(("main thread after", acl.get_recent_err_msg()))
    check(acl.rt.reset_device(0), "acl.rt.reset_device")
    check(acl.finalize(), "acl.finalize")
    connection.send(seen)
    connection.close()


if __name__ == "__main__":
    check(acl.init(), "acl.init")
    print("parent set_device(99):", acl.rt.set_device(99), flush=True)  # not read
    check(acl.finalize(), "acl.finalize")
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    process = context.Process(target=worker, args=(sending,))
    process.start()
    sending.close()
    for item in receiving.recv():
        print("worker", item, flush=True)
    process.join()
    print("worker exit code:", process.exitcode, flush=True)
