"""What ``acl.get_recent_err_msg()`` says, and the plog ERROR line of a failed call.

The texts follow the layout the real runtime uses (docs/reference/logs.md):

* parameter errors: ``[PID: n] <time> Invalid_Argument(EE1001): The argument is
  invalid.Reason: <why>`` then a ``Solution:`` line and a ``TraceBack`` of inner
  messages, each ending ``[FUNC:f][FILE:file][LINE:n]``;
* device-side task errors (AI Core exceptions): ``EZ9999: Inner Error!`` then
  ``EZ9999[PID: n] <time> (EZ9999):  The error from device(...) ...`` and the
  kernel-task lines of the traceback;
* every other code: the inner-error layout with a generic text that names the
  code and its CANN name (the real wording of those is not public).

The C function name, source file and line in these texts are derived from the
pyACL call that failed (``acl.rt.set_device`` -> ``aclrtSetDevice`` in
``device.cpp``); the line numbers are stable but made up.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import zlib
from types import FrameType

from aclmon import acl_constants as C
from aclmon.sim import slog

#: codes the runtime reports as an invalid argument (EE1001).
PARAMETER_CODES = frozenset(
    {
        C.ACL_ERROR_INVALID_PARAM,
        C.ACL_ERROR_INVALID_MODEL_ID,
        C.ACL_ERROR_RT_PARAM_INVALID,
        C.ACL_ERROR_RT_INVALID_DEVICEID,
        C.ACL_ERROR_RT_INVALID_HANDLE,
        C.ACL_ERROR_RT_STREAM_CONTEXT,
        C.ACL_ERROR_GE_PARAM_INVALID,
        C.ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID,
        C.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID,
        C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID,
    }
)
#: device-side task failures: the text comes from the device (EZ9999).
DEVICE_CODES = frozenset(
    {
        C.ACL_ERROR_RT_AICORE_EXCEPTION,
        C.ACL_ERROR_RT_AICORE_TRAP_EXCEPTION,
        C.ACL_ERROR_RT_AICORE_TIMEOUT,
        C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION,
        C.ACL_ERROR_RT_VECTOR_CORE_TIMEOUT,
        C.ACL_ERROR_RT_AICPU_EXCEPTION,
        C.ACL_ERROR_RT_AICPU_TIMEOUT,
        C.ACL_ERROR_RT_SYS_DMA,
    }
)

_PREFIX = {
    "api_rt": "aclrt",
    "api_mdl": "aclmdl",
    "api_prof": "aclprof",
    "api_media": "acldvpp",
    "api_op": "aclop",
}
_FILES = (
    ("memcpy", "memory.cpp"),
    ("memset", "memory.cpp"),
    ("malloc", "memory.cpp"),
    ("free", "memory.cpp"),
    ("mem", "memory.cpp"),
    ("stream", "stream.cpp"),
    ("event", "event.cpp"),
    ("context", "context.cpp"),
    ("report", "callback.cpp"),
    ("callback", "callback.cpp"),
    ("device", "device.cpp"),
    ("dvpp", "dvpp.cpp"),
    ("jpeg", "dvpp.cpp"),
    ("vpc", "dvpp.cpp"),
    ("dynamic", "model.cpp"),
    ("dump", "dump.cpp"),
)


def module_of(code: int) -> str:
    """The plog module that reports ``code``: RUNTIME, GE or ASCENDCL."""
    if 107000 <= code < 108000 or 207000 <= code < 208000 or 507000 <= code < 508000:
        return "RUNTIME"
    if code % 100000 // 1000 == 45:
        return "GE"
    return "ASCENDCL"


def c_function(api_module: str, function: str) -> str:
    """``("api_rt", "set_device")`` -> ``"aclrtSetDevice"``."""
    if api_module == "api_media":
        function = function.removeprefix("dvpp_")
    camel = "".join(part[:1].upper() + part[1:] for part in function.split("_"))
    return _PREFIX.get(api_module, "acl") + camel


def source_of(api_module: str, function: str) -> tuple[str, int]:
    """A plausible ``(file, line)`` for the C implementation of ``function``."""
    if api_module == "api_mdl":
        name = "model.cpp"
    elif api_module == "api_prof":
        name = "acl_prof.cpp"
    else:
        name = next((f for key, f in _FILES if key in function), "acl.cpp")
    if api_module == "api_mdl" and "dump" in function:
        name = "dump.cpp"
    return name, 100 + zlib.crc32(function.encode()) % 1900


def failing_call() -> tuple[str, str]:
    """``(api module, function)`` of the outermost ``acl.*`` implementation on the stack."""
    found = ("api_top", "acl")
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        base = os.path.basename(filename)
        if base.startswith("api_") and os.path.basename(os.path.dirname(filename)) == "sim":
            name = frame.f_code.co_name
            if not name.startswith("_") and name != "<lambda>":
                found = (base[:-3], name)
        frame = frame.f_back
    return found


def _where(func: str, source: tuple[str, int]) -> str:
    return f"[FUNC:{func}][FILE:{source[0]}][LINE:{source[1]}]"


def compose(code: int, reason: str, api_module: str, function: str, detail: str = "") -> str:
    """The recent-error text for a failed call (``detail``: device text, if any)."""
    func = c_function(api_module, function)
    source = source_of(api_module, function)
    stamp = slog.format_time(time.time_ns())
    pid = os.getpid()
    result = f"{func} failed, result = {code} ({C.error_name(code)}).{_where(func, source)}"
    if code in PARAMETER_CODES:
        return (
            f"[PID: {pid}] {stamp} Invalid_Argument(EE1001): The argument is invalid."
            f"Reason: {reason}\n"
            "        Solution: 1.Check the input parameter range of the function. "
            "2.Check the function invocation relationship.\n"
            "        TraceBack (most recent call last):\n"
            f"        {result}"
        )
    if code in DEVICE_CODES and detail:
        return (
            "EZ9999: Inner Error!\n"
            f"EZ9999[PID: {pid}] {stamp} (EZ9999):  {detail}\n"
            "        TraceBack (most recent call last):\n"
            f"        {reason}\n"
            f"        {result}"
        )
    return (
        "EE9999: Inner Error!\n"
        f"EE9999[PID: {pid}] {stamp} (EE9999):  {reason}, error code = {code} "
        f"({C.error_name(code)}).{_where(func, source)}\n"
        "        TraceBack (most recent call last):\n"
        f"        {result}"
    )


def log_failure(code: int, reason: str, api_module: str, function: str) -> None:
    """The plog ERROR line of a failed call."""
    writer = slog.WRITER
    if not writer.enabled(slog.LEVEL_ERROR):
        return
    func = c_function(api_module, function)
    file, line = source_of(api_module, function)
    writer.write(
        slog.LEVEL_ERROR,
        module_of(code),
        f"{file}:{line}",
        func,
        f"{reason}, result = {code} ({C.error_name(code)})",
    )


# ---------------------------------------------------------------- the last failure
#: per thread, as in pyACL: the last failed call's code and its recent-error text.
_last_failure = threading.local()


def fail(code: int, message: str, detail: str = "", *, call: tuple[str, str] | None = None) -> int:
    """Remember why a call failed (acl.get_recent_err_msg), log it, return its code.

    ``detail`` is the device's own text for a failed task (AI Core exception);
    ``call`` is ``(api module, function)`` when the caller is not on the stack.
    """
    api_module, function = call or failing_call()
    _last_failure.last_error = compose(code, message, api_module, function, detail)
    _last_failure.last_code = code
    log_failure(code, message, api_module, function)
    return code


def last_error_code(*, clear: bool) -> int:
    code = getattr(_last_failure, "last_code", C.ACL_SUCCESS)
    if clear:
        _last_failure.last_code = C.ACL_SUCCESS
    return code


def recent_error() -> str:
    message = getattr(_last_failure, "last_error", "")
    _last_failure.last_error = ""
    return message
