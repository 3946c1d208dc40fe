"""The device error lines CANN writes when a kernel fails on the device, parsed by field.

What the runtime and GE print about one failed task (docs/reference/aicore_errors.md):

* one **core line** per failing core, ``… serial number is N, there is an
  aicore error exception, core id is C, error code = …, dump info: pc start: …,
  current: …, vec error info: …, …, para base: ….``, in five wordings across
  releases (``there is an aivec error``, ``there is an exception of fftsplus
  aivector error``, ``An error occurs on the device(…), the error is aivec
  error``, ``there is an error of …``, and the Ascend 950 layout with its own
  registers and a decimal bit list);
* an **extend line** ``The extend info: errcode:(E0, E1, E2) errorStr: … fixp_error0
  info: …, fsmId:…, tslot:…, …, blk:…, sublk:…, subErrType:….`` (older builds put
  ``errorStr`` at the end of the core line instead);
* the **task lines**: ``Kernel task happen error, retCode=0x26, [aicore
  exception].``, ``Aicore kernel execute failed, device_id=…, stream_id=…,
  task_id=…, flip_num=…, fault kernel_name=…, …``, GE's ``[AIC_INFO]
  node_name:…, node_type:…, stream_id:…, task_id:…`` and ``[AIC_INFO]
  dev_func:…``, the AI CPU form ``… an exception occurred during AICPU
  execution, stream_id:…, task_id:…, errcode:…, msg:….``, the exception dump
  (``dump exception to file, file: …``);
* the **copy lines** of a failed memory copy (the copy engine, SDMA):
  ``… serial number is N, there is a sdma error: <reason>.`` and ``Memory async
  copy failed, device_id=…, stream_id=…, task_id=…, …, length=…, src_addr=…,
  dst_addr=….``;
* the **host lines** of the synchronize that met it: ``rtDeviceSynchronizeWithTimeout
  execute failed, reason=[vector core exception]``, ``… failed, runtime result =
  507035.``, error-message codes (``EZ9999``, ``EH9999``, ``EZ2001``).

The same text reaches users as plog entries, as the error message repeated on
stderr (``EZ9999[PID: …] … (EZ9999):  …``), inside other programs' log prefixes
(vLLM's ``(Worker…) ERROR … [file.py:N]``) and wrapped by terminals or web
pages. So the parser strips the known prefixes, joins a message that runs over
several lines, reads each field by its name wherever it sits, and takes a run
of spaces inside an identifier for the wrap it is.

:func:`parse_device_errors` returns one :class:`DeviceError` per failed task
(core lines grouped by device and serial number, the task lines after them),
never raises, and bounds what it keeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aclmon.dump.error_bits import Bit, bits_of, decode_registers, describe_bit
from aclmon.dump.plog import logged_ns

#: messages kept per error, characters per message, errors per parse (hostile input)
MAX_MESSAGES = 64
MAX_MESSAGE_CHARS = 8192
MAX_ERRORS = 4096
MAX_CORES = 256

_VALUE = r"(0[xX][0-9a-fA-F]+|\d+)"
_TRAILER = re.compile(
    r"\[\s*FUNC\s*:[^\]\[]*\]\s*\[\s*FILE\s*:[^\]\[]*\](?:\s*\[\s*LINE\s*:[\s\d]*\])?"
)
#: prefixes in front of the runtime's text, removed one after the other
_PREFIXES = (
    # a plog header, with the thread id, function and stage tags after [file:line]
    re.compile(
        r"\[(?:ERROR|WARNING|INFO|DEBUG|EVENT)\] [A-Za-z0-9_.\-]+\(\d+,[^)]*\):"
        r"[\d\-:.]+ ?(?:\[[^\]]*\])?\s*(?:\d+\s+)?(?:[A-Za-z_][\w:~]*:\s*)?(?:\[[A-Za-z]+\])*\s*"
    ),
    # the entry text of a plog parser: "<tid> <Function>:" (the header already gone)
    re.compile(r"\d{1,10}\s+[A-Za-z_][\w:~]*:\s*(?:\[[A-Za-z]+\])*\s*(?=\S)"),
    # error-message banners: "EZ9999[PID: 1] <time> (EZ9999):", "EZ9999: [PID: 1] <time>",
    # "EZ9999: <time>"
    re.compile(r"E[A-Z]\d{4}\[PID:\s*\d+\]\s*[\d\-:.]+\s*\(E[A-Z]\d{4}\):\s*"),
    re.compile(r"E[A-Z]\d{4}:\s*\[PID:\s*\d+\]\s*[\d\-:.]+\s+"),
    re.compile(r"E[A-Z]\d{4}:\s*\d{4}-\d\d-\d\d-[\d:.]+\s+"),
    # other programs' log prefixes (vLLM workers, launchers)
    re.compile(r"\[RAW SERVER\]\s*"),
    re.compile(
        r"\((?:[^()]|\([^()]*\))*\)\s+(?:ERROR|WARNING|INFO|DEBUG)\s+[\d\-]+\s+[\d:]+\s+\[[^\]]*\]\s*"
    ),
    re.compile(r"\[rank\d+\]:"),
    re.compile(r"\[[WEI]\d*\s[^\]]*\]\s*(?:Warning:\s*)?"),
)
_CODE_BANNER = re.compile(r"\b(E[A-Z]\d{4})\b")
_TIME_IN_LINE = re.compile(r"(\d{4})-(\d\d)-(\d\d)-(\d\d):(\d\d):(\d\d)\.(\d{3})(?:\.(\d{3}))?")

# ---------------------------------------------------------------- message heads
_CORE_HEAD = re.compile(r"(?:The error from device|An error occurs on the device)\b")
_EXTEND_HEAD = re.compile(r"The extend info\b")
_HEADS = (
    _CORE_HEAD,
    _EXTEND_HEAD,
    re.compile(r"(?:Kernel task happen error|An error occurred in the kernel task)"),
    re.compile(r"(?:AICORE|AIV|AICPU|AIC|SDMA) Kernel (?:task )?happen error"),
    re.compile(
        r"(?:\[DFX_INFO\])?(?:Aicore kernel execute failed|AI Core kernel execution failed"
        r"|fftsplus task execute failed|model execute task failed)"
    ),
    re.compile(r"\[AIC_INFO\]"),
    re.compile(r"Task run failed\b"),
    re.compile(r"TraceBack \(most recent call last\)"),
    re.compile(r"\w+ execut(?:e|ion) failed, reason="),
    re.compile(r"[\w ]+ failed, runtime result = \d+"),
    re.compile(r"E[A-Z]\d{4}: Inner Error"),
    re.compile(r"\[Error\]:"),
)
#: kinds of message that a terminal or web page may have wrapped onto further lines
_WRAPPING = ("core", "extend", "fault")

# ---------------------------------------------------------------- fields
_DEVICE = re.compile(
    r"device\(\s*(?:chipId\s*:\s*(\d+)\s*,\s*dieId\s*:\s*(\d+)|(\d+))\s*\)", re.IGNORECASE
)
_SERIAL = re.compile(r"serial number is\s+(\d+)")
_CORE_TYPE = (
    re.compile(r"there is an exception of\s+(.+?)\s+error\s*,"),
    re.compile(r"the error is\s+(.+?)\s+error\s*,"),
    re.compile(r"there is an error of\s+(.+?)\s*,"),
    re.compile(r"there is an?\s+(.+?)\s+error(?:\s+exception)?\s*,"),
)
_CORE_ID = re.compile(r"core id is\s+(\d+)")
_ERROR_CODE = re.compile(r"error code\s*=\s*(" + _VALUE + r"(?:\s*,\s*\d+(?=\s*,))*)")
_REGISTERS = re.compile(
    r"(pc start|current|(?:vec|mte|ifu|ccu|cube|biu|sc|su|l1) error info|aic error mask|para base"
    r"|aic cond|mte error)\s*:\s*(" + _VALUE + r"(?:\s*,\s*0[xX][0-9a-fA-F]+)?)"
)
_INLINE_ERROR_STR = re.compile(r"errorStr\s*:\s*(.*?)\s*(?=\[\s*FUNC\s*:|$)", re.DOTALL)
_EXTEND_CODES = re.compile(r"errcode\s*:\s*\(([^)]*)\)")
_EXTEND_STR = re.compile(
    r"errorStr\s*:\s*(.*?)\s*(?=fixp_error0 info|subErrType|\[\s*FUNC\s*:|$)", re.DOTALL
)
_EXTEND_FIELDS = re.compile(
    r"(fixp_error0 info|fixp_error1 info|fsmId|tslot|thread|ctxid|blk|sublk|subErrType)"
    r"\s*:\s*" + _VALUE
)
_EXTEND_REGISTERS = re.compile(r"([a-z][a-z0-9 _]*?)\s*:\s*" + _VALUE)
_RET_CODE = re.compile(r"retCode\s*=\s*" + _VALUE + r"(?:\s*,\s*\[([^\]]*)\])?")
_ENGINE_RET = re.compile(r"(AICORE|AIV|AICPU|AIC|SDMA) Kernel")
_KV = re.compile(
    r"(device_id|stream_id|report_stream_id|task_id|flip_num|model_id|first_task_id"
    r"|model stream_id|model task_id|program id|hash)\s*=\s*(\d+)"
)
_KERNEL_NAME = re.compile(
    r"(?:fault kernel_name|func_name)\s*=\s*(.*?)\s*(?:,\s*(?=fault kernel info ext|program id"
    r"|func_name|hash)|\.\s*$|$)",
    re.DOTALL,
)
_KERNEL_EXT = re.compile(r"fault kernel info ext\s*=\s*(.*?)\s*(?:,\s*(?=program id|hash)|$)")
_AIC_NODE = re.compile(
    r"node_name\s*:\s*(.*?)\s*,\s*node_type\s*:\s*(.*?)\s*,\s*stream_id\s*:\s*(\d+)"
    r"\s*,\s*task_id\s*:\s*(\d+)"
)
_AIC_VALUE = re.compile(r"\[AIC_INFO\]\s*(dev_func|tiling_key|block_dim|tiling_data)\s*:\s*(.*)")
_AIC_ARGS = re.compile(r"\[AIC_INFO\]\s*args(?:\s*\([^)]*\))?\s*(before|after) execute\s*:\s*(.*)")
_AICPU = re.compile(
    r"an exception occurred during (AICPU|AICORE)(?: operator)? execution\s*,\s*stream_id\s*:\s*(\d+)"
    r"\s*,\s*task_id\s*:\s*(\d+)(?:\s*,\s*errcode\s*:\s*(\d+))?(?:\s*,\s*msg\s*:\s*(.*?)\.?\s*$)?",
    re.DOTALL,
)
_TASK_RUN = re.compile(r"sqe_type\s*=\s*\d+\((\w+)\)")
_SYNC_CALL = re.compile(r"(\w+) execut(?:e|ion) failed, reason=\[?([^\]\[]*?)\]?(?:\[|$)")
_RUNTIME_RESULT = re.compile(
    r"(?:runtime result\s*=|error code is|error code\s*:)\s*([1-5]\d{5})\b"
)
_DUMP_FILE = re.compile(r"dump exception to file,\s*file\s*:\s*(\S+)")
_COPY = re.compile(
    r"Memory (?:async )?copy failed\b.*?\blength\s*=\s*(\d+)\s*,\s*src_addr\s*=\s*"
    r"(0[xX][0-9a-fA-F]+|\d+)\s*,\s*dst_addr\s*=\s*(0[xX][0-9a-fA-F]+|\d+)"
)
_COPY_KIND = re.compile(r"memcpy_type\s*=\s*(\d+)")
_SDMA = re.compile(r"there is a sdma error\s*:?\s*(.*?)\.?\s*$")


@dataclass
class CopyFault:
    """A memory copy the copy engine (SDMA) could not do: its bytes, both ends, its
    kind (``memcpy_type``, -1 unknown) and what the device said of it."""

    length: int
    source: int
    destination: int
    kind: int = -1
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "length": self.length,
            "source": f"{self.source:#x}",
            "destination": f"{self.destination:#x}",
            "kind": self.kind,
            "reason": self.reason,
        }


@dataclass
class ExtendInfo:
    """The extend line: the error words, the runtime's sentence, the scheduler fields."""

    errcode: tuple[int, ...]
    error_str: str
    fields: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "errcode": [f"{v:#x}" for v in self.errcode],
            "error_str": self.error_str,
            "fields": dict(self.fields),
        }


