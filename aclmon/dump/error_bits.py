"""The AI Core error bits of a device error line, and the registers that go with them.

The runtime reports an AI Core / vector core fault as one to three error words
(``error code = …`` on the core line, ``errcode:(E0, E1, E2)`` on the extend
line) and sets one bit per fault cause. :func:`bits_of` combines the words the
way the runtime does (docs/reference/aicore_errors.md):

* bits 0–63 come from ``E0``, bits 64–127 from ``E1``;
* bits 128 and up from ``((E2 >> 32) << 17) | (E2 & 0x1FFFF)``.

The sentence the runtime prints for a bit was reworded between releases, so a
bit is known by its number; :data:`BITS` holds the runtime's enum name of each
(0–175, Ascend 910B/910C numbering) with our own short meaning and a
``category`` the triage verdict reasons with. Ascend 950 ("A5") numbers its
bits differently: its lines print the bit numbers themselves, and the table
here does not describe them.

:func:`decode_registers` explains the per-unit error registers of the core
line (``mte error info`` and friends) the way msaicerr does: the type and
address fields of each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: categories of a bit, from the most telling to the least (see :func:`primary_category`)
GM_ACCESS = "gm_access"  # global memory (HBM/DDR) address invalid or out of range
LOCAL_BOUNDS = "local_bounds"  # an on-chip buffer (UB, L0, L1) address out of bounds
INF_NAN = "inf_nan"  # an operand is Inf/NaN
ARITHMETIC = "arithmetic"  # division by zero, negative sqrt/ln
MISALIGNED = "misaligned"  # an address not aligned for the instruction
ILLEGAL = "illegal"  # an invalid instruction or parameter
CONFLICT = "conflict"  # a read/write conflict on one buffer address
HARDWARE = "hardware"  # ECC / parity: suspect the hardware, see RAS alarms
TIMEOUT = "timeout"
INSTRUCTION_FETCH = "instruction_fetch"  # the kernel's own code could not be fetched
OTHER = "other"

CATEGORY_ORDER = (
    HARDWARE,
    GM_ACCESS,
    INSTRUCTION_FETCH,
    LOCAL_BOUNDS,
    INF_NAN,
    ARITHMETIC,
    MISALIGNED,
    CONFLICT,
    ILLEGAL,
    TIMEOUT,
    OTHER,
)

#: the unit a name prefix stands for
UNITS = {
    "BIU": "bus interface",
    "CCU": "scalar unit",
    "CUBE": "cube unit",
    "IFU": "instruction fetch",
    "MTE": "memory transfer engine",
    "VEC": "vector unit",
    "FIXP": "fixpipe",
    "SC": "safety checker",
    "CNT": "context switch",
}

#: the runtime's bit enum, in order from bit 0 (Ascend 910B/910C numbering)
_NAMES = [
    "BIU_L2_READ_OOB",
    "BIU_L2_WRITE_OOB",
    "CCU_CALL_DEPTH_OVRFLW",
    "CCU_DIV0",
    "CCU_ILLEGAL_INSTR",
    "CCU_LOOP_CNT_ERR",
    "CCU_LOOP_ERR",
    "CCU_NEG_SQRT",
    "CCU_UB_ECC",
    "CUBE_INVLD_INPUT",
    "CUBE_L0A_ECC",
    "CUBE_L0A_RDWR_CFLT",
    "CUBE_L0A_WRAP_AROUND",
    "CUBE_L0B_ECC",
    "CUBE_L0B_RDWR_CFLT",
    "CUBE_L0B_WRAP_AROUND",
    "CUBE_L0C_ECC",
    "CUBE_L0C_RDWR_CFLT",
    "CUBE_L0C_SELF_RDWR_CFLT",
    "CUBE_L0C_WRAP_AROUND",
    "IFU_BUS_ERR",
    "MTE_AIPP_ILLEGAL_PARAM",
    "MTE_BAS_RADDR_OBOUND",
    "MTE_BIU_RDWR_RESP",
    "MTE_CIDX_OVERFLOW",
    "MTE_DECOMP",
    "MTE_F1WPOS_LARGER_FSIZE",
    "MTE_FMAP_LESS_KERNEL",
    "MTE_FMAPWH_LARGER_L1SIZE",
    "MTE_FPOS_LARGER_FSIZE",
    "MTE_GDMA_ILLEGAL_BURST_LEN",
    "MTE_GDMA_ILLEGAL_BURST_NUM",
    "MTE_GDMA_READ_OVERFLOW",
    "MTE_GDMA_WRITE_OVERFLOW",
    "MTE_COMP",
    "MTE_ILLEGAL_FM_SIZE",
    "MTE_ILLEGAL_L1_3D_SIZE",
    "MTE_ILLEGAL_STRIDE",
    "MTE_L0A_RDWR_CFLT",
    "MTE_L0B_RDWR_CFLT",
    "MTE_L1_ECC",
    "MTE_PADDING_CFG",
    "MTE_READ_OVERFLOW",
    "MTE_ROB_ECC",
    "MTE_TLU_ECC",
    "MTE_UB_ECC",
    "MTE_UNZIP",
    "MTE_WRITE_3D_OVERFLOW",
    "MTE_WRITE_OVERFLOW",
    "VEC_DATA_EXCP_CCU",
    "VEC_DATA_EXCP_MTE",
    "VEC_DATA_EXCP_VEC",
    "VEC_DIV0",
    "VEC_ILLEGAL_MASK",
    "VEC_INF_NAN",
    "VEC_L0C_ECC",
    "VEC_L0C_RDWR_CFLT",
    "VEC_NEG_LN",
    "VEC_NEG_SQRT",
    "VEC_SAME_BLK_ADDR",
    "VEC_UB_ECC",
    "VEC_UB_SELF_RDWR_CFLT",
    "VEC_UB_WRAP_AROUND",
    "BIU_DFX_ERR",
    "CCU_SBUF_ECC",
    "VEC_COL2IMG_RD_FM_ADDR_OVFLOW",
    "VEC_COL2IMG_RD_DFM_ADDR_OVFFLOW",
    "VEC_COL2IMG_ILLEGAL_FM_SIZE",
    "VEC_COL2IMG_ILLEGAL_STRIDE",
    "VEC_COL2IMG_ILLEGAL_1ST_WIN_POS",
    "VEC_COL2IMG_ILLEGAL_FETCH_POS",
    "VEC_COL2IMG_ILLEGAL_K_SIZE",
    "CCU_INF_NAN",
    "MTE_ILLEGAL_SCHN_CFG",
    "MTE_ATM_ADDR_MISALG",
    "VEC_INSTR_ADDR_MISALIGN",
    "VEC_INSTR_ILLEGAL_CFG",
    "VEC_INSTR_UNDEF",
    "CCU_ADDR_ERR",
    "CCU_BUS_ERR",
    "MTE_ERR_ADDR_MISALIGN",
    "MTE_ERR_DW_PAD_CONF_ERR",
    "MTE_ERR_DW_FMAP_H_ILLEGAL",
    "MTE_ERR_WINO_L0B_WRITE_OVERFLOW",
    "MTE_ERR_WINO_L0B_READ_OVERFLOW",
    "MTE_ERR_ILLEGAL_V_COV_PAD_CTL",
    "MTE_ERR_ILLEGAL_H_COV_PAD_CTL",
    "MTE_ERR_ILLEGAL_W_SIZE",
    "MTE_ERR_ILLEGAL_H_SIZE",
    "MTE_ERR_ILLEGAL_CHN_SIZE",
    "MTE_ERR_ILLEGAL_K_M_EXT_STEP",
    "MTE_ERR_ILLEGAL_K_M_START_POS",
    "MTE_ERR_ILLEGAL_SMALLK_CFG",
    "MTE_ERR_READ_3D_OVERFLOW",
    "CCU_VECIQ_ECC",
    "CCU_DC_DATA_ECC",
    "CCU_DC_TAG_ECC",
    "CCU_DIV0_FP",
    "CCU_NEG_SQRT_FP",
    "CNT_SW_BUS_ERR",
    "FIXP_ERR_INSTR_ADDR_MISAL",
    "FIXP_ERR_ILLEGAL_CFG",
    "FIXP_ERR_READ_L0C_OVFLW",
    "FIXP_ERR_READ_L1_OVFLW",
    "FIXP_ERR_READ_UB_OVFLW",
    "FIXP_ERR_WRITE_L1_OVFLW",
    "FIXP_ERR_WRITE_UB_OVFLW",
    "FIXP_ERR_FBUF_WRITE_OVFLW",
    "FIXP_ERR_FBUF_READ_OVFLW",
    "SC_REG_PARITY_ERR",
    "MTE_ERR_FIFO_PARITY",
    "MTE_ERR_WAITSET",
    "CCU_ERR_PARITY_ERR",
    "MTE_ERR_CACHE_ECC",
    "CUBE_ERR_HSET_CNT_UNF",
    "CUBE_ERR_HSET_CNT_OVF",
    "MTE_ERR_INSTR_ILLEGAL_CFG",
    "MTE_ERR_HEBCD",
    "MTE_ERR_HEBCE",
    "MTE_ERR_WAIPP",
    "CCU_SEQ_ERR",
    "CCU_MPU_ERR",
    "CCU_LSU_ERR",
    "CCU_PB_ECC_ERR",
    "MTE_UB_WR_OVFLW",
    "MTE_UB_RD_OVFLW",
    "CUBE_ILLEGAL_INSTR",
    "CCU_SAFETY_CRC_ERR",
    "MTE_TIMEOUT",
    "MTE_UB_RD_CFLT",
    "MTE_UB_WR_CFLT",
    "MTE_KTABLE_WR_ADDR_OVERFLOW",
    "MTE_KTABLE_RD_ADDR_OVERFLOW",
    "CCU_UB_RD_CFLT",
    "CCU_UB_WR_CFLT",
    "CCU_UB_OVERFLOW_ERR",
    "BIU_UNSPLIT_ERR",
    "MTE_STB_ECC_ERR",
    "MTE_AIPP_ECC_ERR",
    "CCU_LSU_ATOMIC_ERR",
    "CCU_CROSS_CORE_SET_OVFL_ERR",
    "FIXP_ERR_OUT_WRITE_OVERFLOW",
    "CUBE_ERR_PBUF_WRAP_AROUND",
    "FIXP_L0C_ECC",
    "MTE_ERR_L0C_RDWR_CFLT",
    "VEC_DATA_EXCPT_MTE",
    "VEC_DATA_EXCPT_SU",
    "VEC_DATA_EXCPT_VEC",
    "VEC_INSTR_TIMEOUT",
    "VEC_INSTRS_UNDEF",
    "VEC_INSTR_ILL_CFG",
    "VEC_INSTR_MISALIGN",
    "VEC_INSTR_ILL_MASK",
    "VEC_INSTR_ILL_SQZN",
    "VEC_UB_ADDR_WRAP_AROUND",
    "VEC_UB_ECC_MBERR",
    "VEC_IDATA_INF_NAN",
    "VEC_DIV_BY_ZERO",
    "VEC_VALU_NEG_LN",
    "VEC_VALU_NEG_SQRT",
    "VEC_VCI_IDATA_OUT_RANGE",
    "VEC_ILL_VLOOP_OP",
    "VEC_ILL_VLOOP_SREG",
    "VEC_LD_NUM_MISMATCH",
    "VEC_ST_NUM_MISMATCH",
    "VEC_EX_NUM_MISMATCH",
    "VEC_LD_NUM_EXCEED_LIMIT",
    "VEC_ST_NUM_EXCEED_LIMIT",
    "VEC_ILL_INSTR_PADDING",
    "VEC_ILL_VGA_VPD_ORDER",
    "VEC_IC_ECC_ERR",
    "VEC_BIU_RESP_ERR",
    "VEC_PB_ECC_MBERR",
    "VEC_PB_READ_NO_RESP",
    "VEC_VALU_ILL_ISSUE",
    "VEC_ERR_PARITY_ERR",
]

#: our own words for the bits users meet most (the rest are described from their name)
_MEANINGS: dict[str, tuple[str, str]] = {
    "BIU_L2_READ_OOB": (GM_ACCESS, "bus read access error"),
    "BIU_L2_WRITE_OOB": (GM_ACCESS, "bus write access error"),
    "CCU_DIV0": (ARITHMETIC, "scalar division by zero"),
    "CCU_ILLEGAL_INSTR": (ILLEGAL, "illegal scalar instruction, usually an unaligned UB address"),
    "CUBE_INVLD_INPUT": (INF_NAN, "the cube read Inf/NaN from L0A/L0B"),
    "CUBE_L0C_RDWR_CFLT": (CONFLICT, "L0C read/write conflict (vector read vs cube write)"),
    "IFU_BUS_ERR": (
        INSTRUCTION_FETCH,
        "instruction fetched from an invalid GM address (kernel binary unloaded early,"
        " or stack corruption)",
    ),
    "MTE_BIU_RDWR_RESP": (
        GM_ACCESS,
        "the MTE touched an invalid GM address, or a cross-device access timed out",
    ),
    "MTE_GDMA_READ_OVERFLOW": (LOCAL_BOUNDS, "MTE read address of an on-chip buffer out of bounds"),
    "MTE_GDMA_WRITE_OVERFLOW": (
        LOCAL_BOUNDS,
        "MTE write address of an on-chip buffer out of bounds",
    ),
    "VEC_DIV0": (ARITHMETIC, "vector reciprocal divides by zero"),
    "VEC_INF_NAN": (INF_NAN, "a vector operand is Inf or NaN"),
    "VEC_UB_WRAP_AROUND": (LOCAL_BOUNDS, "vector UB read/write address out of bounds"),
    "CCU_INF_NAN": (INF_NAN, "a scalar floating-point operand is Inf or NaN"),
    "VEC_INSTR_ADDR_MISALIGN": (MISALIGNED, "UB address of a vector instruction not aligned"),
    "VEC_INSTR_ILLEGAL_CFG": (ILLEGAL, "invalid vector instruction parameter"),
    "VEC_INSTR_UNDEF": (
        ILLEGAL,
        "invalid vector instruction (constraint violated, binary mismatch or overwritten code)",
    ),
    "CCU_ADDR_ERR": (GM_ACCESS, "scalar GM address wider than 48 bits"),
    "CCU_BUS_ERR": (
        GM_ACCESS,
        "scalar access to an invalid GM address, or a cross-device access timed out",
    ),
    "CCU_MPU_ERR": (LOCAL_BOUNDS, "scalar access outside the AI Core's internal buffers"),
    "MTE_UB_WR_OVFLW": (LOCAL_BOUNDS, "MTE write address of UB out of bounds"),
    "MTE_UB_RD_OVFLW": (LOCAL_BOUNDS, "MTE read address of UB out of bounds"),
    "MTE_TIMEOUT": (TIMEOUT, "MTE transfer timed out"),
    "VEC_INSTR_TIMEOUT": (TIMEOUT, "vector instruction timed out"),
    "CCU_LSU_ATOMIC_ERR": (
        ILLEGAL,
        "scalar atomic on GM the scalar changed but did not write back",
    ),
    "MTE_ERR_L0C_RDWR_CFLT": (CONFLICT, "fixpipe reads L0C while it is being written"),
    "VEC_IDATA_INF_NAN": (INF_NAN, "an input of a vector instruction is Inf or NaN"),
    "VEC_DIV_BY_ZERO": (ARITHMETIC, "vector division by zero"),
}

#: words of a name, most specific first: (suffix or infix, category, words)
_WORDS: tuple[tuple[str, str, str], ...] = (
    ("PARITY", HARDWARE, "parity error (suspect hardware; check RAS alarms)"),
    ("ECC", HARDWARE, "multi-bit ECC error (suspect hardware; check RAS alarms)"),
    ("CRC", HARDWARE, "CRC error (suspect hardware)"),
    ("INF_NAN", INF_NAN, "Inf/NaN operand"),
    ("DIV0", ARITHMETIC, "division by zero"),
    ("NEG_SQRT", ARITHMETIC, "square root of a negative number"),
    ("NEG_LN", ARITHMETIC, "logarithm of a negative number"),
    ("MISAL", MISALIGNED, "address not aligned"),
    ("CFLT", CONFLICT, "read/write conflict on one address"),
    ("WRAP_AROUND", LOCAL_BOUNDS, "address out of the buffer's range"),
    ("OVERFLOW", LOCAL_BOUNDS, "address out of bounds"),
    ("OVFLW", LOCAL_BOUNDS, "address out of bounds"),
    ("OVFFLOW", LOCAL_BOUNDS, "address out of bounds"),
    ("OBOUND", LOCAL_BOUNDS, "address out of bounds"),
    ("OUT_RANGE", LOCAL_BOUNDS, "value out of range"),
    ("TIMEOUT", TIMEOUT, "timed out"),
    ("BUS_ERR", GM_ACCESS, "bus error"),
    ("RESP", GM_ACCESS, "bus response error"),
    ("ILLEGAL", ILLEGAL, "invalid configuration"),
    ("ILL_", ILLEGAL, "invalid instruction or configuration"),
    ("UNDEF", ILLEGAL, "undefined instruction"),
    ("CFG", ILLEGAL, "invalid configuration"),
    ("MISMATCH", ILLEGAL, "count mismatch"),
    ("EXCEED", ILLEGAL, "count over its limit"),
    ("EXCP", INF_NAN, "abnormal data"),
)


@dataclass(frozen=True)
class Bit:
    """One error bit: its number, the runtime's enum name, the unit, our meaning."""

    number: int
    name: str
    unit: str
    category: str
    meaning: str


