"""A video reader after acllite's: demux a local H.264/H.265 file with PyAV, decode
each packet on DVPP's VDEC, and hand out the decoded YUV420SP pictures.

The VDEC callback runs on a thread of the reader's own that calls
acl.rt.process_report, as the runtime requires.
"""

import queue

import acl
import acllite_utils as utils
import av
import constants as const
import numpy as np

H265_MAIN_LEVEL = 0
H264_MAIN_LEVEL = 2


class VideoReader:
    def __init__(self, path, resource):
        self._resource = resource
        self._container = av.open(path)
        stream = self._container.streams.video[0]
        self.width, self.height = stream.codec_context.width, stream.codec_context.height
        entype = H265_MAIN_LEVEL if stream.codec_context.name == "hevc" else H264_MAIN_LEVEL
        self._frames = queue.Queue()
        self._exit = False
        self._thread_id, ret = acl.util.start_thread(self._report_loop, [])
        utils.check_ret("acl.util.start_thread", ret)
        self._channel = acl.media.vdec_create_channel_desc()
        acl.media.vdec_set_channel_desc_channel_id(self._channel, 0)
        acl.media.vdec_set_channel_desc_thread_id(self._channel, self._thread_id)
        acl.media.vdec_set_channel_desc_callback(self._channel, self._on_frame)
        acl.media.vdec_set_channel_desc_entype(self._channel, entype)
        acl.media.vdec_set_channel_desc_out_pic_format(
            self._channel, const.PIXEL_FORMAT_YUV_SEMIPLANAR_420
        )
        utils.check_ret(
            "acl.media.vdec_create_channel", acl.media.vdec_create_channel(self._channel)
        )
        self._frame_config = acl.media.vdec_create_frame_config()
        self._stride_w = utils.align_up(self.width, 16)
        self._stride_h = utils.align_up(self.height, 2)
        self._out_size = utils.yuv420sp_size(self._stride_w, self._stride_h)
        self._packets = self._container.demux(stream)

    def _report_loop(self, args):
        acl.rt.set_context(self._resource.context)
        while not self._exit:
            acl.rt.process_report(100)

    def _on_frame(self, input_desc, output_desc, user_data):
        data, buffer = user_data
        acl.media.dvpp_free(data)
        acl.media.dvpp_destroy_stream_desc(input_desc)
        if output_desc == 0:
            return
        self._frames.put(
            {
                "data": buffer,
                "width": acl.media.dvpp_get_pic_desc_width(output_desc),
                "height": acl.media.dvpp_get_pic_desc_height(output_desc),
                "width_stride": acl.media.dvpp_get_pic_desc_width_stride(output_desc),
                "height_stride": acl.media.dvpp_get_pic_desc_height_stride(output_desc),
                "size": self._out_size,
            }
        )
        acl.media.dvpp_destroy_pic_desc(output_desc)

    def _send(self, packet_bytes):
        host = np.frombuffer(packet_bytes, dtype=np.uint8).copy()
        data, ret = acl.media.dvpp_malloc(host.nbytes)
        utils.check_ret("acl.media.dvpp_malloc", ret)
        kind = (
            const.ACL_MEMCPY_HOST_TO_DEVICE
            if self._resource.run_mode == const.ACL_HOST
            else const.ACL_MEMCPY_DEVICE_TO_DEVICE
        )
        utils.check_ret(
            "acl.rt.memcpy",
            acl.rt.memcpy(data, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes, kind),
        )
        stream_desc = acl.media.dvpp_create_stream_desc()
        acl.media.dvpp_set_stream_desc_data(stream_desc, data)
        acl.media.dvpp_set_stream_desc_size(stream_desc, host.nbytes)
        buffer, ret = acl.media.dvpp_malloc(self._out_size)
        utils.check_ret("acl.media.dvpp_malloc", ret)
        pic_desc = acl.media.dvpp_create_pic_desc()
        acl.media.dvpp_set_pic_desc_data(pic_desc, buffer)
        acl.media.dvpp_set_pic_desc_size(pic_desc, self._out_size)
        acl.media.dvpp_set_pic_desc_format(pic_desc, const.PIXEL_FORMAT_YUV_SEMIPLANAR_420)
        ret = acl.media.vdec_send_frame(
            self._channel, stream_desc, pic_desc, self._frame_config, (data, buffer)
        )
        utils.check_ret("acl.media.vdec_send_frame", ret)

    def read(self, timeout=10.0):
        """The next decoded picture, or None at the end of the file."""
        while self._frames.empty():
            packet = next(self._packets, None)
            if packet is None or packet.size == 0:
                self.close()
                break
            self._send(bytes(packet))
        try:
            return self._frames.get(timeout=timeout) if not self._frames.empty() else None
        except queue.Empty:
            return None

    def close(self):
        if self._channel is None:
            return
        eos = acl.media.dvpp_create_stream_desc()
        acl.media.dvpp_set_stream_desc_eos(eos, 1)
        acl.media.vdec_send_frame(self._channel, eos, 0, self._frame_config, None)
        acl.media.dvpp_destroy_stream_desc(eos)
        utils.check_ret(
            "acl.media.vdec_destroy_channel", acl.media.vdec_destroy_channel(self._channel)
        )
        acl.media.vdec_destroy_channel_desc(self._channel)
        acl.media.vdec_destroy_frame_config(self._frame_config)
        self._channel = None
        self._exit = True
        acl.util.stop_thread(self._thread_id)
        self._container.close()
