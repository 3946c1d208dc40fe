"""Static AIPP: the image preprocessing ATC builds into a model (``--insert_op_conf``).

A model input may carry ``"aipp": {...}`` with the parameters of an
``aipp_op`` section as the samples' ``aipp.cfg`` files write them
(``input_format: YUV420SP_U8``, ``src_image_size_w/h``, ``csc_switch``,
``rbuv_swap_switch``, ``matrix_r<i>c<j>``, ``input_bias_<i>``,
``output_bias_<i>``, ``mean_chn_<i>``, ``min_chn_<i>``, ``var_reci_chn_<i>``).
As ATC does, the model then takes the image itself (uint8, NHWC
``[1, h * 1.5, w, 1]``) and its first operator, of type ``Aipp``, turns it into
the declared input tensor: colour-space conversion, then
``(pixel - mean - min) * var_reci`` per channel.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

INPUT_FORMAT = "YUV420SP_U8"
#: the defaults of an aipp_op section (BT.601 full-range YUV to RGB, as the samples use)
DEFAULTS: dict[str, Any] = {
    "csc_switch": False,
    "rbuv_swap_switch": False,
    "matrix_r0c0": 256, "matrix_r0c1": 0, "matrix_r0c2": 359,
    "matrix_r1c0": 256, "matrix_r1c1": -88, "matrix_r1c2": -183,
    "matrix_r2c0": 256, "matrix_r2c1": 454, "matrix_r2c2": 0,
    "input_bias_0": 0, "input_bias_1": 128, "input_bias_2": 128,
    "output_bias_0": 0, "output_bias_1": 0, "output_bias_2": 0,
    "mean_chn_0": 0, "mean_chn_1": 0, "mean_chn_2": 0,
    "min_chn_0": 0.0, "min_chn_1": 0.0, "min_chn_2": 0.0,
    "var_reci_chn_0": 1.0, "var_reci_chn_1": 1.0, "var_reci_chn_2": 1.0,
}  # fmt: skip
AIPP_OP_TYPE = "Aipp"
#: aclmdlGetAippType: the input has static AIPP / none
ACL_DATA_WITHOUT_AIPP = 0
ACL_DATA_WITH_STATIC_AIPP = 1


class AippError(ValueError):
    """An ``aipp`` section the sim cannot apply (the message says where)."""


def config(raw: Any, shape: list[int], where: str) -> dict[str, Any]:
    """The full parameters of one input's ``aipp`` section (defaults filled in)."""
    if not isinstance(raw, dict):
        raise AippError(f"{where}: aipp must be an object")
    unknown = set(raw) - set(DEFAULTS) - {"aipp_mode", "input_format", "src_image_size_w",
                                          "src_image_size_h"}  # fmt: skip
    if unknown:
        raise AippError(f"{where}: unknown aipp parameters {sorted(unknown)}")
    if raw.get("aipp_mode", "static") != "static":
        raise AippError(f"{where}: only static AIPP is simulated")
    if raw.get("input_format", INPUT_FORMAT) != INPUT_FORMAT:
        raise AippError(f"{where}: the sim's AIPP takes {INPUT_FORMAT} images")
    if len(shape) != 4 or shape[0] != 1 or shape[1] != 3:
        raise AippError(f"{where}: an AIPP input is an NCHW [1, 3, h, w] tensor")
    height, width = shape[2], shape[3]
    if raw.get("src_image_size_h", height) != height or raw.get("src_image_size_w", width) != width:
        raise AippError(f"{where}: the image size must be the input's (no AIPP crop or resize)")
    if height % 2 or width % 2:
        raise AippError(f"{where}: a YUV420SP image has an even width and height")
    return {**DEFAULTS, **raw, "src_image_size_h": height, "src_image_size_w": width}


def expand(data: dict[str, Any], source: str) -> tuple[dict[str, Any], dict[int, list[int]]]:
    """The description with each AIPP input replaced by its image and an ``Aipp``
    operator in front; and, per such input, the dims ``get_input_dims`` reports
    (NHWC ``[1, h, w, 3]``)."""
    inputs = data.get("inputs")
    if not isinstance(inputs, list) or not any(isinstance(t, dict) and "aipp" in t for t in inputs):
        return data, {}
    expanded = copy.deepcopy(data)
    operators: list[dict[str, Any]] = []
    image_dims: dict[int, list[int]] = {}
    for index, tensor in enumerate(expanded["inputs"]):
        if not isinstance(tensor, dict) or "aipp" not in tensor:
            continue
        where = f"{source}: inputs[{index}]"
        shape = tensor.get("shape")
        params = config(tensor.pop("aipp"), shape if isinstance(shape, list) else [], where)
        height, width = params["src_image_size_h"], params["src_image_size_w"]
        name = str(tensor.get("name"))
        operators.append(
            {
                "name": f"aipp_{name}",
                "type": AIPP_OP_TYPE,
                "inputs": [f"{name}_image"],
                "attrs": params,
                "outputs": [dict(tensor)],
            }
        )
        expanded["inputs"][index] = {
            "name": f"{name}_image",
            "dtype": "uint8",
            "format": "NHWC",
            "shape": [1, height * 3 // 2, width, 1],
        }
        image_dims[index] = [1, height, width, 3]
    expanded["ops"] = operators + list(expanded.get("ops") or [])
    return expanded, image_dims


def run(image: np.ndarray, attrs: dict[str, Any], out: np.dtype) -> np.ndarray:
    """The ``Aipp`` kernel: a ``[1, h * 1.5, w, 1]`` YUV420SP image to ``[1, 3, h, w]``."""
    height, width = attrs["src_image_size_h"], attrs["src_image_size_w"]
    planes = image.reshape(height * 3 // 2, width).astype(np.float32)
    y = planes[:height]
    uv = planes[height:].reshape(height // 2, width // 2, 2).repeat(2, axis=0).repeat(2, axis=1)
    u, v = (uv[:, :, 1], uv[:, :, 0]) if attrs["rbuv_swap_switch"] else (uv[:, :, 0], uv[:, :, 1])
    channels = [y, u, v]
    if attrs["csc_switch"]:
        centred = [c - attrs[f"input_bias_{i}"] for i, c in enumerate(channels)]
        channels = [
            np.clip(
                np.floor(sum(attrs[f"matrix_r{r}c{c}"] * centred[c] for c in range(3)) / 256)
                + attrs[f"output_bias_{r}"],
                0,
                255,
            )
            for r in range(3)
        ]
    normalized = [
        (c - attrs[f"mean_chn_{i}"] - attrs[f"min_chn_{i}"]) * attrs[f"var_reci_chn_{i}"]
        for i, c in enumerate(channels)
    ]
    with np.errstate(all="ignore"):
        return np.stack(normalized)[None].astype(out)
