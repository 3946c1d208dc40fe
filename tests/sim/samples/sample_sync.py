"""Device synchronization flow (pyACL guide): streams, events, sync stream and device."""

import json
import sys

import acl
import numpy as np
from common_io import check, destroy_dataset, fetch_output, prepare_dataset

model_path, result_path = sys.argv[1], sys.argv[2]
device_id = 0

check(acl.init(), "acl.init")
check(acl.rt.set_device(device_id), "acl.rt.set_device")
context, ret = acl.rt.create_context(device_id)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")

model_id, ret = acl.mdl.load_from_file(model_path)
check(ret, "acl.mdl.load_from_file")
model_desc = acl.mdl.create_desc()
check(acl.mdl.get_desc(model_desc, model_id), "acl.mdl.get_desc")
dims, ret = acl.mdl.get_input_dims(model_desc, 0)
image = np.random.default_rng(7).standard_normal(dims["dims"]).astype(np.float16)
input_dataset, output_dataset = prepare_dataset(model_desc, [image])

start_event, ret = acl.rt.create_event()
check(ret, "acl.rt.create_event")
end_event, ret = acl.rt.create_event()
check(ret, "acl.rt.create_event")
check(acl.rt.record_event(start_event, stream), "acl.rt.record_event")
for _ in range(3):
    check(
        acl.mdl.execute_async(model_id, input_dataset, output_dataset, stream),
        "acl.mdl.execute_async",
    )
check(acl.rt.record_event(end_event, stream), "acl.rt.record_event")
check(acl.rt.synchronize_event(end_event), "acl.rt.synchronize_event")
elapsed_ms, ret = acl.rt.event_elapsed_time(start_event, end_event)
check(ret, "acl.rt.event_elapsed_time")
check(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")
status, ret = acl.rt.stream_query(stream)
check(ret, "acl.rt.stream_query")
check(acl.rt.synchronize_device(), "acl.rt.synchronize_device")
output = fetch_output(model_desc, output_dataset, 0)

check(acl.rt.destroy_event(start_event), "acl.rt.destroy_event")
check(acl.rt.destroy_event(end_event), "acl.rt.destroy_event")
destroy_dataset(input_dataset)
destroy_dataset(output_dataset)
check(acl.mdl.unload(model_id), "acl.mdl.unload")
check(acl.mdl.destroy_desc(model_desc), "acl.mdl.destroy_desc")
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(device_id), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")

with open(result_path, "w") as f:
    json.dump(
        {
            "elapsed_ms": elapsed_ms,
            "status": status,
            "output": output.astype(float).tolist(),
            "input": image.astype(float).tolist(),
        },
        f,
    )
