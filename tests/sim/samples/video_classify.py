"""A local H.264 clip -> acllite's video reader (VDEC) -> VPC resize -> model, frame by
frame, as the acllite video samples run.

usage: video_classify.py CLIP MODEL RESULT_JSON
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
from acllite_video import VideoReader

clip_path, model_path, result_path = sys.argv[1], sys.argv[2], sys.argv[3]
resource = AclLiteResource()
resource.init()
dvpp = AclLiteImageProc(resource)
model = AclLiteModel(model_path)
reader = VideoReader(clip_path, resource)
kind = 2 if resource.run_mode == 1 else 3
frames, outputs = [], []
while True:
    image = reader.read()
    if image is None:
        break
    decoded = np.zeros(image["size"], dtype=np.uint8)
    acl.rt.memcpy(
        acl.util.numpy_to_ptr(decoded), decoded.nbytes, image["data"], image["size"], kind
    )
    resized = dvpp.resize(image, 32, 32)
    outputs.append(model.execute([{"data": resized["data"], "size": resized["size"]}])[0].tolist())
    frames.append(
        {"width": image["width"], "height": image["height"],
         "width_stride": image["width_stride"], "height_stride": image["height_stride"],
         "y_mean": float(decoded[: image["width_stride"] * image["height"]].mean())}
    )  # fmt: skip
    acl.media.dvpp_free(image["data"])
    acl.media.dvpp_free(resized["data"])
reader.close()
with open(result_path, "w") as handle:
    json.dump({"frames": frames, "outputs": outputs}, handle)
model.release()
dvpp.release()
resource.release()
