"""``acl.media.*``: the DVPP basics acllite's image path uses, computed with numpy.

Simulated: DVPP memory (``dvpp_malloc``/``dvpp_free``), channel, picture,
resize, ROI and JPEG-encode configuration descriptions with their getters and
setters, JPEG decoding (JPEGD) to YUV420SP (NV12 or NV21), JPEG encoding
(JPEGE) from it, PNG decoding (PNGD) to RGB888/RGBA8888, and VPC resize, crop
and crop-and-paste on YUV420SP pictures, one at a time or in batches. Images are laid out as DVPP lays them
out: a Y plane of ``width_stride x height_stride`` bytes followed by the
interleaved chroma plane of ``width_stride x height_stride / 2`` bytes.

JPEG decoding and encoding and PNG decoding need Pillow (the ``sim-media``
extra); without it those calls return ACL_ERROR_FEATURE_UNSUPPORTED with a
message saying so. Video (VDEC/VENC) is in :mod:`aclmon.sim.api_video`. See
docs/sim.md.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import host as H
from aclmon.sim import runtime as R
from aclmon.sim.accessors import named
from aclmon.sim.errmsg import fail
from aclmon.sim.guard import needs_init
from aclmon.sim.runtime import Runtime

PIXEL_FORMAT_YUV_SEMIPLANAR_420 = 1  # NV12: Y, then U V U V ...
PIXEL_FORMAT_YVU_SEMIPLANAR_420 = 2  # NV21: Y, then V U V U ...
YUV420SP_FORMATS = (PIXEL_FORMAT_YUV_SEMIPLANAR_420, PIXEL_FORMAT_YVU_SEMIPLANAR_420)
JPEGD_WIDTH_ALIGN = 128
JPEGD_HEIGHT_ALIGN = 16
VPC_WIDTH_ALIGN = 16
VPC_HEIGHT_ALIGN = 2
MAX_IMAGE_SIDE = 8192


@dataclass
class PicDesc:
    data: int = 0
    size: int = 0
    format: int = 0
    width: int = 0
    height: int = 0
    width_stride: int = 0
    height_stride: int = 0
    ret_code: int = 0


@dataclass(frozen=True)
class Roi:
    left: int
    right: int
    top: int
    bottom: int


PIC_DESCS: dict[int, PicDesc] = {}
CHANNELS: dict[int, bool] = {}  # channel desc -> channel created
RESIZE_CONFIGS: dict[int, None] = {}  # resize configs hold nothing simulated
ROI_CONFIGS: dict[int, Roi] = {}
JPEGE_CONFIGS: dict[int, int] = {}  # handle -> quality level


def _align(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def _unsupported(what: str) -> int:
    return fail(C.ACL_ERROR_FEATURE_UNSUPPORTED, f"{what} is not simulated by aclmon.sim")


# ---------------------------------------------------------------- DVPP memory
@needs_init(0)
def dvpp_malloc(rt: Runtime, size: int) -> tuple[int, int]:
    if size <= 0:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "size must be positive")
    ctx = rt.current_context()
    if ctx is None:
        return 0, fail(C.ACL_ERROR_RT_CONTEXT_NULL, "no current context")
    allocation = rt.allocate(ctx.device, size)
    if allocation is None:
        return 0, fail(C.ACL_ERROR_RT_MEMORY_ALLOCATION, f"{size} bytes of DVPP memory")
    return allocation.address, C.ACL_SUCCESS


@needs_init()
def dvpp_free(rt: Runtime, dev_ptr: int) -> int:
    allocation = rt.allocations.get(dev_ptr)
    if allocation is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{dev_ptr:#x} is not DVPP memory")
    rt.release(allocation)
    return C.ACL_SUCCESS


# ---------------------------------------------------------------- channels and configs
def dvpp_create_channel_desc() -> int:
    return H.register(CHANNELS, False)


def dvpp_destroy_channel_desc(channel_desc: int) -> int:
    return H.unregister(CHANNELS, channel_desc, "channel desc")


@needs_init()
def dvpp_create_channel(rt: Runtime, channel_desc: int) -> int:
    if channel_desc not in CHANNELS:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown channel desc")
    CHANNELS[channel_desc] = True
    return C.ACL_SUCCESS


@needs_init()
def dvpp_destroy_channel(rt: Runtime, channel_desc: int) -> int:
    if not CHANNELS.get(channel_desc):
        return fail(C.ACL_ERROR_INVALID_PARAM, "the channel was not created")
    CHANNELS[channel_desc] = False
    return C.ACL_SUCCESS


def dvpp_create_resize_config() -> int:
    return H.register(RESIZE_CONFIGS, None)


def dvpp_destroy_resize_config(resize_config: int) -> int:
    return H.unregister(RESIZE_CONFIGS, resize_config, "resize config")


def dvpp_create_roi_config(left: int, right: int, top: int, bottom: int) -> int:
    if not (0 <= left <= right and 0 <= top <= bottom):
        fail(C.ACL_ERROR_INVALID_PARAM, "ROI needs left <= right and top <= bottom")
        return 0
    return H.register(ROI_CONFIGS, Roi(left, right, top, bottom))


def dvpp_destroy_roi_config(roi_config: int) -> int:
    return H.unregister(ROI_CONFIGS, roi_config, "ROI config")


def dvpp_create_jpege_config() -> int:
    return H.register(JPEGE_CONFIGS, 100)


def dvpp_set_jpege_config_level(jpege_config: int, level: int) -> int:
    if jpege_config not in JPEGE_CONFIGS or not 0 <= level <= 100:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown JPEGE config or level not in [0, 100]")
    JPEGE_CONFIGS[jpege_config] = level
    return C.ACL_SUCCESS


def dvpp_get_jpege_config_level(jpege_config: int) -> int:
    return JPEGE_CONFIGS.get(jpege_config, 0)


def dvpp_destroy_jpege_config(jpege_config: int) -> int:
    return H.unregister(JPEGE_CONFIGS, jpege_config, "JPEGE config")


# ---------------------------------------------------------------- picture descs
def dvpp_create_pic_desc() -> int:
    return H.register(PIC_DESCS, PicDesc())


def dvpp_destroy_pic_desc(pic_desc: int) -> int:
    return H.unregister(PIC_DESCS, pic_desc, "picture desc")


def _pic_desc_setter(field: str, argument: str) -> Callable[[int, int], int]:
    name = f"dvpp_set_pic_desc_{field}"

    def setter(pic_desc: int, value: int) -> int:
        desc = PIC_DESCS.get(pic_desc)
        if desc is None or not isinstance(value, int) or value < 0:
            reason = f"unknown picture desc or bad {field}"
            return fail(C.ACL_ERROR_INVALID_PARAM, reason, call=("api_media", name))
        setattr(desc, field, value)
        return C.ACL_SUCCESS

    doc = f"Set a picture description's {field} (a non-negative int); returns ret."
    return named(setter, name, doc, ("pic_desc", argument))


def _pic_desc_getter(field: str) -> Callable[[int], int]:
    def getter(pic_desc: int) -> int:
        desc = PIC_DESCS.get(pic_desc)
        return getattr(desc, field) if desc is not None else 0

    doc = f"A picture description's {field}; 0 for an unknown description."
    return named(getter, f"dvpp_get_pic_desc_{field}", doc)


#: PicDesc field -> the name pyACL gives its setter's value argument.
_PIC_DESC_ARGUMENTS = {field.name: field.name for field in fields(PicDesc)} | {"data": "data_dev"}
(
    dvpp_set_pic_desc_data,
    dvpp_set_pic_desc_size,
    dvpp_set_pic_desc_format,
    dvpp_set_pic_desc_width,
    dvpp_set_pic_desc_height,
    dvpp_set_pic_desc_width_stride,
    dvpp_set_pic_desc_height_stride,
    dvpp_set_pic_desc_ret_code,
) = (_pic_desc_setter(field, argument) for field, argument in _PIC_DESC_ARGUMENTS.items())
(
    dvpp_get_pic_desc_data,
    dvpp_get_pic_desc_size,
    dvpp_get_pic_desc_format,
    dvpp_get_pic_desc_width,
    dvpp_get_pic_desc_height,
    dvpp_get_pic_desc_width_stride,
    dvpp_get_pic_desc_height_stride,
    dvpp_get_pic_desc_ret_code,
) = map(_pic_desc_getter, _PIC_DESC_ARGUMENTS)


# ---------------------------------------------------------------- memory access
def _read(rt: Runtime, address: int, size: int, *, device_only: bool) -> bytes | None:
    raw = rt.read_device(address, size)
    if raw is not None:
        return raw.tobytes()
    if device_only and rt.config.run_mode == C.ACL_HOST:
        return None  # DVPP reads device memory; on a PCIe card host memory is not that
    return H.read_host(address, size) if address else None


def _picture(rt: Runtime, desc: PicDesc, what: str) -> np.ndarray | int:
    """The Y and chroma planes of a YUV420SP picture as one (hs * 3 / 2, ws) array."""
    if desc.format not in YUV420SP_FORMATS:
        return _unsupported(f"{what}: pixel format {desc.format} (only YUV420SP 1 and 2)")
    ws, hs = desc.width_stride, desc.height_stride
    if not (0 < desc.width <= ws and 0 < desc.height <= hs) or hs % 2 or desc.width % 2:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: bad width/height/strides")
    size = ws * hs * 3 // 2
    if desc.size and desc.size < size:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: size {desc.size} < {size} bytes")
    raw = _read(rt, desc.data, size, device_only=True)
    if raw is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: {desc.data:#x} is not DVPP memory")
    return np.frombuffer(raw, dtype=np.uint8).reshape(hs * 3 // 2, ws)


def _store(rt: Runtime, desc: PicDesc, planes: np.ndarray, what: str) -> int:
    found = rt.find_allocation(desc.data, planes.size)
    if found is None:
        if rt.config.run_mode == C.ACL_HOST or not desc.data:
            return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: {desc.data:#x} is not DVPP memory")
        H.write_host(desc.data, planes.tobytes())
        return C.ACL_SUCCESS
    rt.write_device(desc.data, np.ascontiguousarray(planes))
    return C.ACL_SUCCESS


def _check_stream(rt: Runtime, channel_desc: int, stream: int) -> int:
    if not CHANNELS.get(channel_desc):
        return fail(C.ACL_ERROR_INVALID_PARAM, "the DVPP channel was not created")
    target = rt.resolve_stream(stream)
    return target if isinstance(target, int) else C.ACL_SUCCESS


# ---------------------------------------------------------------- JPEGD
def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


def _open_jpeg(raw: bytes, what: str) -> Any:
    image_module = _pillow()
    if image_module is None:
        return _unsupported(f"{what} needs Pillow (pip install 'aclmon[sim-media]'); JPEG decoding")
    try:
        image = image_module.open(io.BytesIO(raw))
        if image.format != "JPEG":
            return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: the data is {image.format}, not JPEG")
        image.load()
    except (OSError, ValueError, SyntaxError) as exc:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: not a decodable JPEG: {exc}")
    if not (0 < image.width <= MAX_IMAGE_SIDE and 0 < image.height <= MAX_IMAGE_SIDE):
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: {image.width}x{image.height} is too big")
    return image


def _to_yuv420sp(ycbcr: np.ndarray, ws: int, hs: int, fmt: int) -> np.ndarray:
    """(h, w, 3) full-range YCbCr -> NV12/NV21 planes of ``ws`` x ``hs`` (zero padded).

    Chroma is averaged over each 2x2 block (an odd last row or column counts once).
    """
    h, w, _ = ycbcr.shape
    planes = np.zeros((hs * 3 // 2, ws), dtype=np.uint8)
    planes[:h, :w] = ycbcr[:, :, 0]
    he, we = h + h % 2, w + w % 2
    chroma = np.pad(ycbcr[:, :, 1:].astype(np.float32), ((0, he - h), (0, we - w), (0, 0)), "edge")
    blocks = chroma.reshape(he // 2, 2, we // 2, 2, 2).mean(axis=(1, 3))
    uv = np.rint(blocks).astype(np.uint8)
    if fmt == PIXEL_FORMAT_YVU_SEMIPLANAR_420:
        uv = uv[:, :, ::-1]
    planes[hs : hs + he // 2, :we] = uv.reshape(he // 2, we)
    return planes


def dvpp_jpeg_get_image_info(data: int, size: int) -> tuple[int, int, int, int]:
    width, height, components, _fmt, ret = dvpp_jpeg_get_image_info_v2(data, size)
    return width, height, components, ret


def dvpp_jpeg_get_image_info_v2(data: int, size: int) -> tuple[int, int, int, int, int]:
    rt = R.runtime()
    raw = (
        _read(rt, data, size, device_only=False)
        if rt is not None
        else (H.read_host(data, size) if data and size > 0 else None)
    )
    if raw is None or size <= 0:
        return 0, 0, 0, 0, fail(C.ACL_ERROR_INVALID_PARAM, "invalid JPEG data or size")
    image = _open_jpeg(raw, "acldvppJpegGetImageInfo")
    if isinstance(image, int):
        return 0, 0, 0, 0, image
    components = len(image.getbands())
    return image.width, image.height, components, 0, C.ACL_SUCCESS


@needs_init(0)
def dvpp_jpeg_predict_dec_size(
    rt: Runtime, data: int, data_size: int, output_pixel_format: int
) -> tuple[int, int]:
    """The DVPP buffer a decode needs: strides aligned to 128 x 16, YUV420SP."""
    if output_pixel_format not in YUV420SP_FORMATS:
        return 0, _unsupported(f"JPEGD output pixel format {output_pixel_format}")
    raw = _read(rt, data, data_size, device_only=False) if data_size > 0 else None
    if raw is None:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "invalid JPEG data or size")
    image = _open_jpeg(raw, "acldvppJpegPredictDecSize")
    if isinstance(image, int):
        return 0, image
    ws = _align(image.width, JPEGD_WIDTH_ALIGN)
    hs = _align(image.height, JPEGD_HEIGHT_ALIGN)
    return ws * hs * 3 // 2, C.ACL_SUCCESS


@needs_init()
def dvpp_jpeg_decode_async(
    rt: Runtime, channel_desc: int, data: int, size: int, output_desc: int, stream: int
) -> int:
    code = _check_stream(rt, channel_desc, stream)
    if code:
        return code
    out = PIC_DESCS.get(output_desc)
    if out is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown output picture desc")
    raw = _read(rt, data, size, device_only=True) if size > 0 else None
    if raw is None:
        return fail(
            C.ACL_ERROR_INVALID_PARAM, f"JPEG input {data:#x} is not {size} bytes of DVPP memory"
        )
    image = _open_jpeg(raw, "acldvppJpegDecodeAsync")
    if isinstance(image, int):
        return image
    fmt = out.format or PIXEL_FORMAT_YUV_SEMIPLANAR_420
    if fmt not in YUV420SP_FORMATS:
        return _unsupported(f"JPEGD output pixel format {fmt}")
    ws = out.width_stride or _align(image.width, JPEGD_WIDTH_ALIGN)
    hs = out.height_stride or _align(image.height, JPEGD_HEIGHT_ALIGN)
    if ws < image.width or hs < image.height or ws % JPEGD_WIDTH_ALIGN or hs % JPEGD_HEIGHT_ALIGN:
        return fail(
            C.ACL_ERROR_INVALID_PARAM,
            f"JPEGD output strides {ws}x{hs} must be aligned to 128x16 and hold "
            f"{image.width}x{image.height}",
        )
    if out.size and out.size < ws * hs * 3 // 2:
        return fail(C.ACL_ERROR_INVALID_PARAM, "the JPEGD output buffer is too small")
    ycbcr = np.asarray(image.convert("YCbCr"), dtype=np.uint8)
    code = _store(rt, out, _to_yuv420sp(ycbcr, ws, hs, fmt), "acldvppJpegDecodeAsync")
    if code:
        return code
    out.width, out.height = image.width, image.height
    out.width_stride, out.height_stride, out.format = ws, hs, fmt
    out.ret_code = 0
    return C.ACL_SUCCESS


# ---------------------------------------------------------------- VPC
def _resize_plane(plane: np.ndarray, height: int, width: int) -> np.ndarray:
    """Nearest-neighbour resampling by pixel centres: out[i] = in[floor((i + .5) * n / m)]."""
    rows = ((np.arange(height) + 0.5) * plane.shape[0] / height).astype(np.int64)
    cols = ((np.arange(width) + 0.5) * plane.shape[1] / width).astype(np.int64)
    return plane[np.minimum(rows, plane.shape[0] - 1)][:, np.minimum(cols, plane.shape[1] - 1)]


def _crop(planes: np.ndarray, hs: int, roi: Roi) -> tuple[np.ndarray, np.ndarray]:
    """Y (h, w) and chroma (h/2, w/2, 2) of the ROI (inclusive bounds, even origin)."""
    left, top = roi.left & ~1, roi.top & ~1
    right, bottom = roi.right | 1, roi.bottom | 1
    y = planes[top : bottom + 1, left : right + 1]
    uv = planes[hs + top // 2 : hs + (bottom + 1) // 2, left : right + 1]
    return y, uv.reshape(uv.shape[0], uv.shape[1] // 2, 2)


def _vpc(
    rt: Runtime,
    channel_desc: int,
    input_desc: int,
    output_desc: int,
    crop: Roi | None,
    paste: Roi | None,
    stream: int,
    what: str,
) -> int:
    code = _check_stream(rt, channel_desc, stream)
    if code:
        return code
    src, dst = PIC_DESCS.get(input_desc), PIC_DESCS.get(output_desc)
    if src is None or dst is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown picture desc")
    planes = _picture(rt, src, what)
    if isinstance(planes, int):
        return planes
    if dst.format not in YUV420SP_FORMATS or dst.format != src.format:
        return _unsupported(f"{what}: converting pixel format {src.format} to {dst.format}")
    ws, hs = dst.width_stride, dst.height_stride
    if not (0 < dst.width <= ws and 0 < dst.height <= hs) or ws % VPC_WIDTH_ALIGN or hs % 2:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: bad output width/height/strides")
    crop = crop or Roi(0, src.width - 1, 0, src.height - 1)
    if crop.right >= src.width or crop.bottom >= src.height:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: the crop area leaves the picture")
    paste = paste or Roi(0, dst.width - 1, 0, dst.height - 1)
    if paste.right >= dst.width or paste.bottom >= dst.height:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: the paste area leaves the picture")
    y, uv = _crop(planes, src.height_stride, crop)
    left, top = paste.left & ~1, paste.top & ~1
    height, width = (paste.bottom | 1) - top + 1, (paste.right | 1) - left + 1
    existing = (
        _picture(rt, dst, what) if paste != Roi(0, dst.width - 1, 0, dst.height - 1) else None
    )
    out = (
        existing.copy()
        if isinstance(existing, np.ndarray)
        else np.zeros((hs * 3 // 2, ws), dtype=np.uint8)
    )
    out[top : top + height, left : left + width] = _resize_plane(y, height, width)
    chroma = _resize_plane(uv, height // 2, width // 2)
    out[hs + top // 2 : hs + (top + height) // 2, left : left + width] = chroma.reshape(
        height // 2, width
    )
    return _store(rt, dst, out, what)


@needs_init()
def dvpp_vpc_resize_async(
    rt: Runtime,
    channel_desc: int,
    input_desc: int,
    output_desc: int,
    resize_config: int,
    stream: int,
) -> int:
    if resize_config not in RESIZE_CONFIGS:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown resize config")
    return _vpc(
        rt, channel_desc, input_desc, output_desc, None, None, stream, "acldvppVpcResizeAsync"
    )


@needs_init()
def dvpp_vpc_crop_async(
    rt: Runtime, channel_desc: int, input_desc: int, output_desc: int, crop_area: int, stream: int
) -> int:
    crop = ROI_CONFIGS.get(crop_area)
    if crop is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown crop area")
    return _vpc(
        rt, channel_desc, input_desc, output_desc, crop, None, stream, "acldvppVpcCropAsync"
    )


@needs_init()
def dvpp_vpc_crop_and_paste_async(
    rt: Runtime,
    channel_desc: int,
    input_desc: int,
    output_desc: int,
    crop_area: int,
    paste_area: int,
    stream: int,
) -> int:
    crop, paste = ROI_CONFIGS.get(crop_area), ROI_CONFIGS.get(paste_area)
    if crop is None or paste is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown crop or paste area")
    return _vpc(
        rt,
        channel_desc,
        input_desc,
        output_desc,
        crop,
        paste,
        stream,
        "acldvppVpcCropAndPasteAsync",
    )


# ---------------------------------------------------------------- batch VPC
@dataclass
class BatchPicDesc:
    pictures: list[int]


BATCH_PIC_DESCS: dict[int, BatchPicDesc] = {}
#: at most this many crop areas in one batch call, as pyACL checks
MAX_BATCH_CROPS = 256


def dvpp_create_batch_pic_desc(batch_size: int) -> int:
    if not 0 < batch_size <= MAX_BATCH_CROPS:
        return 0
    pictures = [H.register(PIC_DESCS, PicDesc()) for _ in range(batch_size)]
    return H.register(BATCH_PIC_DESCS, BatchPicDesc(pictures))


def dvpp_get_pic_desc(batch_pic_desc: int, index: int) -> int:
    batch = BATCH_PIC_DESCS.get(batch_pic_desc)
    if batch is None or not 0 <= index < len(batch.pictures):
        return 0
    return batch.pictures[index]


def dvpp_destroy_batch_pic_desc(batch_pic_desc: int) -> int:
    batch = BATCH_PIC_DESCS.pop(batch_pic_desc, None)
    if batch is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{batch_pic_desc:#x} is not a batch picture desc")
    for picture in batch.pictures:
        PIC_DESCS.pop(picture, None)
    return C.ACL_SUCCESS


def _batch(
    rt: Runtime,
    channel_desc: int,
    src_batch: int,
    roi_nums: list[int],
    dst_batch: int,
    crop_areas: list[int],
    paste_areas: list[int] | None,
    stream: int,
    what: str,
) -> int:
    """One VPC crop (and paste) per crop area: ``roi_nums[i]`` areas of source
    picture ``i``, into the destination pictures in order."""
    src, dst = BATCH_PIC_DESCS.get(src_batch), BATCH_PIC_DESCS.get(dst_batch)
    if src is None or dst is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown batch picture desc")
    total = sum(roi_nums)
    if (
        len(roi_nums) > len(src.pictures)
        or any(n < 0 for n in roi_nums)
        or total != len(crop_areas)
        or total > len(dst.pictures)
        or (paste_areas is not None and len(paste_areas) != total)
    ):
        return fail(
            C.ACL_ERROR_INVALID_PARAM,
            f"{what}: roi_nums {roi_nums} do not match {len(src.pictures)} sources, "
            f"{len(crop_areas)} crop areas and {len(dst.pictures)} destinations",
        )
    index = 0
    for source, count in zip(src.pictures, roi_nums, strict=False):
        for _ in range(count):
            crop = ROI_CONFIGS.get(crop_areas[index])
            paste = ROI_CONFIGS.get(paste_areas[index]) if paste_areas is not None else None
            if crop is None or (paste_areas is not None and paste is None):
                return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown crop or paste area")
            code = _vpc(rt, channel_desc, source, dst.pictures[index], crop, paste, stream, what)
            if code:
                return code
            index += 1
    return C.ACL_SUCCESS


@needs_init(0, 0)
def dvpp_vpc_batch_crop_async(
    rt: Runtime,
    channel_desc: int,
    src_batch_pic_descs: int,
    roi_nums: list[int],
    dst_batch_pic_descs: int,
    crop_areas: list[int],
    stream: int,
) -> tuple[int, int]:
    code = _batch(
        rt, channel_desc, src_batch_pic_descs, roi_nums, dst_batch_pic_descs, crop_areas,
        None, stream, "acldvppVpcBatchCropAsync",
    )  # fmt: skip
    return dst_batch_pic_descs, code


@needs_init(0, 0)
def dvpp_vpc_batch_crop_and_paste_async(
    rt: Runtime,
    channel_desc: int,
    src_batch_pic_descs: int,
    roi_nums: list[int],
    dst_batch_pic_descs: int,
    crop_areas: list[int],
    paste_areas: list[int],
    stream: int,
) -> tuple[int, int]:
    code = _batch(
        rt, channel_desc, src_batch_pic_descs, roi_nums, dst_batch_pic_descs, crop_areas,
        paste_areas, stream, "acldvppVpcBatchCropAndPasteAsync",
    )  # fmt: skip
    return dst_batch_pic_descs, code


@needs_init()
def dvpp_vpc_batch_crop_resize_async(
    rt: Runtime,
    channel_desc: int,
    src_batch_pic_descs: int,
    roi_nums: list[int],
    dst_batch_pic_descs: int,
    crop_areas: list[int],
    resize_config: int,
    stream: int,
) -> int:
    if resize_config not in RESIZE_CONFIGS:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown resize config")
    return _batch(
        rt, channel_desc, src_batch_pic_descs, roi_nums, dst_batch_pic_descs, crop_areas,
        None, stream, "acldvppVpcBatchCropResizeAsync",
    )  # fmt: skip


# ---------------------------------------------------------------- JPEGE
#: what a JPEG adds to its compressed data at most (headers, tables), for the size bound
JPEG_HEADER_BOUND = 4096


def _yuv420sp_to_ycbcr(planes: np.ndarray, desc: PicDesc) -> np.ndarray:
    """The (h, w, 3) YCbCr of a YUV420SP picture (each chroma sample covers 2x2 pixels)."""
    w, h, hs = desc.width, desc.height, desc.height_stride
    y = planes[:h, :w]
    uv = planes[hs : hs + (h + 1) // 2, : w + w % 2].reshape((h + 1) // 2, -1, 2)
    if desc.format == PIXEL_FORMAT_YVU_SEMIPLANAR_420:
        uv = uv[:, :, ::-1]
    chroma = uv.repeat(2, axis=0).repeat(2, axis=1)[:h, :w]
    return np.dstack([y, chroma[:, :, 0], chroma[:, :, 1]])


@needs_init(0)
def dvpp_jpeg_predict_enc_size(rt: Runtime, input_desc: int, jpege_config: int) -> tuple[int, int]:
    """An upper bound of the encoded size: the YUV420SP picture plus the headers."""
    desc = PIC_DESCS.get(input_desc)
    if desc is None or jpege_config not in JPEGE_CONFIGS:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "unknown picture desc or JPEGE config")
    if desc.format not in YUV420SP_FORMATS:
        return 0, _unsupported(f"JPEGE input pixel format {desc.format} (only YUV420SP 1 and 2)")
    ws = desc.width_stride or _align(desc.width, VPC_WIDTH_ALIGN)
    hs = desc.height_stride or _align(desc.height, VPC_HEIGHT_ALIGN)
    return ws * hs * 3 // 2 + JPEG_HEADER_BOUND, C.ACL_SUCCESS


@needs_init()
def dvpp_jpeg_encode_async(
    rt: Runtime,
    channel_desc: int,
    input_desc: int,
    data: int,
    size: int,
    jpege_config: int,
    stream: int,
) -> int:
    """Encode a YUV420SP picture with Pillow at the config's level (its quality);
    ``size`` points at a uint32 that holds the buffer's size and gets the JPEG's."""
    what = "acldvppJpegEncodeAsync"
    code = _check_stream(rt, channel_desc, stream)
    if code:
        return code
    desc, level = PIC_DESCS.get(input_desc), JPEGE_CONFIGS.get(jpege_config)
    if desc is None or level is None or not size:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown picture desc, config or size")
    image_module = _pillow()
    if image_module is None:
        return _unsupported(f"{what} needs Pillow (pip install 'aclmon[sim-media]'); JPEG encoding")
    planes = _picture(rt, desc, what)
    if isinstance(planes, int):
        return planes
    image = image_module.fromarray(_yuv420sp_to_ycbcr(planes, desc), "YCbCr")
    out = io.BytesIO()
    image.save(out, "JPEG", quality=max(1, min(level, 100)), subsampling="4:2:0")
    encoded = out.getvalue()
    capacity = int(np.frombuffer(H.read_host(size, 4), dtype=np.uint32)[0])
    if len(encoded) > capacity:
        return fail(
            C.ACL_ERROR_INVALID_PARAM, f"{what}: the JPEG takes {len(encoded)} bytes of {capacity}"
        )
    if not rt.write_device(data, encoded):
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: {data:#x} is not DVPP memory")
    H.write_host(size, np.array([len(encoded)], dtype=np.uint32).tobytes())
    return C.ACL_SUCCESS


# ---------------------------------------------------------------- PNGD
PIXEL_FORMAT_RGB_888 = 12
PIXEL_FORMAT_RGBA_8888 = 16
PIXEL_FORMAT_UNKNOWN = 10000
PNGD_WIDTH_ALIGN = 128
PNGD_HEIGHT_ALIGN = 16


def _open_png(rt: Runtime | None, data: int, size: int, what: str) -> Any:
    image_module = _pillow()
    if image_module is None:
        return _unsupported(f"{what} needs Pillow (pip install 'aclmon[sim-media]'); PNG decoding")
    raw = (
        _read(rt, data, size, device_only=False)
        if rt is not None
        else (H.read_host(data, size) if data and size > 0 else None)
    )
    if raw is None or size <= 0:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: invalid PNG data or size")
    try:
        image = image_module.open(io.BytesIO(raw))
        if image.format != "PNG":
            return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: the data is {image.format}, not PNG")
        image.load()
    except (OSError, ValueError, SyntaxError) as exc:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: not a decodable PNG: {exc}")
    if not (0 < image.width <= MAX_IMAGE_SIDE and 0 < image.height <= MAX_IMAGE_SIDE):
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: {image.width}x{image.height} is too big")
    return image


def _png_layout(image: Any, fmt: int) -> tuple[int, int, int, str]:
    """(output format, width stride in bytes, height stride, Pillow mode) of a decode."""
    if fmt == PIXEL_FORMAT_UNKNOWN:
        fmt = PIXEL_FORMAT_RGBA_8888 if "A" in image.getbands() else PIXEL_FORMAT_RGB_888
    channels, mode = (4, "RGBA") if fmt == PIXEL_FORMAT_RGBA_8888 else (3, "RGB")
    ws = _align(image.width * channels, PNGD_WIDTH_ALIGN)
    return fmt, ws, _align(image.height, PNGD_HEIGHT_ALIGN), mode


def dvpp_png_get_image_info(data: int, data_size: int) -> tuple[int, int, int, int]:
    image = _open_png(R.runtime(), data, data_size, "acldvppPngGetImageInfo")
    if isinstance(image, int):
        return 0, 0, 0, image
    return image.width, image.height, len(image.getbands()), C.ACL_SUCCESS


@needs_init(0)
def dvpp_png_predict_dec_size(
    rt: Runtime, data: int, data_size: int, output_pixel_format: int
) -> tuple[int, int]:
    if output_pixel_format not in (
        PIXEL_FORMAT_RGB_888,
        PIXEL_FORMAT_RGBA_8888,
        PIXEL_FORMAT_UNKNOWN,
    ):
        return 0, _unsupported(f"PNGD output pixel format {output_pixel_format}")
    image = _open_png(rt, data, data_size, "acldvppPngPredictDecSize")
    if isinstance(image, int):
        return 0, image
    _fmt, ws, hs, _mode = _png_layout(image, output_pixel_format)
    return ws * hs, C.ACL_SUCCESS


@needs_init()
def dvpp_png_decode_async(
    rt: Runtime, channel_desc: int, data: int, size: int, output_desc: int, stream: int
) -> int:
    """PNG to RGB888 (or RGBA8888) rows of ``width_stride`` bytes (128 aligned)."""
    what = "acldvppPngDecodeAsync"
    code = _check_stream(rt, channel_desc, stream)
    if code:
        return code
    out = PIC_DESCS.get(output_desc)
    if out is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown output picture desc")
    if rt.config.run_mode == C.ACL_HOST and rt.read_device(data, size) is None:
        return fail(
            C.ACL_ERROR_INVALID_PARAM, f"PNG input {data:#x} is not {size} bytes of DVPP memory"
        )
    image = _open_png(rt, data, size, what)
    if isinstance(image, int):
        return image
    fmt, ws, hs, mode = _png_layout(image, out.format or PIXEL_FORMAT_UNKNOWN)
    if fmt not in (PIXEL_FORMAT_RGB_888, PIXEL_FORMAT_RGBA_8888):
        return _unsupported(f"PNGD output pixel format {fmt}")
    if out.size and out.size < ws * hs:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: the output buffer is too small")
    pixels = np.asarray(image.convert(mode), dtype=np.uint8)
    rows = np.zeros((hs, ws), dtype=np.uint8)
    rows[: image.height, : pixels.shape[1] * pixels.shape[2]] = pixels.reshape(image.height, -1)
    code = _store(rt, out, rows, what)
    if code:
        return code
    out.width, out.height, out.width_stride, out.height_stride, out.format = (
        image.width, image.height, ws, hs, fmt,
    )  # fmt: skip
    out.ret_code = 0
    return C.ACL_SUCCESS