@dataclass
class CoreReport:
    """One failing core's line (and the extend line that followed it)."""

    device_id: int | None
    die_id: int | None
    serial: int | None
    core_type: str  # "aicore", "aivec", "fftsplus aivector", "aicpu", ...
    core_id: int | None
    error_code: tuple[int, ...]  # the core line's code; on an Ascend 950, its bit numbers
    a5: bool  # Ascend 950 layout (decimal bit numbers, its own bit table)
    registers: dict[str, int | tuple[int, ...]]
    error_str: str = ""  # the inline errorStr of older builds
    extend: ExtendInfo | None = None
    wording: str = ""

    def words(self) -> tuple[int, ...]:
        """The error words the bits come from: the extend line's, else the core line's."""
        if self.extend is not None and self.extend.errcode and not self.a5:
            return self.extend.errcode
        return self.error_code

    def bit_numbers(self) -> list[int]:
        if self.a5:
            codes = self.extend.errcode if self.extend is not None else self.error_code
            return sorted(set(codes))
        return bits_of(self.words())

    def to_dict(self) -> dict[str, Any]:
        return {
            "device_id": self.device_id,
            "die_id": self.die_id,
            "serial": self.serial,
            "core_type": self.core_type,
            "core_id": self.core_id,
            "error_code": [f"{v:#x}" if not self.a5 else v for v in self.error_code],
            "a5": self.a5,
            "registers": {
                k: (f"{v:#x}" if isinstance(v, int) else [f"{x:#x}" for x in v])
                for k, v in self.registers.items()
            },
            "error_str": self.error_str,
            "extend": self.extend.to_dict() if self.extend is not None else None,
            "wording": self.wording,
        }


