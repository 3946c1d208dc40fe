"""The enum name tables: built from the constants declared between two marks."""

from __future__ import annotations

from aclmon import acl_constants as C
from aclmon.acl_constants import EnumNames
from aclmon.dump import proto_enums as pe


def test_enum_names_take_the_constants_between_the_marks_only():
    namespace: dict[str, object] = {"BEFORE": 1}
    first = len(namespace)
    namespace.update({"X_ONE": 1, "_private": 2, "X_TWO": 2, "text": "no"})
    second = len(namespace)
    namespace.update({"Y_ONE": 1})
    names = EnumNames(namespace, first, second, prefixes=("X_",), unknown="x({})")
    assert names == {1: "X_ONE", 2: "X_TWO"}
    assert (names.short(2), names.short(7)) == ("TWO", "x(7)")
    assert EnumNames(namespace, second, unknown="{}") == {1: "Y_ONE"}


def test_the_tables_hold_their_own_enum_and_name_as_before():
    assert C.DATA_TYPE_NAMES[C.ACL_FLOAT16] == "ACL_FLOAT16"
    assert set(C.FORMAT_NAMES.values()) >= {"ACL_FORMAT_FRACTAL_NZ", "ACL_FRACTAL_Z_3D"}
    assert all(not name.startswith("ACL_FORMAT") for name in C.DATA_TYPE_NAMES.values())
    assert (C.data_type_name(C.ACL_BF16), C.data_type_name(99)) == ("BF16", "dtype(99)")
    assert (C.format_name(C.ACL_FRACTAL_Z_3D), C.format_name(7)) == ("FRACTAL_Z_3D", "format(7)")
    assert all(name.startswith("DT_") for name in pe.DTYPE_NAMES.values())
    assert all(name.startswith("FORMAT_") for name in pe.FORMAT_NAMES.values())
    assert (pe.dtype_name(pe.DT_BF16), pe.dtype_name(99)) == ("DT_BF16", "DT_UNKNOWN(99)")
    assert (pe.format_name(15), pe.format_name(300)) == ("DECONV_SP_STRIDE8_TRANS", "UNKNOWN(300)")
