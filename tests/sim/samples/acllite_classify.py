"""An acllite-style classifier: AclLiteResource + AclLiteModel on a resnet-like model.

usage: acllite_classify.py MODEL RESULT_JSON [load_type] [batch]
Writes the input image(s) and the model's output(s) as JSON lists.
"""

import json
import os
import sys

import numpy as np

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "acllite"))

from acllite_logger import log_info
from acllite_model import AclLiteModel
from acllite_resource import AclLiteResource

model_path, result_path = sys.argv[1], sys.argv[2]
load_type = int(sys.argv[3]) if len(sys.argv) > 3 else 0
batch = int(sys.argv[4]) if len(sys.argv) > 4 else None

resource = AclLiteResource()
resource.init()
model = AclLiteModel(model_path, load_type)
rng = np.random.default_rng(7)
shape = (batch or 1, 3, 16, 16)
image = rng.standard_normal(shape).astype(np.float16)
first = model.execute([image], batch=batch)
second = model.execute([image], batch=batch)  # the input buffer is reused
log_info("classified %d image(s)", shape[0])
with open(result_path, "w") as handle:
    json.dump(
        {
            "run_mode": resource.run_mode,
            "input": image.tolist(),
            "output": first[0].tolist(),
            "repeat_equal": bool(np.array_equal(first[0], second[0])),
        },
        handle,
    )
model.release()
resource.release()