@dataclass
class DeviceError:
    """Everything the text says about one failed task."""

    cores: list[CoreReport] = field(default_factory=list)
    kernel: str = ""  # the failing kernel (fault kernel_name, else dev_func before "__")
    kernel_info_ext: str = ""
    node_name: str = ""  # GE's node (the operator) and its type
    node_type: str = ""
    device_id: int | None = None
    stream_id: int | None = None
    report_stream_id: int | None = None
    task_id: int | None = None
    flip_num: int | None = None
    model_id: int | None = None
    program_id: int | None = None
    ret_code: int | None = None  # the task scheduler's return code (0x26 aicore exception)
    ret_text: str = ""  # its words ("vector core exception")
    engine: str = ""  # "AICORE", "AIV", "AICPU", ...
    runtime_result: int | None = None  # the ACL code the host call returned (507035)
    message_codes: list[str] = field(default_factory=list)  # EZ9999, EH9999, EZ2001
    sync_call: str = ""  # the host call that met the error (not the launch site)
    sync_reason: str = ""
    dump_file: str = ""
    tiling_key: str = ""
    block_dim: str = ""
    args_before: str = ""
    args_after: str = ""
    aicpu_errcode: int | None = None
    aicpu_message: str = ""
    copy: CopyFault | None = None  # a failed memory copy (the copy engine's lines)
    logged_ns: int = 0  # the earliest time a line of it states (0: none)
    messages: list[str] = field(default_factory=list)

    # ------------------------------------------------------------ derived
    @property
    def serial(self) -> int | None:
        return self.cores[0].serial if self.cores else None

    @property
    def a5(self) -> bool:
        return any(core.a5 for core in self.cores)

    def bit_numbers(self) -> list[int]:
        """The error bits set on any failing core, in order."""
        found: set[int] = set()
        for core in self.cores:
            found.update(core.bit_numbers())
        return sorted(found)

    def bits(self) -> list[Bit]:
        a5 = self.a5
        return [describe_bit(number, a5=a5) for number in self.bit_numbers()]

    @property
    def error_str(self) -> str:
        """The runtime's sentence for the bits (the first core's)."""
        for core in self.cores:
            if core.extend is not None and core.extend.error_str:
                return core.extend.error_str
            if core.error_str:
                return core.error_str
        return self.aicpu_message

    @property
    def suspect_hardware(self) -> bool:
        """EZ2001: the runtime matched a RAS (hardware) fault event to this error."""
        return "EZ2001" in self.message_codes

    @property
    def is_aicpu(self) -> bool:
        return (
            self.engine == "AICPU"
            or self.aicpu_errcode is not None
            or any(c.core_type.endswith("aicpu") for c in self.cores)
            or self.runtime_result in (507017, 507018)
        )

    def register_fields(self) -> list[str]:
        """The first core's error registers in words."""
        if not self.cores or self.a5:
            return []
        core = self.cores[0]
        return decode_registers(core.registers, core.bit_numbers())

    def to_dict(self) -> dict[str, Any]:
        return {
            "serial": self.serial,
            "device_id": self.device_id,
            "stream_id": self.stream_id,
            "report_stream_id": self.report_stream_id,
            "task_id": self.task_id,
            "flip_num": self.flip_num,
            "model_id": self.model_id,
            "program_id": self.program_id,
            "kernel": self.kernel,
            "kernel_info_ext": self.kernel_info_ext,
            "node_name": self.node_name,
            "node_type": self.node_type,
            "engine": self.engine,
            "ret_code": f"{self.ret_code:#x}" if self.ret_code is not None else None,
            "ret_text": self.ret_text,
            "runtime_result": self.runtime_result,
            "message_codes": list(self.message_codes),
            "suspect_hardware": self.suspect_hardware,
            "sync_call": self.sync_call,
            "sync_reason": self.sync_reason,
            "dump_file": self.dump_file,
            "tiling_key": self.tiling_key,
            "block_dim": self.block_dim,
            "aicpu_errcode": self.aicpu_errcode,
            "aicpu_message": self.aicpu_message,
            "error_str": self.error_str,
            "bits": [b.number for b in self.bits()],
            "cores": [core.to_dict() for core in self.cores],
            "copy": self.copy.to_dict() if self.copy is not None else None,
            "logged_ns": self.logged_ns,
        }


