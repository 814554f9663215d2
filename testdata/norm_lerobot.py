#!/usr/bin/env python3
"""Writes testdata/norm/lerobot_quantiles.json: LeRobot's per-episode
quantiles (lerobot 0.4.4, compute_stats.get_feature_stats, the histogram
rule of RunningQuantileStats) of a few columns, for norm's
TestLeRobotQuantile.

    pip install lerobot==0.4.4            # its own virtualenv
    python3 testdata/norm_lerobot.py      # from the repository root

CI never runs this script; the test only reads its output. Each case is a
float32 column (a state or action dimension of one episode) or the uint8
pixels of one channel of sampled frames, with lerobot's q01 … q99 of it
(images: before lerobot's division by 255).
"""

import json
import os

import numpy as np

from lerobot.datasets.compute_stats import get_feature_stats

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "norm", "lerobot_quantiles.json")
KEYS = ["q01", "q10", "q50", "q90", "q99"]


def main():
    rng = np.random.default_rng(38)
    columns = {
        "normal_40": rng.normal(size=40),
        "normal_1000": rng.normal(3.0, 10.0, size=1000),
        "exp_17": rng.exponential(size=17),
        "steps_9": np.array([0, 0, 0, 1, 1, 2, 5, 5, 5]),
        "constant_12": np.full(12, 0.25),
        "two_rows": np.array([-1.5, 4.0]),
        "one_row": np.array([7.125]),
        "large_offset_30": 1000.0 + rng.normal(size=30) * 1e-3,
    }
    cases = []
    for name, col in columns.items():
        col = col.astype(np.float32)
        stats = get_feature_stats(col.reshape(-1, 1), axis=0, keepdims=False)
        cases.append({"name": name, "kind": "float32", "values": [float(v) for v in col],
                      **{k: float(stats[k][0]) for k in KEYS}})
    images = {
        "uniform": rng.integers(0, 256, size=(5, 3, 6, 8)),
        "dark": rng.integers(0, 40, size=(3, 3, 4, 4)),
        "two_levels": np.where(rng.random((4, 3, 5, 5)) < 0.3, 17, 230),
    }
    for name, img in images.items():
        img = img.astype(np.uint8)
        stats = get_feature_stats(img, axis=(0, 2, 3), keepdims=True)
        for c in range(3):
            cases.append({"name": f"image_{name}_c{c}", "kind": "uint8",
                          "values": [int(v) for v in img[:, c].ravel()],
                          **{k: float(stats[k][0, c, 0, 0]) for k in KEYS}})
    with open(OUT, "w") as f:
        json.dump({"lerobot": "0.4.4", "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
