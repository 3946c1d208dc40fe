"""Live operator timings: aclmon's model subscription and the thread that reads it.

The runtime writes the op records of every subscribed model into a pipe; the
reader thread turns each into an :class:`~aclmon.events.OpTiming` event. The
:class:`~aclmon.agent.profiling.ProfilingController` decides when to subscribe
(``SetProfilingConfig.flags == 0``) and owns one :class:`LiveTimings` while it runs.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import (
    ACL_ERROR_INVALID_PROFILING_CONFIG,
    ACL_PROF_MAX_OP_NAME_LEN,
    ACL_PROF_MAX_OP_TYPE_LEN,
    ACL_SUCCESS,
)
from aclmon.events import OpTiming

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext, DeviceBinder

#: op records read from the subscription pipe per os.read
RECORDS_PER_READ = 256


class LiveTimings:
    """aclmon's model subscription: a pipe, the subscribed models and the reader thread.

    The runtime writes each subscribed model's op records into the pipe. CANN (and
    the sim) closes the write end when the last subscription on it ends, which ends
    the reader with EOF; the pipe is then finished, and a model loaded later gets a
    fresh pipe and subscribe config. Whether the write end is still ours to close is
    decided by the pipe's identity (inode), never by the fd number, which another
    file may have reused.
    """

    def __init__(
        self, ctx: AgentContext, binder: DeviceBinder, op_desc_size: int, aicore_metrics: int
    ) -> None:
        self.ctx = ctx
        self.binder = binder
        self.op_desc_size = op_desc_size
        self.aicore_metrics = aicore_metrics
        self.models: set[int] = set()
        self._config = 0
        self._write_fd = -1
        self._pipe_id: tuple[int, int] | None = None
        self._readers: list[threading.Thread] = []
        self.records = 0

    def _original(self, name: str) -> Any:
        return self.ctx.original(f"prof.{name}")

    def open(self) -> bool:
        """A new pipe, subscribe config and reader thread."""
        read_fd, write_fd = os.pipe()
        config = self._original("create_subscribe_config")(1, self.aicore_metrics, write_fd)
        if not config:
            os.close(read_fd)
            os.close(write_fd)
            return False
        info = os.fstat(write_fd)
        self._config, self._write_fd, self._pipe_id = config, write_fd, (info.st_dev, info.st_ino)
        reader = threading.Thread(
            target=self._read_loop, args=(read_fd,), name="aclmon-op-timings", daemon=True
        )
        reader.start()
        self._readers = [r for r in self._readers if r.is_alive()] + [reader]
        return True

    def subscribe(self, model_id: int, device: int) -> int:
        if not self._config and not self.open():
            return ACL_ERROR_INVALID_PROFILING_CONFIG
        self.binder.bind(device)
        ret = self._original("model_subscribe")(model_id, self._config)
        if ret == ACL_SUCCESS:
            self.models.add(model_id)
        return int(ret)

    def unsubscribe(self, model_id: int) -> int:
        self.models.discard(model_id)
        ret = int(self._original("model_unsubscribe")(model_id))
        if not self.models:
            self._retire_pipe()
        return ret

    def _retire_pipe(self) -> int:
        """Destroy the subscribe config and let go of the pipe's write end."""
        ret = ACL_SUCCESS
        if self._config:
            ret = int(self._original("destroy_subscribe_config")(self._config))
            self._config = 0
        if self._write_fd >= 0:
            try:
                info = os.fstat(self._write_fd)
                still_ours = (info.st_dev, info.st_ino) == self._pipe_id
            except OSError:  # closed by the runtime
                still_ours = False
            if still_ours:
                os.close(self._write_fd)  # the reader sees EOF
            self._write_fd = -1
        return ret

    def close(self) -> int:
        first = ACL_SUCCESS
        for model_id in list(self.models):
            ret = self.unsubscribe(model_id)
            if first == ACL_SUCCESS and ret != ACL_SUCCESS:
                first = ret
        ret = self._retire_pipe()
        if first == ACL_SUCCESS:
            first = ret
        for reader in self._readers:
            if reader is not threading.current_thread():
                reader.join(timeout=2.0)
        return first

    # ------------------------------------------------------------ reader thread
    def _read_loop(self, read_fd: int) -> None:
        size = self.op_desc_size
        pending = bytearray()
        try:
            while True:
                data = os.read(read_fd, size * RECORDS_PER_READ)
                if not data:
                    break
                pending += data
                whole = len(pending) - len(pending) % size
                if whole:
                    chunk = bytes(pending[:whole])
                    del pending[:whole]
                    try:
                        self._parse(chunk)
                    except Exception as exc:
                        self.ctx.fail("op timing records", exc)
        except OSError as exc:
            self.ctx.fail("op timing pipe", exc)
        finally:
            os.close(read_fd)

    def _pointer(self, chunk: bytes) -> tuple[int, Any]:
        """A pointer to ``chunk`` for the op getters, and the object that keeps it alive."""
        util = self.ctx.acl.util
        to_ptr = getattr(util, "bytes_to_ptr", None)
        if to_ptr is not None:
            return int(to_ptr(chunk)), chunk
        import numpy as np  # only needed on CANN versions without bytes_to_ptr

        array = np.frombuffer(chunk, dtype=np.uint8).copy()
        return int(util.numpy_to_ptr(array)), array

    def _parse(self, chunk: bytes) -> None:
        prof = self.ctx.acl.prof
        length = len(chunk)
        pointer, keep_alive = self._pointer(chunk)
        count, ret = prof.get_op_num(pointer, length)
        if ret != ACL_SUCCESS:
            return
        count = min(int(count), length // self.op_desc_size)
        ctx = self.ctx
        models = ctx.state.models
        for index in range(count):
            name, ret_name = prof.get_op_name(pointer, length, index, ACL_PROF_MAX_OP_NAME_LEN)
            op_type, ret_type = prof.get_op_type(pointer, length, index, ACL_PROF_MAX_OP_TYPE_LEN)
            name = str(name or "") if ret_name == ACL_SUCCESS else ""
            op_type = str(op_type or "") if ret_type == ACL_SUCCESS else ""
            start = int(prof.get_op_start(pointer, length, index))
            end = int(prof.get_op_end(pointer, length, index))
            duration = int(prof.get_op_duration(pointer, length, index))
            model_id = int(prof.get_model_id(pointer, length, index))
            ctx.state.learn_op_type(name, op_type)
            model = models.get(model_id)
            device = model.device_id if model is not None else -1
            ctx.emit(OpTiming, model_id, name, op_type, start, end, duration, device)
            self.records += 1
        del keep_alive
