"""``acl.media`` video: VDEC (H.264/H.265 to YUV420SP) and VENC (YUV420SP to
H.264/H.265), through PyAV's FFmpeg codecs (the ``sim-media`` extra).

As on the device, a channel is set up through its description (the thread that
runs its callbacks, the callback, the stream format, the picture format and
size), frames are sent one at a time, and each result reaches the callback on
the channel's thread when that thread calls ``acl.rt.process_report`` (the
runtime subscribes the thread at ``*_create_channel``). VDEC writes each decoded
picture into the output picture description sent with the oldest frame still
waiting (decoders may hold frames back); VENC puts each encoded frame in device
memory of its own, described by a stream description the runtime owns. An
end-of-stream frame (``eos``) or destroying the channel flushes the codec;
destroying waits (a bounded time) for the callbacks to have run.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import host as H
from aclmon.sim.accessors import named
from aclmon.sim.api_media import PIC_DESCS, YUV420SP_FORMATS, PicDesc, _align
from aclmon.sim.api_media import _picture as read_picture
from aclmon.sim.errmsg import fail
from aclmon.sim.guard import needs_init
from aclmon.sim.runtime import Runtime

H265_MAIN_LEVEL = 0
H264_BASELINE_LEVEL = 1
H264_MAIN_LEVEL = 2
H264_HIGH_LEVEL = 3
STREAM_FORMATS = (H265_MAIN_LEVEL, H264_BASELINE_LEVEL, H264_MAIN_LEVEL, H264_HIGH_LEVEL)
_H264_PROFILES = {H264_BASELINE_LEVEL: "baseline", H264_MAIN_LEVEL: "main", H264_HIGH_LEVEL: "high"}
VDEC_WIDTH_ALIGN = 16
VDEC_HEIGHT_ALIGN = 2
#: how long destroying a channel waits for its thread to run the callbacks left
DRAIN_TIMEOUT_S = 10.0


def _pyav() -> Any:
    try:
        import av
    except ImportError:
        return None
    return av


def _no_pyav(what: str) -> int:
    return fail(
        C.ACL_ERROR_FEATURE_UNSUPPORTED,
        f"{what} needs PyAV (pip install 'aclmon[sim-media]'): video is not simulated without it",
    )


# ---------------------------------------------------------------- descriptions
@dataclass
class StreamDesc:
    data: int = 0
    size: int = 0
    format: int = 0
    timestamp: int = 0
    ret_code: int = 0
    eos: int = 0


@dataclass
class VdecChannelDesc:
    channel_id: int = 0
    thread_id: int = 0
    callback: Callable[..., Any] | None = None
    entype: int = H264_MAIN_LEVEL
    out_pic_format: int = 1
    out_pic_width: int = 0
    out_pic_height: int = 0
    ref_frame_num: int = 0
    out_mode: int = 0
    bit_depth: int = 0
    # the open channel: the decoder, and the frames whose pictures are still due
    codec: Any = field(default=None, repr=False)
    pending: collections.deque[tuple[int, int, Any]] = field(default_factory=collections.deque)
    delivered: list[threading.Event] = field(default_factory=list)


@dataclass
class VencChannelDesc:
    channel_id: int = 0
    thread_id: int = 0
    callback: Callable[..., Any] | None = None
    entype: int = H264_MAIN_LEVEL
    pic_format: int = 1
    pic_width: int = 0
    pic_height: int = 0
    key_frame_interval: int = 16
    buf_addr: int = 0
    buf_size: int = 0
    max_bit_rate: int = 0
    src_rate: int = 25
    rc_mode: int = 0
    codec: Any = field(default=None, repr=False)
    pending: collections.deque[tuple[int, Any]] = field(default_factory=collections.deque)
    delivered: list[threading.Event] = field(default_factory=list)
    frames: int = 0
    #: the encoded frames' memory and descriptions, released with the channel
    outputs: list[tuple[Any, int]] = field(default_factory=list)


@dataclass
class VdecFrameConfig:
    pass


@dataclass
class VencFrameConfig:
    force_i_frame: int = 0
    eos: int = 0


STREAM_DESCS: dict[int, StreamDesc] = {}
VDEC_CHANNEL_DESCS: dict[int, VdecChannelDesc] = {}
VENC_CHANNEL_DESCS: dict[int, VencChannelDesc] = {}
VDEC_FRAME_CONFIGS: dict[int, VdecFrameConfig] = {}
VENC_FRAME_CONFIGS: dict[int, VencFrameConfig] = {}
_next_channel_id = iter(range(1 << 30))


def _getter(registry: dict[int, Any], name: str) -> Callable[[int], Any]:
    def getter(desc: int) -> Any:
        found = registry.get(desc)
        return getattr(found, name) if found is not None else 0

    return getter


def _setter(registry: dict[int, Any], what: str, name: str) -> Callable[[int, Any], int]:
    def setter(desc: int, value: Any) -> int:
        found = registry.get(desc)
        if found is None:
            return fail(C.ACL_ERROR_INVALID_PARAM, f"unknown {what}")
        if name == "callback":
            if not callable(value):
                raise TypeError("parameter must be callable")
        elif not isinstance(value, int) or value < 0:
            return fail(C.ACL_ERROR_INVALID_PARAM, f"bad {name} {value!r}")
        setattr(found, name, value)
        return C.ACL_SUCCESS

    return setter


def _accessors(
    prefix: str, registry: dict[int, Any], what: str, names: list[str], *, setters: bool = True
) -> None:
    """Module-level ``{prefix}_get_{name}`` (and ``_set_``) functions for each field."""
    argument = what.replace(" ", "_")
    for name in names:
        get_name = prefix.replace("{}", "get") + f"_{name}"
        globals()[get_name] = named(
            _getter(registry, name), get_name, f"The {name} of a {what}; 0 for an unknown one.",
            (argument,),
        )  # fmt: skip
        if setters:
            set_name = prefix.replace("{}", "set") + f"_{name}"
            globals()[set_name] = named(
                _setter(registry, what, name), set_name,
                f"Set the {name} of a {what}; returns ret.", (argument, name),
            )  # fmt: skip


def _lifecycle(kind: str, registry: dict[int, Any], make: Callable[[], Any]) -> None:
    create, destroy = f"{kind.format('create')}", f"{kind.format('destroy')}"

    def creator() -> int:
        return H.register(registry, make())

    def destroyer(desc: int) -> int:
        return H.unregister(registry, desc, kind.format("").strip("_").replace("_", " "))

    globals()[create] = named(creator, create, f"A new {kind.format('')} handle.")
    globals()[destroy] = named(destroyer, destroy, f"Destroy a {kind.format('')}; returns ret.")


_accessors("dvpp_{}_stream_desc", STREAM_DESCS, "stream desc", [f.name for f in fields(StreamDesc)])
_lifecycle("dvpp_{}_stream_desc", STREAM_DESCS, StreamDesc)
_VDEC_FIELDS = ["channel_id", "thread_id", "callback", "entype", "out_pic_format",
                "out_pic_width", "out_pic_height", "ref_frame_num", "out_mode", "bit_depth"]  # fmt: skip
_accessors("vdec_{}_channel_desc", VDEC_CHANNEL_DESCS, "channel desc", _VDEC_FIELDS)
_lifecycle("vdec_{}_channel_desc", VDEC_CHANNEL_DESCS, VdecChannelDesc)
_lifecycle("vdec_{}_frame_config", VDEC_FRAME_CONFIGS, VdecFrameConfig)
_VENC_FIELDS = ["thread_id", "callback", "entype", "pic_format", "pic_width", "pic_height",
                "key_frame_interval", "buf_addr", "buf_size", "max_bit_rate", "src_rate",
                "rc_mode"]  # fmt: skip
_accessors("venc_{}_channel_desc", VENC_CHANNEL_DESCS, "channel desc", _VENC_FIELDS)
_accessors(
    "venc_{}_channel_desc", VENC_CHANNEL_DESCS, "channel desc", ["channel_id"], setters=False
)
_lifecycle("venc_{}_channel_desc", VENC_CHANNEL_DESCS, VencChannelDesc)
_accessors("venc_{}_frame_config", VENC_FRAME_CONFIGS, "frame config", ["force_i_frame", "eos"])
_lifecycle("venc_{}_frame_config", VENC_FRAME_CONFIGS, VencFrameConfig)


# ---------------------------------------------------------------- channels
def _open(rt: Runtime, channel: VdecChannelDesc | VencChannelDesc, what: str) -> int:
    if channel.codec is not None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: the channel is already created")
    if not channel.thread_id or channel.callback is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: set the channel's thread id and callback")
    if channel.entype not in STREAM_FORMATS:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown stream format {channel.entype}")
    with rt.lock:  # the channel's thread runs its callbacks through process_report
        rt.reports.setdefault(channel.thread_id, [])
    channel.channel_id = next(_next_channel_id)
    return C.ACL_SUCCESS


def _callback(
    rt: Runtime, channel: VdecChannelDesc | VencChannelDesc, args: tuple[Any, ...]
) -> None:
    """Queue the channel's callback for its thread (process_report runs it)."""
    function = channel.callback
    assert function is not None
    done = rt.queue_report(channel.thread_id, lambda packed: function(*packed), args)
    channel.delivered.append(done)


