"""A job that notices a failure and exits with its own status."""

import sys

import acl
from jobview import show

acl.init()
ret = acl.rt.set_device(99)
if ret != 0:
    show("failed", ret)
    acl.finalize()
    sys.exit(3)