# ---------------------------------------------------------------- reading values
def _int(text: str) -> int:
    text = text.strip()
    return int(text, 16) if text[:2].lower() == "0x" else int(text)


def _squeeze(text: str) -> str:
    """An identifier a wrap may have cut with a run of spaces, whole again."""
    return re.sub(r"\s+", "", text)


def _one_line(text: str) -> str:
    """A message that ran over several lines, on one line (a wrap is one space)."""
    return re.sub(r"\s*\n\s*", " ", text).strip()


# ---------------------------------------------------------------- lines -> messages
@dataclass
class _Message:
    kind: str
    text: str
    complete: bool
    codes: list[str]
    logged_ns: int


def _strip_prefixes(line: str) -> tuple[str, list[str], int]:
    """The runtime's text of a line, the error codes its prefixes named, and the time
    a prefix states (0: none)."""
    codes: list[str] = []
    logged = 0
    text = line.strip()
    changed = True
    while changed and text:
        changed = False
        for prefix in _PREFIXES:
            match = prefix.match(text)
            if match is None or not match.group(0):
                continue
            head = match.group(0)
            codes.extend(_CODE_BANNER.findall(head))
            if not logged:
                logged = _time_of(head)
            text = text[match.end() :].lstrip()
            changed = True
    return text, codes, logged


