"""Families of pyACL accessors built from one definition.

pyACL exposes many structures as one getter (and sometimes one setter) per
field: ``acl.media.dvpp_get_pic_desc_width(desc)``, ``acl.rt.get_task_id_from_
exception_info(info)``. The sim writes each family's body once and names every
member here, so each stays a plain function with its pyACL name, parameters and
docstring (what ``help()``, the agent's wrappers and the error texts see).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


def named(fn: F, name: str, doc: str, params: Sequence[str] = ()) -> F:
    """``fn`` as the pyACL function ``name``; ``params`` renames its parameters in order.

    The body is defined once per family, so its own parameter names are
    generic (``value``); ``params`` gives the ones pyACL documents.
    """
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    if params:
        signature = inspect.signature(fn)
        current = signature.parameters.values()
        renamed = [param.replace(name=new) for param, new in zip(current, params, strict=True)]
        fn.__signature__ = signature.replace(parameters=renamed)  # type: ignore[attr-defined]  # what inspect.signature reads
    return fn
