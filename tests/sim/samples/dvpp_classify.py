"""JPEG -> DVPP decode -> VPC resize -> model, as the acllite image samples do.

usage: dvpp_classify.py JPEG MODEL RESULT_JSON
The model takes the resized YUV420SP picture as it lies in DVPP memory.
"""

import json
import os
import sys

import acl
import numpy as np

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "acllite"))

from acllite_imageproc import AclLiteImageProc
from acllite_model import AclLiteModel
from acllite_resource import AclLiteResource

jpeg_path, model_path, result_path = sys.argv[1], sys.argv[2], sys.argv[3]
resource = AclLiteResource()
resource.init()
dvpp = AclLiteImageProc(resource)
model = AclLiteModel(model_path)
with open(jpeg_path, "rb") as handle:
    jpeg = handle.read()
decoded = dvpp.jpegd(jpeg)
resized = dvpp.resize(decoded, 32, 32)
copy_back = np.zeros(resized["size"], dtype=np.uint8)
kind = 2 if resource.run_mode == 1 else 3
ret = acl.rt.memcpy(
    acl.util.numpy_to_ptr(copy_back), copy_back.nbytes, resized["data"], resized["size"], kind
)
output = model.execute([{"data": resized["data"], "size": resized["size"]}])
with open(result_path, "w") as handle:
    json.dump(
        {
            "decoded": {k: v for k, v in decoded.items() if k != "data"},
            "yuv": copy_back.tolist(),
            "output": output[0].tolist(),
        },
        handle,
    )
for image in (decoded, resized):
    acl.media.dvpp_free(image["data"])
model.release()
dvpp.release()
resource.release()
