"""Logging through acl.app_log, as acllite does: every line goes to the plog too."""

import inspect
import os

import acl
import constants as const


def _log(level, message, *args):
    if args:
        message = message % args
    frame = inspect.stack()[2]
    line = f"[{os.path.basename(frame.filename)}:{frame.lineno}] {message}"
    acl.app_log(level, line)
    return line


def log_info(message, *args):
    _log(const.ACL_INFO, message, *args)


def log_warning(message, *args):
    _log(const.ACL_WARNING, message, *args)


def log_error(message, *args):
    print(_log(const.ACL_ERROR, message, *args))
