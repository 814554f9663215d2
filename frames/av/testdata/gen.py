#!/usr/bin/env python3
"""Generates the test clips of package av with PyAV.

For each clip it encodes a moving colour pattern, muxes it into MP4, demuxes
it again and writes, next to this script:

  NAME.pkts      the packets in decode order, each as a 4-byte little-endian
                 length and the bytes
  NAME.json      codec, size, extradata (hex, the av1C/avcC/hvcC payload),
                 each packet's pts/dts/keyframe, frame count, pixel format,
                 colour range and colour space of PyAV's decoded frames
  NAME.yuv.png   PyAV's decoded frames in presentation order, as one 8-bit
                 grey PNG as wide as the frame: for each frame its Y rows,
                 then its U rows, then its V rows (chroma rows padded with
                 zeros to the frame's width)
  NAME.rgb.png   the same frames as frame.to_ndarray(format="rgb24"),
                 stacked top to bottom in one RGB PNG

It also writes noise.json, noise.yuv.png and noise.rgb.png: random 8-bit
frames in the pixel formats, colour spaces and ranges Frame.RGB handles
(laid out as above, one frame per case), with PyAV's rgb24 conversion of
each; these test the conversion without libavcodec.

Run: python3 -m venv /tmp/avvenv && /tmp/avvenv/bin/pip install av numpy &&
/tmp/avvenv/bin/python gen.py
"""

import zlib
import io
import json
import os
import struct

import av
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

CLIPS = [
    # name, encoder, width, height, frames, pixel format, encoder options;
    # every clip has a keyframe every 6 frames.
    ("av1_48x32", "libsvtav1", 48, 32, 12, "yuv420p", {"preset": "8", "svtav1-params": "keyint=6"}),
    ("h264_48x32", "libx264", 48, 32, 12, "yuv420p", {"bframes": "2", "preset": "medium", "crf": "28"}),
    ("h264_34x18_full", "libx264", 34, 18, 12, "yuvj420p", {"bframes": "2", "crf": "24"}),
    # libx265 (4.1) corrupts its heap below 64 pixels across.
    ("hevc_64x32", "libx265", 64, 32, 12, "yuv420p",
     {"x265-params": "bframes=2:keyint=6:min-keyint=6:log-level=error"}),
]


def pattern(w, h, i):
    """A smooth, moving, colourful RGB image."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    t = i / 4.0
    r = 127 + 120 * np.sin(x / 7.0 + t)
    g = 127 + 120 * np.sin(y / 5.0 - t * 0.7)
    b = 127 + 120 * np.cos((x + y) / 9.0 + t * 1.3)
    cx, cy = (w / 2) + (w / 3) * np.cos(t), (h / 2) + (h / 3) * np.sin(t)
    disk = (x - cx) ** 2 + (y - cy) ** 2 < (min(w, h) / 5) ** 2
    r[disk], g[disk], b[disk] = 250, 30, 200
    return np.clip(np.stack([r, g, b], -1), 0, 255).astype(np.uint8)


def encode(name, encoder, w, h, n, pix_fmt, opts):
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        s = out.add_stream(encoder, rate=10, options=opts)
        s.width, s.height, s.pix_fmt = w, h, pix_fmt
        s.codec_context.gop_size = 6
        for i in range(n):
            f = av.VideoFrame.from_ndarray(pattern(w, h, i), format="rgb24")
            f = f.reformat(format=pix_fmt)
            f.pts = i
            for p in s.encode(f):
                out.mux(p)
        for p in s.encode(None):
            out.mux(p)
    return buf.getvalue()


def planes(f):
    """The Y, U and V rows of a decoded frame, each padded to the frame's width."""
    out = []
    for p in f.planes[:3]:
        a = np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)[:, : p.width]
        out.append(np.pad(a, ((0, 0), (0, f.width - p.width))))
    return np.concatenate(out)


