"""Resizes the frames lerobot decoded (testdata/lerobot/expected/*.npy,
written by generate_lerobot.py) the way the RLDS parity tests' frames are:

    tf.cast(tf.image.resize(img, [H, W], method="bilinear", antialias=False), tf.uint8)

    pip install tensorflow-cpu numpy
    python3 testdata/resize_lerobot_expected.py   # from the repository root

Writes expected/<name>_HxW.npy next to each frame, for every size in SIZES.
"""

from pathlib import Path

import numpy as np
import tensorflow as tf

DIR = Path("testdata/lerobot/expected")
SIZES = [(32, 40)]  # (H, W): 48x64 shrunk, as batches usually are


def main():
    for f in sorted(DIR.glob("*.npy")):
        if "_" in f.stem and "x" in f.stem.rsplit("_", 1)[-1] and f.stem.rsplit("_", 1)[-1].replace("x", "").isdigit():
            continue  # a resized frame
        img = np.load(f)
        for h, w in SIZES:
            out = tf.cast(tf.image.resize(img, [h, w], method="bilinear", antialias=False), tf.uint8).numpy()
            np.save(DIR / f"{f.stem}_{h}x{w}.npy", out)


if __name__ == "__main__":
    main()
