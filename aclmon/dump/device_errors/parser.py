"""The runtime's messages read field by field and grouped into one
:class:`~aclmon.dump.device_errors.records.DeviceError` per failed task."""

from __future__ import annotations

import re
from collections.abc import Iterable

from aclmon.dump.device_errors.messages import (
    CODE_BANNER,
    TRAILER,
    VALUE,
    Message,
    messages_of,
    one_line,
    read_value,
    squeeze,
)
from aclmon.dump.device_errors.records import CopyFault, CoreReport, DeviceError, ExtendInfo

#: messages kept per error, errors per parse, cores per error (hostile input)
MAX_MESSAGES = 64
MAX_ERRORS = 4096
MAX_CORES = 256

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
_ERROR_CODE = re.compile(r"error code\s*=\s*(" + VALUE + r"(?:\s*,\s*\d+(?=\s*,))*)")
_REGISTERS = re.compile(
    r"(pc start|current|(?:vec|mte|ifu|ccu|cube|biu|sc|su|l1) error info|aic error mask|para base"
    r"|aic cond|mte error)\s*:\s*(" + VALUE + r"(?:\s*,\s*0[xX][0-9a-fA-F]+)?)"
)
_INLINE_ERROR_STR = re.compile(r"errorStr\s*:\s*(.*?)\s*(?=\[\s*FUNC\s*:|$)", re.DOTALL)
_EXTEND_CODES = re.compile(r"errcode\s*:\s*\(([^)]*)\)")
_EXTEND_STR = re.compile(
    r"errorStr\s*:\s*(.*?)\s*(?=fixp_error0 info|subErrType|\[\s*FUNC\s*:|$)", re.DOTALL
)
_EXTEND_FIELDS = re.compile(
    r"(fixp_error0 info|fixp_error1 info|fsmId|tslot|thread|ctxid|blk|sublk|subErrType)"
    r"\s*:\s*" + VALUE
)
_EXTEND_REGISTERS = re.compile(r"([a-z][a-z0-9 _]*?)\s*:\s*" + VALUE)
_RET_CODE = re.compile(r"retCode\s*=\s*" + VALUE + r"(?:\s*,\s*\[([^\]]*)\])?")
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


# ---------------------------------------------------------------- messages -> errors
def _core(text: str) -> CoreReport | None:
    flat = one_line(TRAILER.sub("", text))
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
        parts = [read_value(v) for v in match.group(2).split(",")]
        registers.setdefault(key, parts[0] if len(parts) == 1 else tuple(parts))
    code_match = _ERROR_CODE.search(flat)
    code_text = code_match.group(1) if code_match else ""
    a5 = (
        "sc_error_info" in registers or "su_error_info" in registers or "l1_error_info" in registers
    )
    codes = tuple(read_value(v) for v in code_text.split(",") if v.strip()) if code_text else ()
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
        error_str=one_line(inline.group(1)) if inline else "",
        wording=wording,
    )


def _extend(text: str) -> ExtendInfo | dict[str, int] | None:
    """The extend line; the older register line ``The extend info from device(D), …``
    gives register values only (a dict)."""
    flat = one_line(TRAILER.sub("", text))
    codes = _EXTEND_CODES.search(flat)
    if codes is None:
        values = {
            match.group(1).strip().replace(" ", "_"): read_value(match.group(2))
            for match in _EXTEND_REGISTERS.finditer(flat.split(",", 1)[-1])
        }
        return values or None
    words: list[int] = []
    for item in codes.group(1).split(","):
        item = item.strip()
        if re.fullmatch(VALUE, item):
            words.append(read_value(item))
    error_str = _EXTEND_STR.search(flat)
    fields: dict[str, int] = {}
    for match in _EXTEND_FIELDS.finditer(flat):
        name = match.group(1).replace(" info", "").replace(" ", "_")
        fields.setdefault(name, read_value(match.group(2)))
    return ExtendInfo(tuple(words), one_line(error_str.group(1)) if error_str else "", fields)


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

    def add(self, message: Message) -> None:
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
        self._add_task_line(one_line(text), message)

    def _note(self, error: DeviceError, message: Message) -> None:
        if len(error.messages) < MAX_MESSAGES:
            error.messages.append(one_line(message.text))
        for code in message.codes:
            if code not in error.message_codes:
                error.message_codes.append(code)
        if message.logged_ns and (not error.logged_ns or message.logged_ns < error.logged_ns):
            error.logged_ns = message.logged_ns

    def _add_core(self, core: CoreReport, message: Message) -> None:
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

    def _add_extend(self, text: str, message: Message) -> None:
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

    def _add_task_line(self, flat: str, message: Message) -> None:
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
            or CODE_BANNER.search(flat[:12]) is not None
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
            error.node_name = squeeze(node.group(1))
            error.node_type = squeeze(node.group(2))
        if aicpu is not None:
            stream = int(aicpu.group(2))
            error.engine = error.engine or aicpu.group(1)
            if aicpu.group(4) is not None:
                error.aicpu_errcode = int(aicpu.group(4))
            if aicpu.group(5):
                error.aicpu_message = one_line(aicpu.group(5)).rstrip(".")
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
            error.kernel = squeeze(kernel.group(1)).rstrip(".,")
        ext = _KERNEL_EXT.search(flat)
        if ext is not None:
            error.kernel_info_ext = squeeze(ext.group(1)).rstrip(".,")
        run = _TASK_RUN.search(flat)
        if run is not None and run.group(1).lower() == "aicpu":
            error.engine = "AICPU"
        ret = _RET_CODE.search(flat)
        if ret is not None:
            error.ret_code = read_value(ret.group(1))
            if ret.group(2):
                error.ret_text = ret.group(2).strip()
            engine = _ENGINE_RET.search(flat)
            if engine is not None:
                error.engine = engine.group(1)
        aic = _AIC_VALUE.search(flat)
        if aic is not None:
            name, value = aic.group(1), TRAILER.sub("", aic.group(2)).strip()
            if name == "dev_func":
                kernel_symbol = squeeze(value)
                if not error.kernel:
                    error.kernel = kernel_symbol.split("__", 1)[0]
            elif name == "tiling_key":
                error.tiling_key = value
            elif name == "block_dim":
                error.block_dim = value
        args = _AIC_ARGS.search(flat)
        if args is not None:
            value = TRAILER.sub("", args.group(2)).strip()
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
            error.dump_file = TRAILER.sub("", dump.group(1)).rstrip(".,")
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
            error.copy.reason = TRAILER.sub("", sdma.group(1)).strip().rstrip(".")
        if copied is not None:
            kind = _COPY_KIND.search(flat)
            error.copy.length = int(copied.group(1))
            error.copy.source = read_value(copied.group(2))
            error.copy.destination = read_value(copied.group(3))
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
