"""What the job sees of its own process: arguments, main module, paths, the
logging and signal set-up it starts with, its output streams."""

import logging
import os
import signal
import sys
import threading
import warnings

import acl
from jobview import check, show

show("argv", [os.path.basename(sys.argv[0]), *map(os.path.basename, sys.argv[1:])])
show("main", (__name__, os.path.basename(__file__)))
show("path[0] is the script's directory", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
show("root logger", (logging.getLogger().handlers, logging.getLogger().level))
show("SIGINT", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
show("SIGUSR1", signal.getsignal(signal.SIGUSR1))
show("SIGCHLD", signal.getsignal(signal.SIGCHLD))
show(
    "excepthooks",
    (sys.excepthook is sys.__excepthook__, threading.excepthook is threading.__excepthook__),
)
show("warning filters", len(warnings.filters))
show("stdout", (sys.stdout.isatty(), sys.stdout.encoding, sys.stdout.line_buffering))
show("cwd unchanged", os.getcwd() == os.environ.get("PWD", os.getcwd()))
check(acl.init(), "acl.init")
show("soc", acl.get_soc_name())
show("version", acl.get_version())
show("devices", acl.rt.get_device_count())
show("run mode", acl.rt.get_run_mode())
show("no context yet", acl.rt.get_context())
check(acl.rt.set_device(1), "acl.rt.set_device")
show("device", acl.rt.get_device())
show("memory", acl.rt.get_mem_info(1))
show("a context now", acl.rt.get_context()[1])
check(acl.rt.reset_device(1), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