def _drain(rt: Runtime, channel: VdecChannelDesc | VencChannelDesc) -> None:
    """Wait (bounded) until the channel's thread ran every callback queued for it."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    for done in channel.delivered:
        while not done.wait(0.05):
            if time.monotonic() > deadline or not _thread_alive(channel.thread_id):
                break
    channel.delivered.clear()


def _thread_alive(native_id: int) -> bool:
    return any(t.native_id == native_id for t in threading.enumerate())


# ---------------------------------------------------------------- VDEC
@needs_init()
def vdec_create_channel(rt: Runtime, channel_desc: int) -> int:
    channel = VDEC_CHANNEL_DESCS.get(channel_desc)
    if channel is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown VDEC channel desc")
    av = _pyav()
    if av is None:
        return _no_pyav("aclvdecCreateChannel")
    code = _open(rt, channel, "aclvdecCreateChannel")
    if code:
        return code
    if channel.out_pic_format not in YUV420SP_FORMATS:
        return fail(C.ACL_ERROR_FEATURE_UNSUPPORTED, "VDEC outputs YUV420SP (formats 1 and 2)")
    name = "hevc" if channel.entype == H265_MAIN_LEVEL else "h264"
    channel.codec = av.CodecContext.create(name, "r")
    return C.ACL_SUCCESS


def _decode(channel: VdecChannelDesc, raw: bytes | None) -> list[Any]:
    """The pictures the decoder gives for ``raw``; None flushes it (end of stream),
    after which a fresh decoder takes the frames that may follow."""
    codec = channel.codec
    frames = []
    packets = codec.parse(raw) if raw is not None else [*codec.parse(b""), None]
    for packet in packets:
        frames.extend(codec.decode(packet))
    if raw is None:
        channel.codec = _pyav().CodecContext.create(codec.name, "r")
    return frames


def _nv12(frame: Any, fmt: int) -> np.ndarray:
    planes = frame.to_ndarray(format="nv12" if fmt == 1 else "nv21")
    return np.ascontiguousarray(planes, dtype=np.uint8)


def _deliver_picture(rt: Runtime, channel: VdecChannelDesc, frame: Any) -> None:
    if not channel.pending:
        return  # a picture nobody sent an output for (skipped frames)
    input_desc, output_desc, user_data = channel.pending.popleft()
    out = PIC_DESCS.get(output_desc)
    if out is not None:
        _write_picture(rt, channel, out, frame)
    _callback(rt, channel, (input_desc, output_desc, user_data))


def _flush_decoder(rt: Runtime, channel: VdecChannelDesc) -> None:
    """End of stream: the pictures the decoder held back; frames that gave none (data
    the decoder could not use) get their callback with the output's ``ret_code`` set."""
    try:
        frames = _decode(channel, None)
    except Exception:  # what the parser held back was no stream either: a fresh decoder
        frames = []
        channel.codec = _pyav().CodecContext.create(channel.codec.name, "r")
    for frame in frames:
        _deliver_picture(rt, channel, frame)
    while channel.pending:
        input_desc, output_desc, user_data = channel.pending.popleft()
        out = PIC_DESCS.get(output_desc)
        if out is not None:
            out.ret_code = C.ACL_ERROR_INVALID_PARAM
        _callback(rt, channel, (input_desc, output_desc, user_data))


