"""The dump protobuf's own enums (``OutputDataType``, ``OutputFormat``).

These are a *different* numbering from pyACL's ``aclDataType``/``aclFormat``
(``aclmon.acl_constants``): dump ``DT_FLOAT16 = 2`` but ``ACL_FLOAT16 = 1``.
Never mix the two tables. Nano dumps use the ge/acl numbering; its table is
here too (``NANO_DTYPE_TO_PROTO``) so the translation happens in one place.
Every enum value is a constant here, and the name tables are built from them
(:class:`aclmon.acl_constants.EnumNames`): each name is written once.
"""

from __future__ import annotations

from aclmon.acl_constants import EnumNames

# ---------------------------------------------------------------- OutputDataType
_dtypes = len(globals())
DT_UNDEFINED = 0
DT_FLOAT = 1
DT_FLOAT16 = 2
DT_INT8 = 3
DT_UINT8 = 4
DT_INT16 = 5
DT_UINT16 = 6
DT_INT32 = 7
DT_INT64 = 8
DT_UINT32 = 9
DT_UINT64 = 10
DT_BOOL = 11
DT_DOUBLE = 12
DT_STRING = 13
DT_DUAL_SUB_INT8 = 14
DT_DUAL_SUB_UINT8 = 15
DT_COMPLEX64 = 16
DT_COMPLEX128 = 17
DT_QINT8 = 18
DT_QINT16 = 19
DT_QINT32 = 20
DT_QUINT8 = 21
DT_QUINT16 = 22
DT_RESOURCE = 23
DT_STRING_REF = 24
DT_DUAL = 25
DT_VARIANT = 26
DT_BF16 = 27
DT_INT4 = 28
DT_UINT1 = 29
DT_INT2 = 30
DT_UINT2 = 31
DT_COMPLEX32 = 32
DT_HIFLOAT8 = 33
DT_FLOAT8_E5M2 = 34
DT_FLOAT8_E4M3FN = 35
DT_FLOAT8_E8M0 = 36
DT_FLOAT6_E3M2 = 37
DT_FLOAT6_E2M3 = 38
DT_FLOAT4_E2M1 = 39
DT_FLOAT4_E1M2 = 40
DT_HIFLOAT4 = 41
DT_HIFLOAT4_SCALE = 42

# ---------------------------------------------------------------- OutputFormat
_formats = len(globals())
FORMAT_NCHW = 0
FORMAT_NHWC = 1
FORMAT_ND = 2
FORMAT_NC1HWC0 = 3
FORMAT_FRACTAL_Z = 4
FORMAT_NC1C0HWPAD = 5
FORMAT_NHWC1C0 = 6
FORMAT_FSR_NCHW = 7
FORMAT_FRACTAL_DECONV = 8
FORMAT_C1HWNC0 = 9
FORMAT_FRACTAL_DECONV_TRANSPOSE = 10
FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS = 11
FORMAT_NC1HWC0_C04 = 12
FORMAT_FRACTAL_Z_C04 = 13
FORMAT_CHWN = 14
FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS = 15
FORMAT_HWCN = 16
FORMAT_NC1KHKWHWC0 = 17
FORMAT_BN_WEIGHT = 18
FORMAT_FILTER_HWCK = 19
FORMAT_HASHTABLE_LOOKUP_LOOKUPS = 20
FORMAT_HASHTABLE_LOOKUP_KEYS = 21
FORMAT_HASHTABLE_LOOKUP_VALUE = 22
FORMAT_HASHTABLE_LOOKUP_OUTPUT = 23
FORMAT_HASHTABLE_LOOKUP_HITS = 24
FORMAT_C1HWNCoC0 = 25
FORMAT_MD = 26
FORMAT_NDHWC = 27
FORMAT_FRACTAL_ZZ = 28
FORMAT_FRACTAL_NZ = 29
FORMAT_NCDHW = 30
FORMAT_DHWCN = 31
FORMAT_NDC1HWC0 = 32
FORMAT_FRACTAL_Z_3D = 33
FORMAT_CN = 34
FORMAT_NC = 35
FORMAT_DHWNC = 36
FORMAT_FRACTAL_Z_3D_TRANSPOSE = 37
FORMAT_FRACTAL_ZN_LSTM = 38
FORMAT_FRACTAL_Z_G = 39
FORMAT_RESERVED = 40
FORMAT_ALL = 41
FORMAT_NULL = 42
FORMAT_ND_RNN_BIAS = 43
FORMAT_FRACTAL_ZN_RNN = 44
FORMAT_YUV = 45
FORMAT_YUV_A = 46
FORMAT_NCL = 47
FORMAT_FRACTAL_Z_WINO = 48
FORMAT_C1HWC0 = 49
FORMAT_MAX = 255

#: OutputDataType (dump_data.proto; 41/42 only in dump_task.proto) -> its name.
DTYPE_NAMES = EnumNames(globals(), _dtypes, _formats, unknown="DT_UNKNOWN({})")
#: OutputFormat (dump_data.proto) -> its enum name.
FORMAT_NAMES = EnumNames(globals(), _formats, prefixes=("FORMAT_",), unknown="UNKNOWN({})")

# msaccucmp's short spellings where they differ from "strip FORMAT_".
_SHORT_OVERRIDES = {
    15: "DECONV_SP_STRIDE8_TRANS",
    20: "LOOKUP_LOOKUPS",
    21: "LOOKUP_KEYS",
    22: "LOOKUP_VALUE",
    23: "LOOKUP_OUTPUT",
    24: "LOOKUP_HITS",
}


def dtype_name(value: int) -> str:
    """``DT_FLOAT`` style name; unknown numbers are named, not guessed."""
    return DTYPE_NAMES.short(value)


def format_name(value: int) -> str:
    """Short display name as msaccucmp prints it (``NCHW``, ``FRACTAL_NZ``, ``C1HWNCoC0``)."""
    return _SHORT_OVERRIDES.get(value) or FORMAT_NAMES.short(value)


def format_value(short_name: str) -> int | None:
    """Inverse of :func:`format_name` (case-insensitive); ``None`` if unknown."""
    wanted = short_name.strip().upper()
    for value in FORMAT_NAMES:
        if format_name(value).upper() == wanted:
            return value
    return None


#: ge/acl data-type numbers used by nano dumps -> proto OutputDataType numbers.
NANO_DTYPE_TO_PROTO: dict[int, int] = {
    0: DT_FLOAT,
    1: DT_FLOAT16,
    2: DT_INT8,
    3: DT_INT32,
    4: DT_UINT8,
    6: DT_INT16,
    7: DT_UINT16,
    8: DT_UINT32,
    9: DT_INT64,
    10: DT_UINT64,
    11: DT_DOUBLE,
    12: DT_BOOL,
    16: DT_COMPLEX64,
    17: DT_COMPLEX128,
    27: DT_BF16,
    28: DT_UNDEFINED,
    23: DT_INT64,  # DT_RESOURCE handles are int64, as msaccucmp reads them
    29: DT_INT4,
    30: DT_UINT1,
    31: 30,  # DT_INT2
    32: 31,  # DT_UINT2
}

#: ge/acl names of the nano numbering, to label a type we do not map: for these
#: numbers the ge/acl numbering and the dump enum agree.
NANO_DTYPE_NAMES: dict[int, str] = {n: DTYPE_NAMES[n] for n in (*range(13, 23), 24, 25, 26)}
