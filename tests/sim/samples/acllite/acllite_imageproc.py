"""AclLiteImageProc: JPEG decode and resize on DVPP, after acllite's image class.

Images are dicts {"data", "width", "height", "width_stride", "height_stride",
"size"} of YUV420SP pictures in DVPP memory.
"""

import acl
import acllite_utils as utils
import constants as const
import numpy as np


class AclLiteImageProc:
    def __init__(self, resource):
        self._stream = resource.stream
        self._run_mode = resource.run_mode
        self._channel = acl.media.dvpp_create_channel_desc()
        utils.check_ret(
            "acl.media.dvpp_create_channel", acl.media.dvpp_create_channel(self._channel)
        )
        self._resize_config = acl.media.dvpp_create_resize_config()
        self._jpege_config = acl.media.dvpp_create_jpege_config()
        utils.check_ret(
            "acl.media.dvpp_set_jpege_config_level",
            acl.media.dvpp_set_jpege_config_level(self._jpege_config, 100),
        )

    def _pic_desc(self, data, width, height, width_stride, height_stride, size, desc=None):
        """A YUV420SP picture description (filled in, or a new one)."""
        desc = desc or acl.media.dvpp_create_pic_desc()
        acl.media.dvpp_set_pic_desc_data(desc, data)
        acl.media.dvpp_set_pic_desc_format(desc, const.PIXEL_FORMAT_YUV_SEMIPLANAR_420)
        acl.media.dvpp_set_pic_desc_width(desc, width)
        acl.media.dvpp_set_pic_desc_height(desc, height)
        acl.media.dvpp_set_pic_desc_width_stride(desc, width_stride)
        acl.media.dvpp_set_pic_desc_height_stride(desc, height_stride)
        acl.media.dvpp_set_pic_desc_size(desc, size)
        return desc

    def copy_to_dvpp(self, jpeg_bytes):
        """The JPEG file's bytes in DVPP memory, as the JPEG decoder reads them."""
        self._host = np.frombuffer(jpeg_bytes, dtype=np.uint8).copy()
        size = self._host.nbytes
        dvpp_ptr, ret = acl.media.dvpp_malloc(size)
        utils.check_ret("acl.media.dvpp_malloc", ret)
        kind = (
            const.ACL_MEMCPY_HOST_TO_DEVICE
            if self._run_mode == const.ACL_HOST
            else const.ACL_MEMCPY_DEVICE_TO_DEVICE
        )
        ptr = acl.util.numpy_to_ptr(self._host)
        utils.check_ret("acl.rt.memcpy", acl.rt.memcpy(dvpp_ptr, size, ptr, size, kind))
        return dvpp_ptr, size

    def jpegd(self, jpeg_bytes):
        host = np.frombuffer(jpeg_bytes, dtype=np.uint8)
        width, height, _, ret = acl.media.dvpp_jpeg_get_image_info(
            acl.util.numpy_to_ptr(host), host.nbytes
        )
        utils.check_ret("acl.media.dvpp_jpeg_get_image_info", ret)
        out_size, ret = acl.media.dvpp_jpeg_predict_dec_size(
            acl.util.numpy_to_ptr(host), host.nbytes, const.PIXEL_FORMAT_YUV_SEMIPLANAR_420
        )
        utils.check_ret("acl.media.dvpp_jpeg_predict_dec_size", ret)
        out_buffer, ret = acl.media.dvpp_malloc(out_size)
        utils.check_ret("acl.media.dvpp_malloc", ret)
        stride_w, stride_h = utils.align_up(width, 128), utils.align_up(height, 16)
        out_desc = self._pic_desc(out_buffer, width, height, stride_w, stride_h, out_size)
        data, size = self.copy_to_dvpp(jpeg_bytes)
        ret = acl.media.dvpp_jpeg_decode_async(self._channel, data, size, out_desc, self._stream)
        utils.check_ret("acl.media.dvpp_jpeg_decode_async", ret)
        utils.check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self._stream))
        acl.media.dvpp_destroy_pic_desc(out_desc)
        acl.media.dvpp_free(data)
        return {
            "data": out_buffer,
            "width": width,
            "height": height,
            "width_stride": stride_w,
            "height_stride": stride_h,
            "size": out_size,
        }

    def resize(self, image, width, height):
        in_desc = self._pic_desc(
            image["data"],
            image["width"],
            image["height"],
            image["width_stride"],
            image["height_stride"],
            image["size"],
        )
        stride_w, stride_h = utils.align_up(width, 16), utils.align_up(height, 2)
        out_size = utils.yuv420sp_size(stride_w, stride_h)
        out_buffer, ret = acl.media.dvpp_malloc(out_size)
        utils.check_ret("acl.media.dvpp_malloc", ret)
        out_desc = self._pic_desc(out_buffer, width, height, stride_w, stride_h, out_size)
        ret = acl.media.dvpp_vpc_resize_async(
            self._channel, in_desc, out_desc, self._resize_config, self._stream
        )
        utils.check_ret("acl.media.dvpp_vpc_resize_async", ret)
        utils.check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self._stream))
        acl.media.dvpp_destroy_pic_desc(in_desc)
        acl.media.dvpp_destroy_pic_desc(out_desc)
        return {
            "data": out_buffer,
            "width": width,
            "height": height,
            "width_stride": stride_w,
            "height_stride": stride_h,
            "size": out_size,
        }

    def jpege(self, image):
        """The picture as JPEG bytes (encoded on DVPP), as acllite's jpege does."""
        in_desc = self._pic_desc(
            image["data"], image["width"], image["height"], image["width_stride"],
            image["height_stride"], image["size"],
        )  # fmt: skip
        size, ret = acl.media.dvpp_jpeg_predict_enc_size(in_desc, self._jpege_config)
        utils.check_ret("acl.media.dvpp_jpeg_predict_enc_size", ret)
        out_buffer, ret = acl.media.dvpp_malloc(size)
        utils.check_ret("acl.media.dvpp_malloc", ret)
        size_holder = np.array([size], dtype=np.uint32)
        ret = acl.media.dvpp_jpeg_encode_async(
            self._channel, in_desc, out_buffer, acl.util.numpy_to_ptr(size_holder),
            self._jpege_config, self._stream,
        )  # fmt: skip
        utils.check_ret("acl.media.dvpp_jpeg_encode_async", ret)
        utils.check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self._stream))
        encoded = np.zeros(int(size_holder[0]), dtype=np.uint8)
        kind = 2 if self._run_mode == const.ACL_HOST else 3
        utils.check_ret(
            "acl.rt.memcpy",
            acl.rt.memcpy(acl.util.numpy_to_ptr(encoded), encoded.nbytes, out_buffer,
                          encoded.nbytes, kind),
        )  # fmt: skip
        acl.media.dvpp_destroy_pic_desc(in_desc)
        acl.media.dvpp_free(out_buffer)
        return encoded.tobytes()

    def batch_crop(self, image, boxes, width, height):
        """Each (left, top, right, bottom) box of one picture, resized to width x height."""
        src = acl.media.dvpp_create_batch_pic_desc(1)
        dst = acl.media.dvpp_create_batch_pic_desc(len(boxes))
        self._pic_desc(
            image["data"], image["width"], image["height"], image["width_stride"],
            image["height_stride"], image["size"], acl.media.dvpp_get_pic_desc(src, 0),
        )  # fmt: skip
        stride_w, stride_h = utils.align_up(width, 16), utils.align_up(height, 2)
        out_size = utils.yuv420sp_size(stride_w, stride_h)
        crops, outputs = [], []
        for index, (left, top, right, bottom) in enumerate(boxes):
            crops.append(acl.media.dvpp_create_roi_config(left, right, top, bottom))
            buffer, ret = acl.media.dvpp_malloc(out_size)
            utils.check_ret("acl.media.dvpp_malloc", ret)
            self._pic_desc(
                buffer, width, height, stride_w, stride_h, out_size,
                acl.media.dvpp_get_pic_desc(dst, index),
            )  # fmt: skip
            outputs.append(buffer)
        _, ret = acl.media.dvpp_vpc_batch_crop_async(
            self._channel, src, [len(boxes)], dst, crops, self._stream
        )
        utils.check_ret("acl.media.dvpp_vpc_batch_crop_async", ret)
        utils.check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self._stream))
        for crop in crops:
            acl.media.dvpp_destroy_roi_config(crop)
        acl.media.dvpp_destroy_batch_pic_desc(src)
        acl.media.dvpp_destroy_batch_pic_desc(dst)
        return [
            {"data": b, "width": width, "height": height, "width_stride": stride_w,
             "height_stride": stride_h, "size": out_size}
            for b in outputs
        ]  # fmt: skip

    def pngd(self, png_bytes):
        """A PNG decoded on DVPP to RGB888 rows (128-byte aligned)."""
        host = np.frombuffer(png_bytes, dtype=np.uint8)
        width, height, _, ret = acl.media.dvpp_png_get_image_info(
            acl.util.numpy_to_ptr(host), host.nbytes
        )
        utils.check_ret("acl.media.dvpp_png_get_image_info", ret)
        out_size, ret = acl.media.dvpp_png_predict_dec_size(
            acl.util.numpy_to_ptr(host), host.nbytes, const.PIXEL_FORMAT_RGB_888
        )
        utils.check_ret("acl.media.dvpp_png_predict_dec_size", ret)
        out_buffer, ret = acl.media.dvpp_malloc(out_size)
        utils.check_ret("acl.media.dvpp_malloc", ret)
        out_desc = acl.media.dvpp_create_pic_desc()
        acl.media.dvpp_set_pic_desc_data(out_desc, out_buffer)
        acl.media.dvpp_set_pic_desc_size(out_desc, out_size)
        acl.media.dvpp_set_pic_desc_format(out_desc, const.PIXEL_FORMAT_RGB_888)
        data, size = self.copy_to_dvpp(png_bytes)
        ret = acl.media.dvpp_png_decode_async(self._channel, data, size, out_desc, self._stream)
        utils.check_ret("acl.media.dvpp_png_decode_async", ret)
        utils.check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self._stream))
        image = {
            "data": out_buffer, "width": width, "height": height, "size": out_size,
            "width_stride": acl.media.dvpp_get_pic_desc_width_stride(out_desc),
            "height_stride": acl.media.dvpp_get_pic_desc_height_stride(out_desc),
        }  # fmt: skip
        acl.media.dvpp_destroy_pic_desc(out_desc)
        acl.media.dvpp_free(data)
        return image

    def release(self):
        acl.media.dvpp_destroy_resize_config(self._resize_config)
        acl.media.dvpp_destroy_jpege_config(self._jpege_config)
        acl.media.dvpp_destroy_channel(self._channel)
        acl.media.dvpp_destroy_channel_desc(self._channel)
