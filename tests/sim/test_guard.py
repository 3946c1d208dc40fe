"""One guard answers every session call made before acl.init, in the call's own shape."""

from __future__ import annotations

import inspect

from aclmon import acl_constants as C
from aclmon.sim import runtime as R


def _guarded(module):
    return {
        name: fn
        for name, fn in vars(module).items()
        if callable(fn) and getattr(fn, "__wrapped__", None) is not None
    }


def test_every_guarded_call_keeps_its_pyacl_signature(acl):
    guarded = {}
    for sub in (acl.rt, acl.mdl, acl.prof):
        guarded.update({f"{sub.__name__}.{n}": f for n, f in _guarded(sub).items()})
    assert len(guarded) >= 80
    for name, fn in guarded.items():
        params = list(inspect.signature(fn).parameters)
        assert "rt" not in params, name
        assert fn.__name__ == name.rsplit(".", 1)[1]


def test_before_init_each_call_fails_in_its_own_shape(acl):
    assert acl.rt.set_device(0) == C.ACL_ERROR_UNINITIALIZE
    assert acl.rt.get_device_count() == (0, C.ACL_ERROR_UNINITIALIZE)
    assert acl.rt.get_mem_info(C.ACL_HBM_MEM) == (0, 0, C.ACL_ERROR_UNINITIALIZE)
    assert acl.rt.stream_query(0) == (C.ACL_STREAM_STATUS_NOT_READY, C.ACL_ERROR_UNINITIALIZE)
    assert acl.mdl.create_and_get_op_desc(0, 0, 0, 256) == ("", 0, 0, 0, 0, 100001)
    assert acl.prof.create_config([0], 0xFF, 0, 2) == 0  # a NULL handle
    assert "ACL_ERROR_UNINITIALIZE" in acl.get_recent_err_msg()


def test_after_finalize_the_guard_answers_again(acl):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    assert acl.finalize() == 0
    assert R.runtime() is None
    assert acl.rt.create_stream() == (0, C.ACL_ERROR_UNINITIALIZE)


def test_every_public_function_carries_its_own_pyacl_name(acl):
    # Accessor families are built from a table and bound by position: a slip in
    # the order would give a function another one's name (and body).
    for sub in (acl, acl.rt, acl.mdl, acl.prof, acl.util, acl.media):
        for name, fn in vars(sub).items():
            if inspect.isfunction(fn) and not name.startswith("_"):
                assert fn.__name__ == name, f"{sub.__name__}.{name} is {fn.__name__}"


def test_accessor_families_keep_pyacl_parameters_and_behaviour(acl):
    desc = acl.media.dvpp_create_pic_desc()
    setter, getter = acl.media.dvpp_set_pic_desc_width_stride, acl.media.dvpp_get_pic_desc_ret_code
    assert list(inspect.signature(setter).parameters) == ["pic_desc", "width_stride"]
    assert list(inspect.signature(acl.media.dvpp_set_pic_desc_data).parameters) == [
        "pic_desc",
        "data_dev",
    ]
    assert setter(desc, 256) == 0 and acl.media.dvpp_get_pic_desc_width_stride(desc) == 256
    assert getter(desc) == 0 and acl.media.dvpp_get_pic_desc_width(desc) == 0
    assert acl.media.dvpp_set_pic_desc_height(desc, -1) == C.ACL_ERROR_INVALID_PARAM
    assert "acldvppSetPicDescHeight" in acl.get_recent_err_msg()
    assert acl.media.dvpp_get_pic_desc_height(12345) == 0
    info_getter = acl.rt.get_stream_id_from_exception_info
    assert list(inspect.signature(info_getter).parameters) == ["info"]
    assert info_getter(0) == C.EXCEPTION_INFO_INVALID
