"""Registering, replacing and clearing the exception callback, right and wrong."""

import json
import os

os.environ["ACLMON_SIM_FAULTS"] = json.dumps([{"kind": "aicore_exception", "op_type": "Relu"}])

import acl
from jobview import Model, check, show

fired = []
show("before init", acl.rt.set_exception_info_callback(lambda info: fired.append("early")))
check(acl.init(), "acl.init")
for argument in ("not callable", 42):
    try:
        acl.rt.set_exception_info_callback(argument)
    except TypeError as exc:
        show("TypeError", str(exc))
show("first", acl.rt.set_exception_info_callback(lambda info: fired.append("first")))
show("second", acl.rt.set_exception_info_callback(lambda info: fired.append("second")))
check(acl.rt.set_device(0), "acl.rt.set_device")
model = Model("mlp_head")
show("execute", acl.mdl.execute(model.model_id, model.inputs, model.outputs))
show("cleared", acl.rt.set_exception_info_callback(None))
show("execute", acl.mdl.execute(model.model_id, model.inputs, model.outputs))
show("again", acl.rt.set_exception_info_callback(lambda info: fired.append("third")))
show("cleared with no argument", acl.rt.set_exception_info_callback())
show("execute", acl.mdl.execute(model.model_id, model.inputs, model.outputs))
show("fired", fired)
model.release()
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