def write_png(path, img):
    """Writes a uint8 array (rows, width[, 3]) as a PNG, each row filtered with
    PNG's "Up" filter (the difference from the row above)."""
    rows = img.reshape(img.shape[0], -1)
    up = np.diff(rows, axis=0, prepend=np.zeros((1, rows.shape[1]), np.uint8))
    raw = np.concatenate([np.full((rows.shape[0], 1), 2, np.uint8), up], 1).tobytes()
    colour = 2 if img.ndim == 3 else 0

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c))

    head = struct.pack(">IIBBBBB", img.shape[1], img.shape[0], 8, colour, 0, 0, 0)
    with open(path, "wb") as fp:
        fp.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head)
                 + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def demux(name, mp4):
    pkts, meta_pkts, yuv, rgb = [], [], [], []
    with av.open(io.BytesIO(mp4)) as c:
        s = c.streams.video[0]
        ctx = s.codec_context
        extradata = ctx.extradata or b""
        frames = []
        for p in c.demux(s):
            if p.size == 0:
                continue
            pkts.append(bytes(p))
            meta_pkts.append({"pts": p.pts, "dts": p.dts, "key": p.is_keyframe, "size": p.size})
        # Decode with a fresh decoder (the one FFmpeg picks for the codec id).
        dec = av.CodecContext.create(ctx.codec.name, "r")
        dec.extradata = extradata
        dec.thread_count = 1
        for b, m in zip(pkts, meta_pkts):
            pk = av.Packet(b)
            pk.pts, pk.dts = m["pts"], m["dts"]
            frames.extend(dec.decode(pk))
        frames.extend(dec.decode(None))
        for f in frames:
            yuv.append(planes(f))
            rgb.append(f.to_ndarray(format="rgb24"))
        f0 = frames[0]
        meta = {
            "codec": name.split("_")[0],  # the codec name NewDecoder takes
            "decoder": dec.codec.name,
            "width": f0.width,
            "height": f0.height,
            "pix_fmt": f0.format.name,
            "color_range": int(f0.color_range),
            "colorspace": int(f0.colorspace),
            "extradata": extradata.hex(),
            "frames": len(frames),
            "frame_pts": [f.pts for f in frames],
            "packets": meta_pkts,
            "pyav": av.__version__,
            "ffmpeg": ".".join(map(str, av.library_versions["libavcodec"])),
        }
    with open(os.path.join(HERE, name + ".pkts"), "wb") as fp:
        for b in pkts:
            fp.write(struct.pack("<I", len(b)))
            fp.write(b)
    with open(os.path.join(HERE, name + ".json"), "w") as fp:
        json.dump(meta, fp, indent=1)
        fp.write("\n")
    write_png(os.path.join(HERE, name + ".yuv.png"), np.concatenate(yuv))
    write_png(os.path.join(HERE, name + ".rgb.png"), np.concatenate(rgb))
    print(name, meta["decoder"], meta["pix_fmt"], meta["frames"], "frames",
          len(pkts), "packets", "range", meta["color_range"], "colorspace", meta["colorspace"])


NOISE = [
    # pixel format, AVColorSpace, AVColorRange (0 unspecified, 1 MPEG, 2 JPEG)
    ("yuv420p", 2, 0),
    ("yuv420p", 2, 2),
    ("yuvj420p", 2, 0),
    ("yuv420p", 1, 1),
    ("yuv420p", 1, 2),
    ("yuv420p", 0, 1),
    ("yuv420p", 4, 1),
    ("yuv420p", 5, 1),
    ("yuv420p", 6, 2),
    ("yuv420p", 7, 1),
    ("yuv420p", 9, 1),
    ("yuv422p", 2, 1),
    ("yuvj422p", 1, 0),
]


def noise():
    rng = np.random.default_rng(7)
    w, h = 38, 16  # not a multiple of 16 across: the SIMD converter's tail
    yuv, rgb, cases = [], [], []
    for fmt, cs, rng_ in NOISE:
        f = av.VideoFrame(w, h, fmt)
        for p in f.planes:
            a = np.zeros((p.height, p.line_size), np.uint8)
            a[:, : p.width] = rng.integers(0, 256, (p.height, p.width), dtype=np.uint8)
            p.update(a.tobytes())
        f.colorspace = cs
        f.color_range = rng_
        yuv.append(planes(f))
        rgb.append(f.to_ndarray(format="rgb24"))
        cases.append({"pix_fmt": fmt, "colorspace": cs, "color_range": rng_})
    meta = {"width": w, "height": h, "cases": cases, "pyav": av.__version__,
            "ffmpeg": ".".join(map(str, av.library_versions["libavcodec"]))}
    with open(os.path.join(HERE, "noise.json"), "w") as fp:
        json.dump(meta, fp, indent=1)
        fp.write("\n")
    write_png(os.path.join(HERE, "noise.yuv.png"), np.concatenate(yuv))
    write_png(os.path.join(HERE, "noise.rgb.png"), np.concatenate(rgb))


def main():
    for name, enc, w, h, n, pix_fmt, opts in CLIPS:
        demux(name, encode(name, enc, w, h, n, pix_fmt, opts))
    noise()


if __name__ == "__main__":
    main()