def _write_picture(rt: Runtime, channel: VdecChannelDesc, out: PicDesc, frame: Any) -> None:
    width = channel.out_pic_width or frame.width
    height = channel.out_pic_height or frame.height
    if (width, height) != (frame.width, frame.height):
        frame = frame.reformat(width=width, height=height)
    ws, hs = _align(width, VDEC_WIDTH_ALIGN), _align(height, VDEC_HEIGHT_ALIGN)
    planes = np.zeros((hs * 3 // 2, ws), dtype=np.uint8)
    picture = _nv12(frame, channel.out_pic_format)
    planes[:height, :width] = picture[:height, :width]
    planes[hs : hs + height // 2, :width] = picture[height : height + height // 2, :width]
    if (out.size and out.size < planes.size) or not rt.write_device(out.data, planes):
        out.ret_code = C.ACL_ERROR_INVALID_PARAM
        return
    out.width, out.height, out.width_stride, out.height_stride = width, height, ws, hs
    out.format, out.size, out.ret_code = channel.out_pic_format, planes.size, 0


def _stream_bytes(rt: Runtime, stream: StreamDesc) -> bytes | None:
    raw = rt.read_device(stream.data, stream.size) if stream.size > 0 else None
    if raw is None and rt.config.run_mode == C.ACL_DEVICE and stream.data and stream.size > 0:
        return H.read_host(stream.data, stream.size)
    return raw.tobytes() if raw is not None else None


def _vdec_send(
    rt: Runtime, channel_desc: int, input_desc: int, output_desc: int, user_data: Any, what: str
) -> int:
    channel = VDEC_CHANNEL_DESCS.get(channel_desc)
    stream = STREAM_DESCS.get(input_desc)
    if channel is None or channel.codec is None or stream is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown or closed channel, or stream desc")
    if stream.eos:
        _flush_decoder(rt, channel)
        return C.ACL_SUCCESS
    raw = _stream_bytes(rt, stream)
    if raw is None:
        return fail(
            C.ACL_ERROR_INVALID_PARAM,
            f"{what}: the stream is not {stream.size} bytes of DVPP memory",
        )
    if output_desc:
        channel.pending.append((input_desc, output_desc, user_data))
    try:
        frames = _decode(channel, raw)
    except Exception as exc:  # a bad stream: the frame fails, the channel goes on
        stream.ret_code = C.ACL_ERROR_INVALID_PARAM
        if output_desc:
            channel.pending.pop()
        _callback(rt, channel, (input_desc, output_desc, user_data))
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: the decoder rejects the frame: {exc}")
    stream.ret_code = 0
    for frame in frames:
        _deliver_picture(rt, channel, frame)
    if not output_desc:
        _callback(rt, channel, (input_desc, 0, user_data))
    return C.ACL_SUCCESS


@needs_init()
def vdec_send_frame(
    rt: Runtime, channel_desc: int, input: int, output: int, config: int, user_data: Any
) -> int:
    return _vdec_send(rt, channel_desc, input, output, user_data, "aclvdecSendFrame")


@needs_init()
def vdec_send_skipped_frame(
    rt: Runtime, channel_desc: int, input: int, config: int, user_data: Any
) -> int:
    return _vdec_send(rt, channel_desc, input, 0, user_data, "aclvdecSendSkippedFrame")


@needs_init()
def vdec_destroy_channel(rt: Runtime, channel_desc: int) -> int:
    channel = VDEC_CHANNEL_DESCS.get(channel_desc)
    if channel is None or channel.codec is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, "aclvdecDestroyChannel: the channel is not created")
    _flush_decoder(rt, channel)
    _drain(rt, channel)
    channel.codec = None
    channel.pending.clear()
    return C.ACL_SUCCESS


# ---------------------------------------------------------------- VENC
@needs_init()
def venc_create_channel(rt: Runtime, channel_desc: int) -> int:
    channel = VENC_CHANNEL_DESCS.get(channel_desc)
    if channel is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, "unknown VENC channel desc")
    av = _pyav()
    if av is None:
        return _no_pyav("aclvencCreateChannel")
    if (
        channel.pic_format not in YUV420SP_FORMATS
        or channel.pic_width <= 0
        or channel.pic_height <= 0
    ):
        return fail(C.ACL_ERROR_INVALID_PARAM, "aclvencCreateChannel: set a YUV420SP picture size")
    code = _open(rt, channel, "aclvencCreateChannel")
    if code:
        return code
    channel.codec = _encoder(av, channel)
    return C.ACL_SUCCESS


def _encoder(av: Any, channel: VencChannelDesc) -> Any:
    hevc = channel.entype == H265_MAIN_LEVEL
    codec = av.CodecContext.create("libx265" if hevc else "libx264", "w")
    codec.width, codec.height = channel.pic_width, channel.pic_height
    codec.pix_fmt = "yuv420p"
    rate = max(1, channel.src_rate)
    codec.framerate, codec.time_base = Fraction(rate), Fraction(1, rate)
    codec.gop_size = max(1, channel.key_frame_interval)
    if channel.max_bit_rate:
        codec.bit_rate = channel.max_bit_rate * 1000  # kbit/s, as VENC takes it
    # One picture in, one frame out, as the hardware encoder does: no look-ahead.
    options = {"preset": "ultrafast", "tune": "zerolatency"}
    if hevc:
        options["x265-params"] = "log-level=error:bframes=0"
    else:
        options["profile"] = _H264_PROFILES[channel.entype]
        options["bf"] = "0"
    codec.options = options
    return codec


def _flush_encoder(rt: Runtime, channel: VencChannelDesc) -> None:
    """End of stream: the encoder gives what it holds; a fresh one takes what follows."""
    for packet in channel.codec.encode(None):
        _deliver_packet(rt, channel, packet)
    channel.codec = _encoder(_pyav(), channel)


def _deliver_packet(rt: Runtime, channel: VencChannelDesc, packet: Any) -> None:
    data = bytes(packet)
    ctx = rt.current_context()
    if ctx is None or not data:
        return
    allocation = rt.allocate(ctx.device, len(data))
    if allocation is None:
        return
    rt.write_device(allocation.address, data)
    desc = H.register(
        STREAM_DESCS,
        StreamDesc(allocation.address, len(data), channel.entype, int(packet.pts or 0)),
    )
    channel.outputs.append((allocation, desc))
    input_desc, user_data = channel.pending.popleft() if channel.pending else (0, None)
    _callback(rt, channel, (input_desc, desc, user_data))


@needs_init()
def venc_send_frame(
    rt: Runtime, channel_desc: int, input: int, reserve: int, config: int, user_data: Any
) -> int:
    what = "aclvencSendFrame"
    channel = VENC_CHANNEL_DESCS.get(channel_desc)
    frame_config = VENC_FRAME_CONFIGS.get(config)
    if channel is None or channel.codec is None or frame_config is None:
        return fail(
            C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown or closed channel, or frame config"
        )
    if frame_config.eos:
        _flush_encoder(rt, channel)
        return C.ACL_SUCCESS
    desc = PIC_DESCS.get(input)
    if desc is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what}: unknown picture desc")
    if (desc.width, desc.height) != (channel.pic_width, channel.pic_height):
        return fail(
            C.ACL_ERROR_INVALID_PARAM,
            f"{what}: a {desc.width}x{desc.height} picture for a "
            f"{channel.pic_width}x{channel.pic_height} channel",
        )
    planes = read_picture(rt, desc, what)
    if isinstance(planes, int):
        return planes
    av = _pyav()
    w, h, hs = desc.width, desc.height, desc.height_stride
    packed = np.concatenate([planes[:h, :w], planes[hs : hs + h // 2, :w]])
    nv = "nv12" if desc.format == 1 else "nv21"
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(packed), format=nv)
    frame.pts = channel.frames
    if frame_config.force_i_frame:
        frame.pict_type = av.video.frame.PictureType.I  # a key frame now
    channel.frames += 1
    channel.pending.append((input, user_data))
    for packet in channel.codec.encode(frame):
        _deliver_packet(rt, channel, packet)
    return C.ACL_SUCCESS


@needs_init()
def venc_destroy_channel(rt: Runtime, channel_desc: int) -> int:
    channel = VENC_CHANNEL_DESCS.get(channel_desc)
    if channel is None or channel.codec is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, "aclvencDestroyChannel: the channel is not created")
    _flush_encoder(rt, channel)
    _drain(rt, channel)
    channel.codec = None
    channel.pending.clear()
    for allocation, desc in channel.outputs:
        rt.release(allocation)
        STREAM_DESCS.pop(desc, None)
    channel.outputs.clear()
    return C.ACL_SUCCESS
