"""The rest of the image path of the acllite samples: JPEG decode, JPEG encode of the
decoded picture, a batch crop of two boxes, and a PNG decode.

usage: dvpp_images.py JPEG PNG RESULT_JSON
"""

import json
import os
import sys

import acl
import numpy as np

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "acllite"))

from acllite_imageproc import AclLiteImageProc
from acllite_resource import AclLiteResource

jpeg_path, png_path, result_path = sys.argv[1], sys.argv[2], sys.argv[3]
resource = AclLiteResource()
resource.init()
dvpp = AclLiteImageProc(resource)
kind = 2 if resource.run_mode == 1 else 3


def fetch(image):
    out = np.zeros(image["size"], dtype=np.uint8)
    acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, image["data"], image["size"], kind)
    return out


with open(jpeg_path, "rb") as handle:
    decoded = dvpp.jpegd(handle.read())
encoded = dvpp.jpege(decoded)
crops = dvpp.batch_crop(decoded, [(0, 0, 15, 15), (16, 8, 47, 39)], 16, 16)
with open(png_path, "rb") as handle:
    png = dvpp.pngd(handle.read())
with open(result_path, "w") as handle:
    json.dump(
        {
            "decoded": fetch(decoded).tolist(),
            "encoded": encoded.hex(),
            "crops": [fetch(c).tolist() for c in crops],
            "png": fetch(png).tolist(),
            "png_layout": [png["width"], png["height"], png["width_stride"], png["height_stride"]],
        },
        handle,
    )
for image in (decoded, png, *crops):
    acl.media.dvpp_free(image["data"])
dvpp.release()
resource.release()
