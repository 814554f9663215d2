#!/usr/bin/env python3
"""Generate the small MP4 files and JSON sidecars used by the mp4 tests.

Each clip is a moving gradient (so frames differ), 64x48 at 30 fps, written
by PyAV (FFmpeg's mov muxer) the way LeRobot writes episode videos. Each
sidecar records what PyAV's demuxer (FFmpeg's mov demuxer) reports for every
packet of the video stream; the Go tests compare the parser against it.

Usage: python gen.py [outdir]   (needs `pip install av numpy`)
"""

import json
import os
import sys
from fractions import Fraction

import av
import numpy as np

W, H, FPS = 64, 48, 30


def frames(n, phase=0):
    y, x = np.mgrid[0:H, 0:W]
    for i in range(n):
        t = i + phase
        r = (x * 4 + t * 9) % 256
        g = (y * 5 + t * 5) % 256
        b = ((x + y) * 2 + t * 13) % 256
        rgb = np.stack([r, g, b], axis=-1).astype(np.uint8)
        yield av.VideoFrame.from_ndarray(rgb, format="rgb24")


def configure(ctx, codec):
    ctx.width, ctx.height = W, H
    ctx.pix_fmt = "yuv420p"
    ctx.time_base = Fraction(1, FPS)
    ctx.framerate = Fraction(FPS, 1)
    if codec == "libsvtav1":
        ctx.gop_size = 2
        ctx.options = {"preset": "12", "crf": "30"}
    elif codec == "libx264":
        ctx.gop_size = 8
        ctx.max_b_frames = 2
        ctx.options = {"preset": "medium", "bf": "2", "g": "8"}
    elif codec == "libx265":
        ctx.gop_size = 8
        ctx.options = {"preset": "fast", "x265-params": "log-level=error:bframes=2:keyint=8"}


def encode(path, codec, n, options=None, first_pts=0):
    with av.open(path, "w", options=options or {}) as out:
        s = out.add_stream(codec, rate=FPS)
        configure(s.codec_context, codec)
        for i, fr in enumerate(frames(n)):
            fr.pts = first_pts + i
            for p in s.encode(fr):
                out.mux(p)
        for p in s.encode(None):
            out.mux(p)


def encode_concat(path, codec, counts):
    """Two episodes encoded separately, then remuxed into one stream with
    shifted timestamps, as LeRobot v3 concatenates episode videos."""
    with av.open(path, "w") as out:
        s = out.add_stream(codec, rate=FPS)
        configure(s.codec_context, codec)
        offset = 0
        for ep, n in enumerate(counts):
            enc = av.CodecContext.create(codec, "w")
            configure(enc, codec)
            if ep == 0:
                s.codec_context.extradata = enc.extradata
            pkts = []
            for fr in frames(n, phase=ep * 100):
                pkts += enc.encode(fr)
            pkts += enc.encode(None)
            for p in pkts:
                p.pts += offset
                p.dts += offset
                p.time_base = enc.time_base
                p.stream = s
                out.mux(p)
            offset += n


def sidecar(path):
    with av.open(path) as inp:
        s = inp.streams.video[0]
        pkts = []
        for p in inp.demux(s):
            if p.size == 0:
                continue  # the flush packet at the end
            pkts.append(
                {
                    "pts": p.pts,
                    "dts": p.dts,
                    "size": p.size,
                    "key": bool(p.is_keyframe),
                    "pos": p.pos,
                }
            )
        ctx = s.codec_context
        return {
            "codec": ctx.name,
            "codec_tag": ctx.codec_tag,
            "width": ctx.width,
            "height": ctx.height,
            "time_base": [s.time_base.numerator, s.time_base.denominator],
            "extradata": (ctx.extradata or b"").hex(),
            "packets": pkts,
        }


def write_json(side, f):
    """Writes the sidecar with one packet per line."""
    pkts = side.pop("packets")
    head = json.dumps(side, indent=1)
    f.write(head[: -len("\n}")] + ',\n "packets": [\n')
    f.write(",\n".join("  " + json.dumps(p) for p in pkts))
    f.write("\n ]\n}\n")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    jobs = {
        "av1.mp4": lambda p: encode(p, "libsvtav1", 24),
        "av1_faststart.mp4": lambda p: encode(p, "libsvtav1", 24, {"movflags": "faststart"}),
        "av1_concat.mp4": lambda p: encode_concat(p, "libsvtav1", [24, 16]),
        # Frames start at pts 5: the muxer writes an initial empty edit.
        "av1_delayed.mp4": lambda p: encode(p, "libsvtav1", 12, first_pts=5),
        "h264_bframes.mp4": lambda p: encode(p, "libx264", 24),
        # ctts version 1 with negative offsets instead of an edit list shift.
        "h264_negcts.mp4": lambda p: encode(p, "libx264", 24, {"movflags": "negative_cts_offsets"}),
        "hevc.mp4": lambda p: encode(p, "libx265", 24),
    }
    for name, make in jobs.items():
        path = os.path.join(outdir, name)
        make(path)
        with open(path[: -len(".mp4")] + ".json", "w") as f:
            write_json(sidecar(path), f)
        print(name, os.path.getsize(path))


if __name__ == "__main__":
    main()