def _time_of(text: str) -> int:
    match = _TIME_IN_LINE.search(text)
    return logged_ns(match.groups()) if match is not None else 0


def _kind(text: str) -> str:
    if _CORE_HEAD.match(text):
        return "core"
    if _EXTEND_HEAD.match(text):
        return "extend"
    for index, head in enumerate(_HEADS[2:], start=2):
        if head.match(text):
            return "fault" if index == 4 else "other"
    return ""


def _complete(kind: str, text: str) -> bool:
    """Whether a message of a wrapping kind has all of itself (else the next line,
    if it starts no message of its own, continues it)."""
    if _TRAILER.search(text):
        return True
    flat = text.rstrip()
    if kind == "extend":
        return bool(re.search(r"subErrType\s*:\s*" + _VALUE + r"\.?$", flat))
    if kind in ("core", "fault"):
        return flat.endswith(".")
    return True


def messages_of(lines: Iterable[str]) -> list[_Message]:
    """Split text into the runtime's messages: prefixes gone, wrapped lines joined,
    a ``[FUNC:…][FILE:…][LINE:…]`` trailer ending a message."""
    out: list[_Message] = []
    open_message: _Message | None = None
    for raw in lines:
        text, codes, logged = _strip_prefixes(raw)
        if not text:
            if codes and open_message is not None:
                open_message.codes.extend(codes)
            continue
        pieces = _split_at_trailers(text)
        for index, piece in enumerate(pieces):
            kind = _kind(piece)
            continuing = (
                open_message is not None and not open_message.complete and not kind and (index == 0)
            )
            if continuing:
                assert open_message is not None
                if len(open_message.text) < MAX_MESSAGE_CHARS:
                    open_message.text += "\n" + piece
                open_message.complete = _complete(open_message.kind, open_message.text)
                open_message.codes.extend(codes)
                continue
            message = _Message(
                kind or "text",
                piece[:MAX_MESSAGE_CHARS],
                True,
                list(codes) + _CODE_BANNER.findall(piece[:200]) if index == 0 else [],
                logged,
            )
            message.complete = kind not in _WRAPPING or _complete(kind, piece)
            out.append(message)
            open_message = message
    return out


def _split_at_trailers(text: str) -> list[str]:
    """A line cut after each trailer (a message ends there; more text starts another)."""
    pieces: list[str] = []
    start = 0
    for match in _TRAILER.finditer(text):
        pieces.append(text[start : match.end()])
        start = match.end()
    rest = text[start:].strip()
    if rest or not pieces:
        pieces.append(text[start:] if not pieces else rest)
    return [p.strip() for p in pieces if p.strip()]


