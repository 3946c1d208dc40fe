"""The simulated ``acl`` module: ``from aclmon.sim import acl``.

Top-level functions are attributes of this module; ``acl.rt``, ``acl.mdl``,
``acl.prof`` and ``acl.util`` are plain module objects whose attributes can be
replaced (the agent wraps calls that way). The implementations live in the
``api_*`` modules and never call these public attributes, so a wrapper sees
each user call exactly once.
"""

import types as _types

from aclmon.sim import api_mdl as _api_mdl
from aclmon.sim import api_media as _api_media
from aclmon.sim import api_op as _api_op
from aclmon.sim import api_prof as _api_prof
from aclmon.sim import api_rt as _api_rt
from aclmon.sim import api_top as _api_top
from aclmon.sim import api_util as _api_util
from aclmon.sim import api_video as _api_video

__aclmon_sim__ = True


def _public_functions(module: _types.ModuleType) -> dict:
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and isinstance(value, _types.FunctionType)
        and value.__module__ == module.__name__
    }


def _submodule(name: str, *implementations: _types.ModuleType) -> _types.ModuleType:
    module = _types.ModuleType(f"acl.{name}", implementations[0].__doc__)
    for implementation in implementations:
        module.__dict__.update(_public_functions(implementation))
    return module


globals().update(_public_functions(_api_top))
rt = _submodule("rt", _api_rt)
mdl = _submodule("mdl", _api_mdl)
prof = _submodule("prof", _api_prof)
util = _submodule("util", _api_util)
media = _submodule("media", _api_media, _api_video)
op = _submodule("op", _api_op)
