"""Dynamic batch and dynamic image size through acllite's model class.

usage: acllite_dynamic.py MODEL RESULT_JSON batch|hw
For each gear of the model: run it, record the input, the output and the dims
get_cur_output_dims reports; then try a batch that is not a gear.
"""

import json
import os
import sys

import acl
import numpy as np

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "acllite"))

from acllite_model import AclLiteModel
from acllite_resource import AclLiteResource

model_path, result_path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
resource = AclLiteResource()
resource.init()
model = AclLiteModel(model_path)
desc = model._model_desc
input_dims, _ = acl.mdl.get_input_dims(desc, 0)
index, ret = acl.mdl.get_input_index_by_name(desc, "ascend_mbatch_shape_data")
runs = []
rng = np.random.default_rng(11)
if kind == "batch":
    gears, ret = acl.mdl.get_dynamic_batch(desc)
    for batch in gears["batch"]:
        image = rng.standard_normal((batch, 3, 16, 16)).astype(np.float16)
        out = model.execute([image], batch=batch)
        cur, _ = acl.mdl.get_cur_output_dims(desc, 0)
        runs.append(
            {
                "gear": [batch],
                "input": image.tolist(),
                "output": out[0].tolist(),
                "cur_dims": cur["dims"],
            }
        )
    rejected = model.execute([np.zeros((3, 3, 16, 16), np.float16)], batch=3)
else:
    gears, ret = acl.mdl.get_dynamic_hw(desc, -1)
    for height, width in gears["hw"]:
        image = rng.standard_normal((1, 3, height, width)).astype(np.float32)
        out = model.execute([image], hw=(height, width))
        cur, _ = acl.mdl.get_cur_output_dims(desc, 0)
        runs.append(
            {
                "gear": [height, width],
                "input": image.tolist(),
                "output": out[0].tolist(),
                "cur_dims": cur["dims"],
            }
        )
    rejected = None
max_dims, _ = acl.mdl.get_output_dims(desc, 0)
with open(result_path, "w") as handle:
    json.dump(
        {
            "gears": gears,
            "input_dims": input_dims["dims"],
            "mbatch_index": index,
            "num_inputs": acl.mdl.get_num_inputs(desc),
            "max_output_dims": max_dims["dims"],
            "runs": runs,
            "rejected": rejected is None,
        },
        handle,
    )
model.release()
resource.release()
