"""The one "acl.init was not called" guard of the session's ``acl.*`` functions."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from aclmon import acl_constants as C
from aclmon.sim import runtime as session
from aclmon.sim.errmsg import fail

T = TypeVar("T")


def needs_init(
    *failed: Any, handle: bool = False
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """The one "acl.init was not called" guard of the ``acl.*`` functions.

    The decorated implementation takes the running session as its first
    argument; the public function keeps the pyACL name and signature (without
    that argument). Before ``acl.init`` (or after ``acl.finalize``) it records
    ACL_ERROR_UNINITIALIZE for ``get_recent_err_msg`` and returns it in the
    call's own shape: ``ret`` alone, ``(*failed, ret)`` for calls with
    out-parameters, or a NULL handle (0) for ``create_*`` calls (``handle``).
    """

    def decorate(impl: Callable[..., T]) -> Callable[..., T]:
        where = (impl.__module__.rsplit(".", 1)[-1], impl.__name__)

        def uninitialized() -> Any:
            code = fail(C.ACL_ERROR_UNINITIALIZE, "acl.init was not called", call=where)
            if handle:
                return 0
            return (*failed, code) if failed else code

        signature = inspect.signature(impl)
        params = list(signature.parameters.values())[1:]
        call = _guarded_call(impl, params, uninitialized)
        functools.update_wrapper(call, impl)
        call.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]  # what inspect.signature reads
        return call

    return decorate


def _guarded_call(
    impl: Callable[..., Any], params: list[inspect.Parameter], uninitialized: Callable[[], Any]
) -> Callable[..., Any]:
    """A function with ``params`` that passes the session to ``impl``.

    Written out with the real parameter names (not ``*args, **kwargs``) so the
    guard costs one plain call: these are the runtime's hottest functions.
    """
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.POSITIONAL_ONLY)
    if not all(p.kind in plain for p in params):

        def call(*args: Any, **kwargs: Any) -> Any:
            rt = session._runtime
            if rt is None:
                return uninitialized()
            return impl(rt, *args, **kwargs)

        return call
    namespace: dict[str, Any] = {
        "_session": session,
        "_impl": impl,
        "_uninitialized": uninitialized,
    }
    declared = []
    for index, param in enumerate(params):
        if param.default is inspect.Parameter.empty:
            declared.append(param.name)
        else:
            namespace[f"_default{index}"] = param.default
            declared.append(f"{param.name}=_default{index}")
    names = ", ".join(p.name for p in params)
    source = (
        f"def {impl.__name__}({', '.join(declared)}):\n"
        "    rt = _session._runtime\n"
        "    if rt is None:\n"
        "        return _uninitialized()\n"
        f"    return _impl(rt{', ' if names else ''}{names})\n"
    )
    exec(compile(source, f"<acl guard {impl.__name__}>", "exec"), namespace)
    return namespace[impl.__name__]