# ---------------------------------------------------------------- messages -> errors
def _core(text: str) -> CoreReport | None:
    flat = _one_line(_TRAILER.sub("", text))
    device = _DEVICE.search(flat)
    serial = _SERIAL.search(flat)
    core_id = _CORE_ID.search(flat)
    if _AICPU.search(flat):
        return None  # the AI CPU form is a task line, not a core's registers
    core_type = ""
    for pattern in _CORE_TYPE:
        found = pattern.search(flat)
        if found is not None:
            core_type = " ".join(found.group(1).split()).lower()
            break
    if not core_type and core_id is None:
        return None
    registers: dict[str, int | tuple[int, ...]] = {}
    for match in _REGISTERS.finditer(flat):
        key = match.group(1).replace(" ", "_")
        parts = [_int(v) for v in match.group(2).split(",")]
        registers.setdefault(key, parts[0] if len(parts) == 1 else tuple(parts))
    code_match = _ERROR_CODE.search(flat)
    code_text = code_match.group(1) if code_match else ""
    a5 = (
        "sc_error_info" in registers or "su_error_info" in registers or "l1_error_info" in registers
    )
    codes = tuple(_int(v) for v in code_text.split(",") if v.strip()) if code_text else ()
    if not a5 and codes and not code_text.strip().lower().startswith("0x") and codes != (0,):
        a5 = True  # a non-zero code printed in decimal is the Ascend 950's bit list
    inline = _INLINE_ERROR_STR.search(flat)
    if flat.startswith("An error occurs on the device"):
        wording = "An error occurs on the device"
    elif "there is an exception of" in flat:
        wording = "there is an exception of"
    elif "there is an error of" in flat:
        wording = "there is an error of"
    elif "error exception" in flat:
        wording = "there is an ... error exception"
    else:
        wording = "there is an ... error"
    return CoreReport(
        device_id=int(device.group(1) or device.group(3)) if device else None,
        die_id=int(device.group(2)) if device and device.group(2) else None,
        serial=int(serial.group(1)) if serial else None,
        core_type=core_type,
        core_id=int(core_id.group(1)) if core_id else None,
        error_code=codes,
        a5=a5,
        registers=registers,
        error_str=_one_line(inline.group(1)) if inline else "",
        wording=wording,
    )


def _extend(text: str) -> ExtendInfo | dict[str, int] | None:
    """The extend line; the older register line ``The extend info from device(D), …``
    gives register values only (a dict)."""
    flat = _one_line(_TRAILER.sub("", text))
    codes = _EXTEND_CODES.search(flat)
    if codes is None:
        values = {
            match.group(1).strip().replace(" ", "_"): _int(match.group(2))
            for match in _EXTEND_REGISTERS.finditer(flat.split(",", 1)[-1])
        }
        return values or None
    words: list[int] = []
    for item in codes.group(1).split(","):
        item = item.strip()
        if re.fullmatch(_VALUE, item):
            words.append(_int(item))
    error_str = _EXTEND_STR.search(flat)
    fields: dict[str, int] = {}
    for match in _EXTEND_FIELDS.finditer(flat):
        name = match.group(1).replace(" info", "").replace(" ", "_")
        fields.setdefault(name, _int(match.group(2)))
    return ExtendInfo(tuple(words), _one_line(error_str.group(1)) if error_str else "", fields)