def _describe(number: int, name: str) -> Bit:
    unit = UNITS.get(name.split("_", 1)[0], "")
    known = _MEANINGS.get(name)
    if known is not None:
        return Bit(number, name, unit, known[0], known[1])
    for infix, category, words in _WORDS:
        if infix in name:
            return Bit(number, name, unit, category, f"{unit}: {words}" if unit else words)
    return Bit(number, name, unit, OTHER, f"{unit}: {name.lower()}" if unit else name.lower())


#: bit number -> :class:`Bit` (Ascend 910B/910C numbering)
BITS: dict[int, Bit] = {number: _describe(number, name) for number, name in enumerate(_NAMES)}


def bits_of(words: tuple[int, ...]) -> list[int]:
    """The set bit numbers of up to three error words, combined as the runtime does."""
    found: list[int] = []
    for index, word in enumerate(words[:3]):
        if word < 0:
            continue
        if index == 2:
            word = ((word >> 32) << 17) | (word & 0x1FFFF)
        else:
            word &= (1 << 64) - 1
        base = 64 * index
        bit = 0
        while word:
            if word & 1:
                found.append(base + bit)
            word >>= 1
            bit += 1
    return found


def describe_bit(number: int, *, a5: bool = False) -> Bit:
    """The :class:`Bit` of ``number``; on an Ascend 950 (``a5``) or a number past the
    table, a bit with no name (its meaning comes from the line's own errorStr)."""
    if not a5 and number in BITS:
        return BITS[number]
    table = "Ascend 950 table" if a5 else "unknown bit"
    return Bit(number, "", "", OTHER, f"bit {number} ({table})")


