"""The builder of the ordinary hook wrappers, and the helpers every observer uses.

A wrapper calls the original with exactly the arguments it got and hands back
exactly what it returned or raised; the observation happens around that call
and is fenced by ``try`` so that nothing the agent does can reach the job.
:func:`observed` makes the wrapper of an ordinary call: an optional
``before(args, kwargs)``, the call, then ``after(args, kwargs, result)``. The
calls a job makes in its inner loop have hand-written wrappers instead
(:mod:`aclmon.agent.hot`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aclmon.acl_constants import ACL_SUCCESS

Wrapper = Callable[..., Any]
#: (args, kwargs) -> None, run before the original call
Before = Callable[[tuple[Any, ...], dict[str, Any]], None]
#: (args, kwargs, result) -> None, run after it
After = Callable[[tuple[Any, ...], dict[str, Any], Any], None]
#: (name, args, kwargs, result) -> None: report a failed call
CallFailed = Callable[[str, tuple[Any, ...], dict[str, Any], Any], None]

#: hooked calls whose result is not an ACL code (a handle, 0 on failure; or None)
NO_ACL_CODE = frozenset({"prof.create_config", "prof.destroy_stamp"})


def arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    """Argument ``index`` of a call, positional or by keyword (None if absent)."""
    if len(args) > index:
        return args[index]
    return kwargs.get(name)


def ret_of(result: Any) -> int:
    """The ACL return code of a result: a bare int, or the last item of a tuple."""
    if type(result) is int:
        return result
    if type(result) is tuple and result and type(result[-1]) is int:
        return result[-1]
    return -1


def ok(result: Any) -> bool:
    """The call returned ACL_SUCCESS (an int alone, or as the last item of a tuple)."""
    return ret_of(result) == ACL_SUCCESS


def int_or(value: Any, default: int) -> int:
    return value if type(value) is int else default


def observed(
    name: str,
    original: Callable[..., Any],
    fail: Callable[[str, BaseException], None],
    call_failed: CallFailed | None,
    after: After | None = None,
    before: Before | None = None,
) -> Wrapper:
    """The wrapper of an ordinary call: ``before``, the call, ``after``; a failed
    call is first reported with the runtime's message (``call_failed``; None for a
    call that returns no ACL code). Each observer is fenced."""
    where = f"hook {name}"

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before is not None:
            try:
                before(args, kwargs)
            except Exception as exc:
                fail(where, exc)
        result = original(*args, **kwargs)
        try:
            # First, while the runtime's message is still about this call (``after``
            # may call acl itself).
            if call_failed is not None and ret_of(result) not in (ACL_SUCCESS, -1):
                call_failed(name, args, kwargs, result)
        except Exception as exc:
            fail(where, exc)
        try:
            if after is not None:
                after(args, kwargs, result)
        except Exception as exc:
            fail(where, exc)
        return result

    return wrapper