class _Grouper:
    """Turns messages into errors: a new error starts at a core line of another
    (device, serial), or at a task line naming another task than the open error's."""

    def __init__(self) -> None:
        self.errors: list[DeviceError] = []
        self.current: DeviceError | None = None
        self.dropped = 0

    def _open(self) -> DeviceError:
        if self.current is None:
            self.current = DeviceError()
            if len(self.errors) < MAX_ERRORS:
                self.errors.append(self.current)
            else:
                self.dropped += 1
        return self.current

    def _new(self) -> DeviceError:
        self.current = None
        return self._open()

    def add(self, message: _Message) -> None:
        text = message.text
        kind = message.kind
        if kind == "core":
            core = _core(text)
            if core is not None:
                self._add_core(core, message)
                return
        if kind == "extend":
            self._add_extend(text, message)
            return
        self._add_task_line(_one_line(text), message)

    def _note(self, error: DeviceError, message: _Message) -> None:
        if len(error.messages) < MAX_MESSAGES:
            error.messages.append(_one_line(message.text))
        for code in message.codes:
            if code not in error.message_codes:
                error.message_codes.append(code)
        if message.logged_ns and (not error.logged_ns or message.logged_ns < error.logged_ns):
            error.logged_ns = message.logged_ns

    def _add_core(self, core: CoreReport, message: _Message) -> None:
        error = self.current
        if error is not None:
            known = [c for c in error.cores if c.serial is not None or c.device_id is not None]
            if known:
                if (known[0].device_id, known[0].serial) != (core.device_id, core.serial):
                    error = self._new()
            elif error.kernel:  # a kernel line ends an error: this core starts the next
                error = self._new()
        error = self._open()
        placeholder = next((c for c in error.cores if c.core_id is None and c.serial is None), None)
        duplicate = any(
            (c.core_id, c.registers) == (core.core_id, core.registers) for c in error.cores
        )
        truncated = core.core_id is None and not core.registers and bool(error.cores)
        if not duplicate and not truncated and len(error.cores) < MAX_CORES:
            error.cores.append(core)
        if placeholder is not None:  # an extend line seen before any core line: same error
            placeholder.device_id, placeholder.serial = core.device_id, core.serial
            placeholder.core_type = placeholder.core_type or core.core_type
        if error.device_id is None:
            error.device_id = core.device_id
        self._note(error, message)

    def _add_extend(self, text: str, message: _Message) -> None:
        extend = _extend(text)
        error = self._open()
        self._note(error, message)
        if extend is None:
            return
        target = error.cores[-1] if error.cores else None
        if target is None:
            target = CoreReport(None, None, None, "", None, (), False, {})
            error.cores.append(target)
        if isinstance(extend, dict):
            for key, value in extend.items():
                target.registers.setdefault(key, value)
        elif target.extend is None:
            target.extend = extend
            if target.extend.errcode and len(target.extend.errcode) == 1 and not target.error_code:
                target.a5 = True
        elif target.extend.errcode != extend.errcode or target.extend.fields != extend.fields:
            # an extend line without its core line (an excerpt that starts mid-error)
            orphan = CoreReport(
                None, None, target.serial, target.core_type, None, (), target.a5, {}
            )
            orphan.extend = extend
            if len(error.cores) < MAX_CORES:
                error.cores.append(orphan)

    def _add_task_line(self, flat: str, message: _Message) -> None:
        values = {match.group(1): int(match.group(2)) for match in _KV.finditer(flat)}
        node = _AIC_NODE.search(flat)
        aicpu = _AICPU.search(flat)
        sdma = _SDMA.search(flat)
        task = values.get("task_id", values.get("model task_id"))
        if node is not None:
            task = int(node.group(4))
        elif aicpu is not None:
            task = int(aicpu.group(3))
        error = self.current
        if error is not None and task is not None and error.task_id not in (None, task):
            error = self._new()
        relevant = (
            values
            or node is not None
            or aicpu is not None
            or sdma is not None
            or "retCode" in flat
            or "[AIC_INFO]" in flat
            or _SYNC_CALL.search(flat) is not None
            or _RUNTIME_RESULT.search(flat) is not None
            or "dump exception to file" in flat
            or _CODE_BANNER.search(flat[:12]) is not None
        )
        if not relevant:
            return
        error = self._open()
        self._note(error, message)
        if task is not None:
            error.task_id = task
        device = values.get("device_id")
        on_device = _DEVICE.search(flat)
        if device is None and on_device is not None:
            device = int(on_device.group(1) or on_device.group(3))
        if device is not None and error.device_id is None:
            error.device_id = device
        stream = values.get("stream_id", values.get("model stream_id"))
        if node is not None:
            stream = int(node.group(3))
            error.node_name = _squeeze(node.group(1))
            error.node_type = _squeeze(node.group(2))
        if aicpu is not None:
            stream = int(aicpu.group(2))
            error.engine = error.engine or aicpu.group(1)
            if aicpu.group(4) is not None:
                error.aicpu_errcode = int(aicpu.group(4))
            if aicpu.group(5):
                error.aicpu_message = _one_line(aicpu.group(5)).rstrip(".")
            if aicpu.group(1) == "AICPU" and not error.cores:
                error.ret_text = error.ret_text or "aicpu exception"
        if stream is not None:
            error.stream_id = stream
        for key, attribute in (
            ("report_stream_id", "report_stream_id"),
            ("flip_num", "flip_num"),
            ("model_id", "model_id"),
            ("program id", "program_id"),
        ):
            if key in values:
                setattr(error, attribute, values[key])
        kernel = _KERNEL_NAME.search(flat)
        if kernel is not None and kernel.group(1):
            error.kernel = _squeeze(kernel.group(1)).rstrip(".,")
        ext = _KERNEL_EXT.search(flat)
        if ext is not None:
            error.kernel_info_ext = _squeeze(ext.group(1)).rstrip(".,")
        run = _TASK_RUN.search(flat)
        if run is not None and run.group(1).lower() == "aicpu":
            error.engine = "AICPU"
        ret = _RET_CODE.search(flat)
        if ret is not None:
            error.ret_code = _int(ret.group(1))
            if ret.group(2):
                error.ret_text = ret.group(2).strip()
            engine = _ENGINE_RET.search(flat)
            if engine is not None:
                error.engine = engine.group(1)
        aic = _AIC_VALUE.search(flat)
        if aic is not None:
            name, value = aic.group(1), _TRAILER.sub("", aic.group(2)).strip()
            if name == "dev_func":
                kernel_symbol = _squeeze(value)
                if not error.kernel:
                    error.kernel = kernel_symbol.split("__", 1)[0]
            elif name == "tiling_key":
                error.tiling_key = value
            elif name == "block_dim":
                error.block_dim = value
        args = _AIC_ARGS.search(flat)
        if args is not None:
            value = _TRAILER.sub("", args.group(2)).strip()
            if args.group(1) == "before":
                error.args_before = value
            else:
                error.args_after = value
        sync = _SYNC_CALL.search(flat)
        if sync is not None and not error.sync_call:
            error.sync_call = sync.group(1)
            error.sync_reason = sync.group(2).strip()
        result = _RUNTIME_RESULT.search(flat)
        if result is not None:
            error.runtime_result = int(result.group(1))
        dump = _DUMP_FILE.search(flat)
        if dump is not None:
            error.dump_file = _TRAILER.sub("", dump.group(1)).rstrip(".,")
        self._add_copy(error, flat, sdma)

    @staticmethod
    def _add_copy(error: DeviceError, flat: str, sdma: re.Match[str] | None) -> None:
        """The copy engine's lines: the reason (its core line), the copy (its task line)."""
        copied = _COPY.search(flat)
        if sdma is None and copied is None:
            return
        error.engine = error.engine or "SDMA"
        if error.copy is None:
            error.copy = CopyFault(0, 0, 0)
        if sdma is not None and not error.copy.reason:
            error.copy.reason = _TRAILER.sub("", sdma.group(1)).strip().rstrip(".")
        if copied is not None:
            kind = _COPY_KIND.search(flat)
            error.copy.length = int(copied.group(1))
            error.copy.source = _int(copied.group(2))
            error.copy.destination = _int(copied.group(3))
            error.copy.kind = int(kind.group(1)) if kind is not None else -1


