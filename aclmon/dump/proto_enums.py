"""The dump protobuf's own enums (``OutputDataType``, ``OutputFormat``).

These are a *different* numbering from pyACL's ``aclDataType``/``aclFormat``
(``aclmon.acl_constants``): dump ``DT_FLOAT16 = 2`` but ``ACL_FLOAT16 = 1``.
Never mix the two tables. Nano dumps use the ge/acl numbering; its table is
here too (``NANO_DTYPE_TO_PROTO``) so the translation happens in one place.
"""

from __future__ import annotations

#: OutputDataType (dump_data.proto; 41/42 only in dump_task.proto).
DTYPE_NAMES: dict[int, str] = {
    0: "DT_UNDEFINED",
    1: "DT_FLOAT",
    2: "DT_FLOAT16",
    3: "DT_INT8",
    4: "DT_UINT8",
    5: "DT_INT16",
    6: "DT_UINT16",
    7: "DT_INT32",
    8: "DT_INT64",
    9: "DT_UINT32",
    10: "DT_UINT64",
    11: "DT_BOOL",
    12: "DT_DOUBLE",
    13: "DT_STRING",
    14: "DT_DUAL_SUB_INT8",
    15: "DT_DUAL_SUB_UINT8",
    16: "DT_COMPLEX64",
    17: "DT_COMPLEX128",
    18: "DT_QINT8",
    19: "DT_QINT16",
    20: "DT_QINT32",
    21: "DT_QUINT8",
    22: "DT_QUINT16",
    23: "DT_RESOURCE",
    24: "DT_STRING_REF",
    25: "DT_DUAL",
    26: "DT_VARIANT",
    27: "DT_BF16",
    28: "DT_INT4",
    29: "DT_UINT1",
    30: "DT_INT2",
    31: "DT_UINT2",
    32: "DT_COMPLEX32",
    33: "DT_HIFLOAT8",
    34: "DT_FLOAT8_E5M2",
    35: "DT_FLOAT8_E4M3FN",
    36: "DT_FLOAT8_E8M0",
    37: "DT_FLOAT6_E3M2",
    38: "DT_FLOAT6_E2M3",
    39: "DT_FLOAT4_E2M1",
    40: "DT_FLOAT4_E1M2",
    41: "DT_HIFLOAT4",
    42: "DT_HIFLOAT4_SCALE",
}
DTYPE_VALUES: dict[str, int] = {name: value for value, name in DTYPE_NAMES.items()}

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
DT_COMPLEX64 = 16
DT_COMPLEX128 = 17
DT_RESOURCE = 23
DT_BF16 = 27
DT_INT4 = 28
DT_UINT1 = 29
DT_HIFLOAT8 = 33
DT_FLOAT8_E5M2 = 34
DT_FLOAT8_E4M3FN = 35
DT_FLOAT8_E8M0 = 36

#: OutputFormat (dump_data.proto) with the enum names.
FORMAT_NAMES: dict[int, str] = {
    0: "FORMAT_NCHW",
    1: "FORMAT_NHWC",
    2: "FORMAT_ND",
    3: "FORMAT_NC1HWC0",
    4: "FORMAT_FRACTAL_Z",
    5: "FORMAT_NC1C0HWPAD",
    6: "FORMAT_NHWC1C0",
    7: "FORMAT_FSR_NCHW",
    8: "FORMAT_FRACTAL_DECONV",
    9: "FORMAT_C1HWNC0",
    10: "FORMAT_FRACTAL_DECONV_TRANSPOSE",
    11: "FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS",
    12: "FORMAT_NC1HWC0_C04",
    13: "FORMAT_FRACTAL_Z_C04",
    14: "FORMAT_CHWN",
    15: "FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS",
    16: "FORMAT_HWCN",
    17: "FORMAT_NC1KHKWHWC0",
    18: "FORMAT_BN_WEIGHT",
    19: "FORMAT_FILTER_HWCK",
    20: "FORMAT_HASHTABLE_LOOKUP_LOOKUPS",
    21: "FORMAT_HASHTABLE_LOOKUP_KEYS",
    22: "FORMAT_HASHTABLE_LOOKUP_VALUE",
    23: "FORMAT_HASHTABLE_LOOKUP_OUTPUT",
    24: "FORMAT_HASHTABLE_LOOKUP_HITS",
    25: "FORMAT_C1HWNCoC0",
    26: "FORMAT_MD",
    27: "FORMAT_NDHWC",
    28: "FORMAT_FRACTAL_ZZ",
    29: "FORMAT_FRACTAL_NZ",
    30: "FORMAT_NCDHW",
    31: "FORMAT_DHWCN",
    32: "FORMAT_NDC1HWC0",
    33: "FORMAT_FRACTAL_Z_3D",
    34: "FORMAT_CN",
    35: "FORMAT_NC",
    36: "FORMAT_DHWNC",
    37: "FORMAT_FRACTAL_Z_3D_TRANSPOSE",
    38: "FORMAT_FRACTAL_ZN_LSTM",
    39: "FORMAT_FRACTAL_Z_G",
    40: "FORMAT_RESERVED",
    41: "FORMAT_ALL",
    42: "FORMAT_NULL",
    43: "FORMAT_ND_RNN_BIAS",
    44: "FORMAT_FRACTAL_ZN_RNN",
    45: "FORMAT_YUV",
    46: "FORMAT_YUV_A",
    47: "FORMAT_NCL",
    48: "FORMAT_FRACTAL_Z_WINO",
    49: "FORMAT_C1HWC0",
    255: "FORMAT_MAX",
}

FORMAT_NCHW = 0
FORMAT_NHWC = 1
FORMAT_ND = 2
FORMAT_NC1HWC0 = 3
FORMAT_FRACTAL_Z = 4
FORMAT_NC1HWC0_C04 = 12
FORMAT_HWCN = 16
FORMAT_C1HWNCoC0 = 25
FORMAT_FRACTAL_NZ = 29
FORMAT_NCDHW = 30
FORMAT_NDC1HWC0 = 32

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
    return DTYPE_NAMES.get(value, f"DT_UNKNOWN({value})")


def format_name(value: int) -> str:
    """Short display name as msaccucmp prints it (``NCHW``, ``FRACTAL_NZ``, ``C1HWNCoC0``)."""
    if value in _SHORT_OVERRIDES:
        return _SHORT_OVERRIDES[value]
    name = FORMAT_NAMES.get(value)
    if name is None:
        return f"UNKNOWN({value})"
    return name.removeprefix("FORMAT_")


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
