"""The agent's exception-info callback, chained in front of the job's own.

pyACL calls the registered callback on a runtime thread with an exception-info
handle. pyACL silently drops a Python callback that raises, so everything here
is fenced: the agent's callback never raises, whatever the runtime or the job's
callback does. Only one callback can be registered (last one wins), so the
agent keeps its own registered and calls the job's after it (see
``hooks.Hooks._set_exception_info_callback``).
"""

from __future__ import annotations

import contextlib
import sys
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import ACL_ERROR_RT_SYS_DMA, ACL_SUCCESS, EXCEPTION_INFO_INVALID
from aclmon.events import AclException, TensorDesc

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext
    from aclmon.agent.launches import LaunchSites

#: create_and_get_op_desc's op_name_len: the largest pyACL accepts, so a long
#: scoped op name is never cut short.
OP_NAME_LEN = 4096
#: bounds on what the runtime reports, so a damaged descriptor cannot make the
#: agent loop or allocate without limit inside the runtime's thread.
MAX_TENSORS = 256
MAX_DIMS = 64
#: how long the capture waits for the record of an execute_async still returning on
#: the job's thread (the job's own callback runs after it), and how often it looks
LAUNCH_RECORD_WAIT_S = 0.2
LAUNCH_RECORD_POLL_S = 0.0005


def _id(value: Any) -> int:
    """An id from an exception-info getter; 0xFFFFFFFF (NULL info) becomes -1."""
    if type(value) is not int or value == EXCEPTION_INFO_INVALID:
        return -1
    return value


def copy_fault_text(device: int, stream_id: int, task_id: int) -> str:
    """The agent's reading of a copy-engine fault: CANN reports a copy that runs past
    the end of its device allocation (or into memory nobody holds) this way."""
    return (
        f"likely out-of-bounds copy: the copy engine (SDMA) failed task {task_id} on "
        f"device {device} stream {stream_id} (ACL_ERROR_RT_SYS_DMA); a memcpy probably "
        "ran past the end of its device or DVPP allocation"
    )


