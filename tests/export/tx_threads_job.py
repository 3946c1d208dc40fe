"""A pyACL job whose msproftx ranges cross threads: a request opened with
range_start on the main thread and closed with range_stop by a worker, push/pop
ranges nested on each thread, marks on both. Written against pyACL only.

usage: tx_threads_job.py PROF_DIR
"""

import sys
import threading
import time

import acl

ACL_PROF_MSPROFTX = 0x0080
ACL_AICORE_PIPE_UTILIZATION = 1


def check(ret, what):
    if ret != 0:
        raise SystemExit(f"{what} failed: {ret}")


def stamp(message):
    handle = acl.prof.create_stamp()
    check(acl.prof.set_stamp_trace_message(handle, message, len(message)), "set message")
    return handle


def main():
    check(acl.init(), "acl.init")
    check(acl.rt.set_device(0), "set_device")
    check(acl.prof.init(sys.argv[1]), "prof.init")
    config = acl.prof.create_config([0], ACL_AICORE_PIPE_UTILIZATION, 0, ACL_PROF_MSPROFTX)
    check(acl.prof.start(config), "prof.start")
    handed = []
    lock = threading.Lock()

    def worker(name):
        for step in range(3):
            outer = stamp(f"{name} step {step}")
            check(acl.prof.push(outer), "push")
            inner = stamp(f"{name} forward {step}")
            check(acl.prof.push(inner), "push")
            time.sleep(0.002)
            check(acl.prof.pop(), "pop")
            check(acl.prof.mark(stamp(f"{name} mark {step}")), "mark")
            check(acl.prof.pop(), "pop")
            with lock:  # finish a request the main thread opened
                if handed:
                    check(acl.prof.range_stop(handed.pop()), "range_stop")

    for request in range(4):
        range_id, ret = acl.prof.range_start(stamp(f"request {request}"))
        check(ret, "range_start")
        handed.append(range_id)
    threads = [threading.Thread(target=worker, args=(f"worker{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    while handed:
        check(acl.prof.range_stop(handed.pop()), "range_stop")
    check(acl.prof.stop(config), "prof.stop")
    check(acl.prof.destroy_config(config), "destroy_config")
    check(acl.prof.finalize(), "prof.finalize")
    check(acl.rt.reset_device(0), "reset_device")
    check(acl.finalize(), "acl.finalize")


if __name__ == "__main__":
    main()
