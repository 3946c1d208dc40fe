"""VENC as the public video-encode sample does it: generated YUV420SP frames sent to an
H.264 (or H.265) channel, the encoded frames collected in the callback, which runs on
a thread that processes reports.

usage: sample_venc.py OUTPUT_STREAM FORMAT(h264|h265) FRAMES
"""

import sys

import acl
import numpy as np
from common_io import check

H265_MAIN_LEVEL, H264_MAIN_LEVEL = 0, 2
PIXEL_FORMAT_YUV_SEMIPLANAR_420 = 1
ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST = 1, 2
output_path, codec, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
width, height = 64, 48

check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
encoded = []
running = True


def report_loop(args):
    acl.rt.set_context(context)
    while running:
        acl.rt.process_report(100)


def on_encoded(input_pic_desc, output_stream_desc, user_data):
    size = acl.media.dvpp_get_stream_desc_size(output_stream_desc)
    data = acl.media.dvpp_get_stream_desc_data(output_stream_desc)
    host = np.zeros(size, dtype=np.uint8)
    acl.rt.memcpy(acl.util.numpy_to_ptr(host), size, data, size, ACL_MEMCPY_DEVICE_TO_HOST)
    encoded.append((user_data, host.tobytes()))


thread_id, ret = acl.util.start_thread(report_loop, [])
check(ret, "acl.util.start_thread")
channel = acl.media.venc_create_channel_desc()
check(acl.media.venc_set_channel_desc_thread_id(channel, thread_id), "set thread id")
check(acl.media.venc_set_channel_desc_callback(channel, on_encoded), "set callback")
entype = H265_MAIN_LEVEL if codec == "h265" else H264_MAIN_LEVEL
check(acl.media.venc_set_channel_desc_entype(channel, entype), "set entype")
check(acl.media.venc_set_channel_desc_pic_format(channel, PIXEL_FORMAT_YUV_SEMIPLANAR_420), "fmt")
check(acl.media.venc_set_channel_desc_pic_width(channel, width), "set width")
check(acl.media.venc_set_channel_desc_pic_height(channel, height), "set height")
check(acl.media.venc_set_channel_desc_key_frame_interval(channel, 8), "set gop")
check(acl.media.venc_create_channel(channel), "acl.media.venc_create_channel")
frame_config = acl.media.venc_create_frame_config()
check(acl.media.venc_set_frame_config_force_i_frame(frame_config, 0), "force i frame")
check(acl.media.venc_set_frame_config_eos(frame_config, 0), "eos")

size = width * height * 3 // 2
buffer, ret = acl.media.dvpp_malloc(size)
check(ret, "acl.media.dvpp_malloc")
picture = acl.media.dvpp_create_pic_desc()
for setter, value in (
    (acl.media.dvpp_set_pic_desc_data, buffer),
    (acl.media.dvpp_set_pic_desc_size, size),
    (acl.media.dvpp_set_pic_desc_format, PIXEL_FORMAT_YUV_SEMIPLANAR_420),
    (acl.media.dvpp_set_pic_desc_width, width),
    (acl.media.dvpp_set_pic_desc_height, height),
    (acl.media.dvpp_set_pic_desc_width_stride, width),
    (acl.media.dvpp_set_pic_desc_height_stride, height),
):
    setter(picture, value)
for index in range(count):
    frame = np.full(size, 128, dtype=np.uint8)
    frame[: width * height] = 40 + 20 * index  # a flat grey that brightens frame by frame
    check(
        acl.rt.memcpy(buffer, size, acl.util.numpy_to_ptr(frame), size, ACL_MEMCPY_HOST_TO_DEVICE),
        "acl.rt.memcpy",
    )
    check(acl.media.venc_send_frame(channel, picture, 0, frame_config, index), "venc_send_frame")
check(acl.media.venc_set_frame_config_eos(frame_config, 1), "eos")
check(acl.media.venc_send_frame(channel, 0, 0, frame_config, None), "venc_send_frame eos")
check(acl.media.venc_destroy_channel(channel), "acl.media.venc_destroy_channel")
running = False
acl.util.stop_thread(thread_id)
acl.media.venc_destroy_channel_desc(channel)
acl.media.venc_destroy_frame_config(frame_config)
acl.media.dvpp_destroy_pic_desc(picture)
acl.media.dvpp_free(buffer)
with open(output_path, "wb") as handle:
    for _, data in encoded:
        handle.write(data)
print("frames", [user for user, _ in encoded])
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