class ExceptionCapture:
    """Reads each exception into one :class:`AclException` event and chains the job's callback."""

    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        acl = ctx.acl
        self._rt = acl.rt
        self._mdl = acl.mdl
        self._acl = acl
        #: the callback the job registered (None = none); called after the agent's work
        self.job_callback: Callable[[int], Any] | None = None
        self.registered = False
        self.captured = 0
        #: device -> the model of the one synchronous execute running on it (the hooks)
        self.running_model: Callable[[int], int | None] | None = None
        #: tells the history which model an exception (ts_ns, task_id) came from
        self.note_running: Callable[[int, int, int], None] | None = None
        #: (device, stream_id) -> an execute_async there is still in its wrapper (the hooks)
        self.launch_unrecorded: Callable[[int, int], bool] | None = None
        #: where the job launched each stream's work (names the failing launch)
        self.launches: LaunchSites | None = None
        #: told of each exception once published, with the launches around it (the
        #: live triage)
        self.on_captured: Callable[[AclException, dict[str, Any]], None] | None = None

    # ------------------------------------------------------------ registration
    def register(self) -> int:
        """Register the agent's callback with the runtime; returns the ACL code."""
        ret = self.ctx.original("rt.set_exception_info_callback")(self.callback)
        self.registered = ret == ACL_SUCCESS
        return int(ret)

    def reregister(self) -> None:
        self.register()

    def unregister(self) -> None:
        """Hand the runtime back the job's callback (or none)."""
        if self.registered:
            self.registered = False
            self.ctx.original("rt.set_exception_info_callback")(self.job_callback)

    # ------------------------------------------------------------ the callback
    def callback(self, info: int) -> None:
        """Called by the runtime. Never raises."""
        try:
            # The runtime's thread, where the job's callback runs next: what the job reads
            # of its error state there is not changed by the agent's reading.
            with self.ctx.errors.kept():
                self._capture(info)
        except BaseException as exc:  # the runtime thread must never see an exception
            with contextlib.suppress(BaseException):
                self.ctx.fail("exception callback", exc)
        job_callback = self.job_callback
        if job_callback is not None:
            try:
                job_callback(info)
            except BaseException:
                # pyACL drops a callback that raises; keep that behaviour for the job's
                # callback (the agent's own stays registered) and say so once.
                self.job_callback = None
                try:
                    text = traceback.format_exc()
                    print(
                        "aclmon agent: the job's exception callback raised; pyACL would drop it,"
                        f" so it is dropped:\n{text}",
                        file=sys.stderr,
                    )
                    self.ctx.log_line("error", f"the job's exception callback raised:\n{text}")
                except BaseException:
                    pass

    def _capture(self, info: int) -> None:
        rt = self._rt
        device = _id(rt.get_device_id_from_exception_info(info))
        stream_id = _id(rt.get_stream_id_from_exception_info(info))
        task_id = _id(rt.get_task_id_from_exception_info(info))
        thread_id = _id(rt.get_thread_id_from_exception_info(info))
        error_code = _id(rt.get_error_code_from_exception_info(info))
        op_name = ""
        inputs: tuple[TensorDesc, ...] = ()
        outputs: tuple[TensorDesc, ...] = ()
        if device >= 0 and stream_id >= 0 and task_id >= 0:
            op_name, inputs, outputs = self._op_details(device, stream_id, task_id)
        op_type = self.ctx.state.op_type_of(op_name) if op_name else ""
        launch_site, launch = self._launch_of(device, stream_id)
        # The model raising it, when a synchronous execute is running: the history
        # (publisher thread) numbers the execution, in order with the others' Ends.
        running = self.running_model(device) if self.running_model is not None else None
        self.captured += 1
        event = self.ctx.make(
            AclException,
            device,
            stream_id,
            task_id,
            thread_id,
            error_code,
            op_name,
            op_type,
            inputs,
            outputs,
            "",
            0,
            launch_site,
        )
        if running is not None and self.note_running is not None:
            self.note_running(event.ts_ns, task_id, running)
        self._after_launch_records(device, stream_id)
        self.ctx.publish(event)
        if error_code == ACL_ERROR_RT_SYS_DMA and not op_name:
            self.ctx.log_line("warning", copy_fault_text(device, stream_id, task_id))
        if self.on_captured is not None:
            self.on_captured(event, launch)

    def _launch_of(self, device: int, stream_id: int) -> tuple[str, dict[str, Any]]:
        """The launch whose task failed (:meth:`LaunchSites.failing_launch`) on the
        stream with this exception-info id."""
        launches = self.launches
        if launches is None or not launches.rings:
            return "", {}
        handles = [
            created.stream
            for created in list(self.ctx.state.streams.values())
            if created.device_id == device and created.stream_id == stream_id
        ]
        if not handles and len(launches.rings) == 1:
            handles = list(launches.rings)  # one stream launched on: no doubt which
        return launches.failing_launch(handles, time.perf_counter_ns())

    def _after_launch_records(self, device: int, stream_id: int) -> None:
        """The runtime may report an exception while the execute_async that raised it
        is still on its way back on the job's thread (the simulator raises it during
        the call): wait, briefly, until that launch's record is in the ring, so that
        the history numbers the exception as that launch's (otherwise the previous
        launch on the stream would be counted failed as well)."""
        pending = self.launch_unrecorded
        if pending is None:
            return
        deadline = time.monotonic() + LAUNCH_RECORD_WAIT_S
        while pending(device, stream_id) and time.monotonic() < deadline:
            time.sleep(LAUNCH_RECORD_POLL_S)

    def _op_details(
        self, device: int, stream_id: int, task_id: int
    ) -> tuple[str, tuple[TensorDesc, ...], tuple[TensorDesc, ...]]:
        result = self._mdl.create_and_get_op_desc(device, stream_id, task_id, OP_NAME_LEN)
        op_name, input_desc, num_inputs, output_desc, num_outputs, ret = result
        if ret != ACL_SUCCESS:
            # No op for this task (e.g. not a model task): the ids alone still tell a lot.
            return "", (), ()
        try:
            inputs = self._tensors(input_desc, num_inputs)
            outputs = self._tensors(output_desc, num_outputs)
        finally:
            destroy = self._acl.destroy_tensor_desc
            if input_desc:
                destroy(input_desc)
            if output_desc:
                destroy(output_desc)
        return str(op_name or ""), inputs, outputs

    def _tensors(self, desc_array: int, count: int) -> tuple[TensorDesc, ...]:
        if not desc_array or type(count) is not int or count <= 0:
            return ()
        acl = self._acl
        tensors = []
        for index in range(min(count, MAX_TENSORS)):
            desc = acl.get_tensor_desc_by_index(desc_array, index)
            if not desc:
                continue
            num_dims = acl.get_tensor_desc_num_dims(desc)
            dims = []
            if type(num_dims) is int and num_dims > 0:
                for dim_index in range(min(num_dims, MAX_DIMS)):
                    dim, ret = acl.get_tensor_desc_dim_v2(desc, dim_index)
                    dims.append(int(dim) if ret == ACL_SUCCESS else -1)
            name = acl.get_tensor_desc_name(desc)
            tensors.append(
                TensorDesc(
                    int(acl.get_tensor_desc_type(desc)),
                    int(acl.get_tensor_desc_format(desc)),
                    tuple(dims),
                    int(acl.get_tensor_desc_address(desc)),
                    int(acl.get_tensor_desc_size(desc)),
                    str(name) if name else "",
                )
            )
        return tuple(tensors)
