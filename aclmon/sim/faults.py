"""Fault injection rules: which operator fails, how, and when.

A rule is a JSON object (see docs/sim.md):

``{"kind": "aicore_exception", "op": "conv1", "model": "resnet_tiny", "every_s": 15}``

* ``kind``: ``aicore_exception`` (the operator raises an AI Core exception,
  507015 by default, see ``error_code``), ``overflow`` (the operator's inputs
  are scaled so that its float16 result really overflows to inf), or one of the
  device faults of :mod:`aclmon.sim.device_faults`: ``aicore_oob``,
  ``use_after_free``, ``nan_input``, ``vector_error``, ``aicpu_error``.
* what: ``op`` (operator name) and/or ``op_type``; optional ``model`` (model
  name) and ``device``.
* when: ``nth`` (the n-th matching execution, 1-based), ``every`` (every n-th),
  ``every_s`` (at most once per that many seconds, ``jitter_s`` random extra),
  or none of them (every matching execution). ``times`` caps the number of fires.
* overflow options: ``scale`` (input multiplier; default 65504) and ``record``
  (``old`` = 2048-byte Opdebug layout, the default; ``new`` = magic layout).
* ``perturb``: the operator's float outputs are multiplied by ``1 + error * noise``
  (``noise`` standard normal, fixed by the seed and the operator's name) before the
  operators after it read them, so the error propagates downstream as a precision
  problem does; ``error`` defaults to 0.05. A run with the rule and one without
  make a golden pair for ``aclmon compare``.
* device fault options: ``input`` (which input a bad address or NaN is in;
  default the first the job handed the model), ``overrun`` (``aicore_oob``: bytes
  read past the allocation, default 256), ``errcode`` (``vector_error``: the
  extend line's error words, a list; ``aicpu_error``: the AI CPU's code) and
  ``message`` (the error sentence).
"""

from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

KIND_AICORE_EXCEPTION = "aicore_exception"
KIND_OVERFLOW = "overflow"
KIND_PERTURB = "perturb"
KIND_AICORE_OOB = "aicore_oob"
KIND_USE_AFTER_FREE = "use_after_free"
KIND_NAN_INPUT = "nan_input"
KIND_VECTOR_ERROR = "vector_error"
KIND_AICPU_ERROR = "aicpu_error"
#: kinds that fail the operator's task with a device fault of their own
DEVICE_FAULT_KINDS = (
    KIND_AICORE_OOB,
    KIND_USE_AFTER_FREE,
    KIND_NAN_INPUT,
    KIND_VECTOR_ERROR,
    KIND_AICPU_ERROR,
)
KINDS = (KIND_AICORE_EXCEPTION, KIND_OVERFLOW, KIND_PERTURB, *DEVICE_FAULT_KINDS)
#: a device fault rule's default ``overrun`` (bytes read past the allocation)
DEFAULT_OVERRUN = 256

_FIELDS = {
    "kind",
    "op",
    "op_type",
    "model",
    "device",
    "nth",
    "every",
    "every_s",
    "jitter_s",
    "times",
    "scale",
    "record",
    "error_code",
    "error",
    "input",
    "overrun",
    "errcode",
    "message",
}


class FaultRuleError(ValueError):
    """An invalid fault rule (the message names where it came from)."""


@dataclass(frozen=True)
class FaultRule:
    kind: str
    op: str | None = None
    op_type: str | None = None
    model: str | None = None
    device: int | None = None
    nth: int | None = None
    every: int | None = None
    every_s: float | None = None
    jitter_s: float = 0.0
    times: int | None = None
    scale: float = 65504.0
    record: str = "old"
    #: 0: the kind's own (aicore_exception: 507015)
    error_code: int = 0
    error: float = 0.05
    input: int | None = None
    overrun: int = DEFAULT_OVERRUN
    errcode: tuple[int, ...] = ()
    message: str = ""

    def matches(self, model_name: str, op_name: str, op_type: str) -> bool:
        if self.model is not None and self.model != model_name:
            return False
        if self.op is not None and self.op != op_name:
            return False
        return self.op_type is None or self.op_type == op_type


def _number(rule: dict[str, Any], key: str, source: str, *, integer: bool) -> Any:
    value = rule.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FaultRuleError(f"{source}: {key} must be a finite number")
    if integer and int(value) != value:
        raise FaultRuleError(f"{source}: {key} must be an integer")
    if value < 0 or (integer and key in ("nth", "every") and value < 1):
        raise FaultRuleError(f"{source}: {key} is out of range")
    return int(value) if integer else float(value)


