"""The job of issue 22: it reads the first line of the runtime's message and would
crash if the message were empty; it crashes anyway, releasing acl on the way out."""

import acl
from jobview import show

acl.init()
try:
    ret = acl.rt.create_context(99)[1]
    show("create_context(99)", ret)
    first = acl.get_recent_err_msg().splitlines()[0]
    show("first word", first.split()[0])
    raise RuntimeError(f"giving up after {ret}")
finally:
    acl.finalize()
