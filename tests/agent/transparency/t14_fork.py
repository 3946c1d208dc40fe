"""A failure, then fork: the child reads what the parent's thread left unread."""

import os

import acl
from jobview import THREAD_LEVEL, check, said, show

check(acl.init(), "acl.init")
show("set_device(99)", acl.rt.set_device(99))
reader, writer = os.pipe()
child = os.fork()
if child == 0:
    os.close(reader)
    text = said(acl.get_recent_err_msg()) + f" | code {acl.rt.get_last_error(THREAD_LEVEL)}"
    text += f" | set_device(98) {acl.rt.set_device(98)}: {said(acl.get_recent_err_msg())}"
    os.write(writer, text.encode())
    os._exit(7)
os.close(writer)
chunks = []
while True:
    data = os.read(reader, 65536)
    if not data:
        break
    chunks.append(data)
_, status = os.waitpid(child, 0)
show("child said", b"".join(chunks).decode())
show("child status", os.waitstatus_to_exitcode(status))
show("parent reads", said(acl.get_recent_err_msg()))
check(acl.finalize(), "acl.finalize")