def parse_device_errors(text_or_lines: str | Iterable[str]) -> list[DeviceError]:
    """Every failed task the text tells of, in order (see the module docstring).
    Plog entries, pasted stderr and wrapped web copies alike; never raises."""
    lines = text_or_lines.splitlines() if isinstance(text_or_lines, str) else list(text_or_lines)
    grouper = _Grouper()
    for message in messages_of(lines):
        try:
            grouper.add(message)
        except (ValueError, IndexError, OverflowError):
            continue  # a field that does not read as a number: the rest still counts
    return [e for e in grouper.errors if e.cores or e.kernel or e.task_id is not None
            or e.runtime_result is not None or e.aicpu_errcode is not None
            or e.copy is not None]  # fmt: skip


class DeviceErrorReader:
    """:func:`parse_device_errors` for a stream of log entries (the agent's plog
    tail): :meth:`feed` takes each entry's text as it comes and keeps the newest
    errors, at most ``limit``."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self.errors: list[DeviceError] = []
        self._grouper = _Grouper()

    def feed(self, text: str, logged_ns: int = 0) -> None:
        for message in messages_of(text.splitlines()):
            if logged_ns and not message.logged_ns:
                message.logged_ns = logged_ns
            try:
                self._grouper.add(message)
            except (ValueError, IndexError, OverflowError):
                continue
        grouped = self._grouper.errors
        if len(grouped) > self.limit:
            del grouped[: len(grouped) - self.limit]
        self.errors = grouped

    def find(
        self, device_id: int, stream_id: int, task_id: int, kernel: str = ""
    ) -> DeviceError | None:
        """The newest error about this task (or, when the lines name no task, this
        kernel on this device)."""
        for error in reversed(self.errors):
            if (
                error.task_id == task_id
                and error.stream_id in (stream_id, None)
                and error.device_id in (device_id, None)
            ):
                return error
            if error.report_stream_id == stream_id and error.task_id == task_id:
                return error
        if kernel:
            for error in reversed(self.errors):
                if error.task_id is None and kernel in (error.kernel, error.node_name):
                    return error
        return None