def parse_fault_rule(rule: Any, source: str) -> FaultRule:
    if not isinstance(rule, dict):
        raise FaultRuleError(f"{source}: a fault rule must be a JSON object")
    unknown = set(rule) - _FIELDS
    if unknown:
        raise FaultRuleError(f"{source}: unknown fault rule keys {sorted(unknown)}")
    kind = rule.get("kind")
    if kind not in KINDS:
        raise FaultRuleError(f"{source}: kind must be one of {', '.join(KINDS)}")
    for key in ("op", "op_type", "model"):
        if key in rule and not isinstance(rule[key], str):
            raise FaultRuleError(f"{source}: {key} must be a string")
    if rule.get("op") is None and rule.get("op_type") is None:
        raise FaultRuleError(f"{source}: a fault rule needs op or op_type")
    triggers = [k for k in ("nth", "every", "every_s") if rule.get(k) is not None]
    if len(triggers) > 1:
        raise FaultRuleError(f"{source}: use only one of nth, every, every_s")
    record = rule.get("record", "old")
    if record not in ("old", "new"):
        raise FaultRuleError(f"{source}: record must be 'old' or 'new'")
    scale = _number(rule, "scale", source, integer=False)
    if scale is not None and scale <= 0:
        raise FaultRuleError(f"{source}: scale must be positive")
    error = _number(rule, "error", source, integer=False)
    errcode = rule.get("errcode", [])
    if isinstance(errcode, int) and not isinstance(errcode, bool):
        errcode = [errcode]
    if (
        not isinstance(errcode, list)
        or len(errcode) > 3
        or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64
                   for v in errcode)
    ):  # fmt: skip
        raise FaultRuleError(f"{source}: errcode must be up to 3 integers (error words)")
    if not isinstance(rule.get("message", ""), str):
        raise FaultRuleError(f"{source}: message must be a string")
    return FaultRule(
        kind=kind,
        op=rule.get("op"),
        op_type=rule.get("op_type"),
        model=rule.get("model"),
        device=_number(rule, "device", source, integer=True),
        nth=_number(rule, "nth", source, integer=True),
        every=_number(rule, "every", source, integer=True),
        every_s=_number(rule, "every_s", source, integer=False),
        jitter_s=_number(rule, "jitter_s", source, integer=False) or 0.0,
        times=_number(rule, "times", source, integer=True),
        scale=scale if scale is not None else 65504.0,
        record=record,
        error_code=_number(rule, "error_code", source, integer=True) or 0,
        error=error if error is not None else 0.05,
        input=_number(rule, "input", source, integer=True),
        overrun=_overrun(rule, source),
        errcode=tuple(errcode),
        message=rule.get("message", ""),
    )


def _overrun(rule: dict[str, Any], source: str) -> int:
    value = _number(rule, "overrun", source, integer=True)
    if value is None:
        return DEFAULT_OVERRUN
    if value < 1:
        raise FaultRuleError(f"{source}: overrun must be at least 1 byte")
    return int(value)


def parse_fault_rules(data: Any, source: str) -> tuple[FaultRule, ...]:
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise FaultRuleError(f"{source}: faults must be a list of rules")
    return tuple(parse_fault_rule(rule, f"{source}: fault {i}") for i, rule in enumerate(data))


class FaultState:
    """The counters of one rule during one acl.init..finalize session (thread-safe)."""

    def __init__(self, rule: FaultRule, rng: random.Random) -> None:
        self.rule = rule
        self._rng = rng
        self._lock = threading.Lock()
        self.matched = 0
        self.fired = 0
        self._next_time = time.monotonic() + self._interval() if rule.every_s is not None else 0.0

    def _interval(self) -> float:
        rule = self.rule
        assert rule.every_s is not None
        return rule.every_s + (self._rng.uniform(0.0, rule.jitter_s) if rule.jitter_s else 0.0)

    def should_fire(self, device_id: int) -> bool:
        rule = self.rule
        if rule.device is not None and rule.device != device_id:
            return False
        with self._lock:
            self.matched += 1
            if rule.times is not None and self.fired >= rule.times:
                return False
            if rule.nth is not None:
                fire = self.matched == rule.nth
            elif rule.every is not None:
                fire = self.matched % rule.every == 0
            elif rule.every_s is not None:
                now = time.monotonic()
                fire = now >= self._next_time
                if fire:
                    self._next_time = now + self._interval()
            else:
                fire = True
            if fire:
                self.fired += 1
            return fire
