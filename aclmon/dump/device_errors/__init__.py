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

from aclmon.dump.device_errors.parser import DeviceErrorReader, parse_device_errors
from aclmon.dump.device_errors.records import CopyFault, CoreReport, DeviceError, ExtendInfo

__all__ = [
    "CopyFault",
    "CoreReport",
    "DeviceError",
    "DeviceErrorReader",
    "ExtendInfo",
    "parse_device_errors",
]