def primary_category(bits: list[Bit]) -> str:
    """The category that says most about the fault among ``bits`` (OTHER when none)."""
    present = {b.category for b in bits}
    for category in CATEGORY_ORDER:
        if category in present:
            return category
    return OTHER


# ---------------------------------------------------------------- registers
#: msaicerr's type codes of IFU_ERR_INFO and of MTE_ERR_INFO with bit 23 (SOC table)
SOC_TYPES = {
    0b000: "read poison (dirty data)",
    0b001: "read out of bounds of the L2 buffer window",
    0b010: "read bus error (secure/non-secure mismatch, no response, atomic fault)",
    0b011: "read decode error (address outside every module's space)",
    0b101: "write out of bounds",
    0b110: "write bus error",
    0b111: "write decode error",
}
#: which table MTE_ERR_INFO's type field is read with, by the error bit set
_MTE_TYPE_TABLES = {46: "unzip", 34: "FMC", 25: "FMD", 23: "SOC", 21: "AIPP"}


def _field(value: int, high: int, low: int) -> int:
    return (value >> low) & ((1 << (high - low + 1)) - 1)


def _unit_bits(bits: list[int], prefix: str) -> bool:
    return any(number in BITS and BITS[number].name.startswith(prefix) for number in bits)


def decode_registers(registers: dict[str, Any], bits: list[int]) -> list[str]:
    """The fields of the error registers of the units whose bits are set, in words
    (``mte_err_type=110: write bus error``); an address field that reads 0 is left out."""
    lines: list[str] = []
    mte = registers.get("mte_error_info")
    if isinstance(mte, int) and mte and _unit_bits(bits, "MTE"):
        kind = _field(mte, 26, 24)
        table = next((name for bit, name in _MTE_TYPE_TABLES.items() if bit in bits), "")
        text = f"mte_err_type={kind:03b}"
        if table == "SOC":
            text += f": {SOC_TYPES.get(kind, 'reserved')}"
        elif table:
            text += f" ({table} type table)"
        lines.append(text)
        if _field(mte, 22, 8):
            lines.append(f"mte_err_addr=0x{_field(mte, 22, 8) << 5:x} (on-chip)")
    ifu = registers.get("ifu_error_info")
    if isinstance(ifu, int) and ifu and _unit_bits(bits, "IFU"):
        kind = _field(ifu, 50, 48)
        lines.append(f"ifu_err_type={kind:03b}: {SOC_TYPES.get(kind, 'reserved')}")
        lines.append(f"ifu_err_addr=0x{_field(ifu, 47, 2) << 2:x}")
    for key, prefix, high, low, shift in (
        ("ccu_error_info", "CCU", 22, 8, 3),
        ("cube_error_info", "CUBE", 16, 8, 9),
        ("vec_error_info", "VEC", 28, 16, 5),
        ("biu_error_info", "BIU", 24, 0, 0),
    ):
        value = registers.get(key)
        if isinstance(value, int) and value and _unit_bits(bits, prefix):
            address = _field(value, high, low) << shift
            if address:
                lines.append(f"{prefix.lower()}_err_addr=0x{address:x} (on-chip)")
            if prefix == "VEC":
                lines.append(f"vec_err_rcnt={_field(value, 15, 8)} (the failing repeat)")
    return lines
