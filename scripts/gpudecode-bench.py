#!/usr/bin/env python3
"""Time oxefs._decode.decode_frames (decode: gpu's transform) per frame.

    python3 scripts/gpudecode-bench.py [--device cpu|cuda] [--batch 64] [--reps 5]

Batches of JPEGs (encoded here by torchvision: smooth shading, edges and
noise at quality 90) of 256×256 and 480×640, each to 256×256 squash,
without augmentation and with an Octo-like row per frame (a 0.9 crop at a
random place, ±5° and 5% shift, brightness, contrast, saturation, hue in
random order), on the given device. Prints the best of --reps runs per
frame, the JPEG decode alone, and the torch threads used. A measurement,
never a test.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
from torchvision.io import encode_jpeg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from oxefs import _decode  # noqa: E402


def jpegs(n, h, w, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.linspace(0, 1, h)[:, None]
    x = torch.linspace(0, 1, w)[None, :]
    out = []
    for i in range(n):
        planes = []
        for c in range(3):
            v = 120 + 100 * torch.sin(6 * x + i + c) * torch.cos(5 * y) + 20 * torch.randn(h, w, generator=g)
            v = v + 30 * (((x * w // 24) + (y * h // 24)) % 2) * (c - 1)
            planes.append(v.clamp(0, 255))
        out.append(encode_jpeg(torch.stack(planes).to(torch.uint8), quality=90).numpy().tobytes())
    return out


def octo_rows(n, seed):
    rng = np.random.default_rng(seed)
    rows = np.zeros((n, len(_decode.COLUMNS)), np.float32)
    rows[:, 0:2] = 0.9
    rows[:, 2:4] = rng.random((n, 2))
    rows[:, 4] = rng.uniform(-5, 5, n)
    rows[:, 5:7] = rng.uniform(-0.05, 0.05, (n, 2))
    rows[:, 7:10] = rng.uniform(0.8, 1.2, (n, 3))
    rows[:, 10] = rng.uniform(-0.05, 0.05, n)
    rows[:, 11] = 1
    rows[:, 12:17] = -1
    for k in range(n):
        rows[k, 12:16] = rng.permutation(4)
    return rows


def best(reps, fn, sync):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    decoders = ["turbojpeg", "torchvision"] if dev.type == "cpu" and _decode.turbojpeg_available() else ["auto"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {dev}, batch {a.batch}")
    for h, w in [(256, 256), (480, 640)]:
        js = jpegs(a.batch, h, w, 1)
        for name, rows in [("none", None), ("octo-like", octo_rows(a.batch, 2))]:
            for dec in decoders:
                t = best(a.reps, lambda: _decode.decode_frames(js, rows, 256, 256, "squash", dev, dec), sync)
                keep = [True] * len(js)
                d = best(a.reps, lambda: _decode._decode_all(torch, js, keep, dev, dec), sync)
                print(f"{h}x{w} -> 256x256 {name:9s} {dec:11s} {t / a.batch * 1e3:6.2f} ms/frame "
                      f"(decode {d / a.batch * 1e3:5.2f}, the rest {(t - d) / a.batch * 1e3:5.2f})")


if __name__ == "__main__":
    main()
