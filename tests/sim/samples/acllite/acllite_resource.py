"""AclLiteResource: device, context and stream of an acllite application."""

import acl
import acllite_utils as utils
from acllite_logger import log_info


class AclLiteResource:
    def __init__(self, device_id=0):
        self.device_id = device_id
        self.context = None
        self.stream = None
        self.run_mode = None

    def init(self):
        log_info("init resource stage")
        acl.init()  # 100002 when already initialized, which an application may ignore
        utils.check_ret("acl.rt.set_device", acl.rt.set_device(self.device_id))
        self.context, ret = acl.rt.create_context(self.device_id)
        utils.check_ret("acl.rt.create_context", ret)
        self.stream, ret = acl.rt.create_stream()
        utils.check_ret("acl.rt.create_stream", ret)
        self.run_mode, ret = acl.rt.get_run_mode()
        utils.check_ret("acl.rt.get_run_mode", ret)
        log_info("init resource success")

    def release(self):
        if self.stream:
            acl.rt.destroy_stream(self.stream)
            self.stream = None
        if self.context:
            acl.rt.destroy_context(self.context)
            self.context = None
        acl.rt.reset_device(self.device_id)
        acl.finalize()
