"""What the device error lines say about one failed task, as records: the failing
cores (:class:`CoreReport`, with the extend line's :class:`ExtendInfo`), the failed
copy (:class:`CopyFault`), and the task itself (:class:`DeviceError`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aclmon.dump.error_bits import Bit, bits_of, decode_registers, describe_bit


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
