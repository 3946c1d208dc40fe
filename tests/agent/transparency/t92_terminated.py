"""A job terminated by SIGTERM in the middle of its work (the batch's last script):
the process ends by that signal."""

import os
import signal

import acl
from jobview import check, show

check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
show("about to be terminated", acl.rt.get_device())
os.kill(os.getpid(), signal.SIGTERM)
signal.pause()
show("never printed", True)
