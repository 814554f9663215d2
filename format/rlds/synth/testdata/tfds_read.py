#!/usr/bin/env python3
"""Reads synthetic datasets back with tensorflow_datasets itself.

Usage: python3 tfds_read.py DATASET_DIR...   (each DIR/<name>/1.0.0)

For every split of every dataset it iterates every episode and every step
through tfds.builder_from_directory(dir).as_dataset(split), which decodes
every feature (JPEG/PNG frames included), and prints one JSON object:
{name: {split: {"episodes": n, "steps": [..per episode..],
                "features": {key: [dtype, shape of one step]},
                "first_language": str, "first_episode_id": int}}}
It fails (non-zero exit, traceback) on anything TFDS cannot read.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402

tf.config.set_visible_devices([], "GPU")


def flatten(prefix, tree, out):
    for k, v in tree.items():
        key = f"{prefix}/{k}" if prefix else k
        if isinstance(v, dict):
            flatten(key, v, out)
        else:
            out[key] = v


def describe(value):
    """Returns (dtype, shape, python value) of a decoded feature."""
    v = value.numpy()  # decodes images, texts, tensors
    if isinstance(v, bytes):
        return "string", [], v.decode()
    arr = np.asarray(v)
    return str(arr.dtype), list(arr.shape), arr


def main(dirs):
    report = {}
    for d in dirs:
        builder = tfds.builder_from_directory(d)
        name = builder.info.name
        report[name] = {}
        for split in builder.info.splits.keys():
            ds = builder.as_dataset(split=split, shuffle_files=False)
            entry = {"episodes": 0, "steps": [], "features": {}}
            for episode in ds:
                meta = {}
                flatten("episode_metadata", {k: v for k, v in episode["episode_metadata"].items()}, meta)
                n = 0
                for step in episode["steps"]:
                    flat = {}
                    flatten("steps", step, flat)
                    for key, value in flat.items():
                        dtype, shape, arr = describe(value)
                        entry["features"][key] = [dtype, shape]
                        first = n == 0 and entry["episodes"] == 0
                        if first and dtype == "string":
                            entry["first_language"] = arr
                        if first and key.endswith("/instruction"):
                            entry["first_language"] = "".join(chr(c) for c in arr[arr != 0])
                    n += 1
                if entry["episodes"] == 0:
                    entry["first_episode_id"] = int(meta["episode_metadata/episode_id"].numpy())
                    for key, value in meta.items():
                        dtype, shape, _ = describe(value)
                        entry["features"][key] = [dtype, shape]
                entry["steps"].append(n)
                entry["episodes"] += 1
            report[name][split] = entry
    json.dump(report, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
