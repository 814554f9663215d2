#!/usr/bin/env python3
"""Writes testdata/steps/rlds.json: the step samples (issue 26) of two RLDS
fixtures, computed with numpy from what tensorflow_datasets reads, for the
parity test e2e/mount_steps_parity_test.go.

    pip install tensorflow-cpu tensorflow-datasets numpy
    python3 testdata/steps_rlds.py          # from the repository root

CI never runs this script; the test only reads its output. See README.md.

The datasets are read with tfds.builder_from_directory(...).as_dataset
(shuffle_files=False), never with oxefs's reader. Images are left encoded
by TFDS (SkipDecoding) and decoded here as the RLDS parity tests do:
tf.io.decode_image(channels=3), tf.image.resize(bilinear, antialias=False),
a truncating cast to uint8. The step-sample semantics are the contract's
(LeRobot's delta_timestamps): a sample is (dataset, episode, t) with
t in [0, L - drop_last); for a delta d the index is clamp(t + d, 0, L - 1)
and the position is padding when t + d is outside [0, L). A camera slot a
dataset does not map is zeros, image_mask 0, its _is_pad all true. State
and action keys are concatenated in config order and zero-padded to the
mix's widest, with masks for the dims a dataset has.

Each spec carries the exact mix config (YAML, $DATA standing for the
absolute path of testdata/) that the test mounts. Frames are recorded as
indices into a table of sha256 digests of uint8 [H, W, 3] frames. Floats
are float32 values written as their shortest float32 repr (parse them as
float32).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "steps", "rlds.json")

# The mix's datasets, in config order (dataset_index counts every entry,
# weight 0 included). Each gives its source, the image key of each slot it
# fills, its action keys, state key and language key.
DATASETS = [
    {
        "name": "bridge",
        "dir": "datasets/tiny_bridge/1.0.0",
        "cameras": {"primary": "steps/observation/image", "wrist": "steps/observation/wrist_image"},
        # Two of the three action parts: 6 dims, one fewer than the mix's
        # widest (kuka's 7), so action_mask has a false column.
        "action_keys": ["steps/action/world_vector", "steps/action/rotation_delta"],
        "state_key": "steps/observation/state",
        "language_key": "steps/language_instruction",
    },
    {
        # Weight 0: never opened, but it holds dataset_index 1.
        "name": "table",
        "dir": "datasets/tiny_table/1.0.0",
        "cameras": {"primary": "steps/observation/rgb"},
        "action_keys": ["steps/action"],
        "weight": 0,
    },
    {
        "name": "kuka",
        "dir": "datasets/tiny_kuka/1.0.0",
        "cameras": {"primary": "steps/observation/image"},  # no wrist camera
        "action_keys": ["steps/action"],
        "state_key": "steps/observation/joint_bytes",  # float32[4] of the widest 7
        "language_key": "episode_metadata/language_instruction",
    },
]

SPECS = [
    {
        # Two cameras of different sizes with one step of history, state
        # history, a chunk of 6 (longer than kuka's episode of 4 steps and
        # bridge's of 4).
        "name": "two_cameras_chunk6",
        "batch_size": 8,
        "layout": "BFHWC",
        "drop_last": 0,
        "slots": [("primary", [48, 64], [-1, 0]), ("wrist", [32, 32], [-1, 0])],
        "slots_yaml": {"primary": "steps: [-1, 0]", "wrist": "steps: [-1, 0]"},
        "state": [-1, 0],
        "state_yaml": "steps: [-1, 0]",
        "action": [0, 1, 2, 3, 4, 5],
        "action_yaml": 'steps: "0:6"',
    },
    {
        # Past actions (negative deltas), a frame ahead, frames channels
        # first, and the last 2 steps of each episode dropped.
        "name": "past_actions_bcfhw",
        "batch_size": 7,
        "layout": "BCFHW",
        "drop_last": 2,
        "slots": [("primary", [40, 40], [-2, 0, 1]), ("wrist", [24, 32], [0])],
        "slots_yaml": {"primary": "steps: [-2, 0, 1]", "wrist": None},
        "state": [0, 3],
        "state_yaml": "steps: [0, 3]",
        "action": [-3, -2, -1, 0, 1],
        "action_yaml": 'steps: "-3:2"',
    },
]

SPLIT = "train"


def f32(x) -> float:
    """A float32 as the float64 whose repr is its shortest float32 repr."""
    return float(np.format_float_positional(np.float32(x), unique=True, trim="-"))


class Digests:
    """The table of frame digests: each frame is stored once."""

    def __init__(self):
        self.index: dict[str, int] = {}
        self.table: list[str] = []

    def add(self, frame: np.ndarray) -> int:
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
        h = hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest()
        if h not in self.index:
            self.index[h] = len(self.table)
            self.table.append(h)
        return self.index[h]


def read_episodes(d: dict) -> list[dict]:
    """Every episode of the split in file order, as numpy: steps, images
    (encoded bytes per step), state and action per step, language per
    step, and the episode id oxefs writes (dataset/split/shard/record)."""
    builder = tfds.builder_from_directory(os.path.join(HERE, d["dir"]))
    image_keys = sorted(set(d["cameras"].values()))
    decoders = {"steps": {"observation": {k.split("/")[-1]: tfds.decode.SkipDecoding() for k in image_keys}}}
    ds = builder.as_dataset(split=SPLIT, shuffle_files=False, decoders=decoders)
    shard_lengths = builder.info.splits[SPLIT].shard_lengths
    where = [(s, r) for s, n in enumerate(shard_lengths) for r in range(n)]
    out = []
    for k, ep in enumerate(ds):
        steps = list(ep["steps"])
        L = len(steps)

        def leaf(step, key):
            v = step
            for part in key.split("/")[1:]:
                v = v[part]
            return v.numpy()

        def meta(key):
            v = ep
            for part in key.split("/"):
                v = v[part]
            return v.numpy()

        e = {"steps": L, "images": {}}
        for key in image_keys:
            e["images"][key] = [leaf(s, key) for s in steps]
        e["action"] = np.stack(
            [np.concatenate([np.asarray(leaf(s, a), dtype=np.float32).reshape(-1) for a in d["action_keys"]]) for s in steps]
        )
        if d.get("state_key"):
            e["state"] = np.stack([np.asarray(leaf(s, d["state_key"]), dtype=np.float32).reshape(-1) for s in steps])
        lk = d.get("language_key", "")
        if lk.startswith("steps/"):
            e["language"] = [leaf(s, lk).decode("utf-8") for s in steps]
        elif lk:
            e["language"] = [meta(lk).decode("utf-8")] * L
        else:
            e["language"] = [""] * L
        shard, record = where[k]
        e["episode_id"] = f"{d['name']}/{SPLIT}/{shard}/{record}"
        e["tfds_episode_id"] = int(meta("episode_metadata/episode_id"))
        out.append(e)
    if len(out) != len(where):
        sys.exit(f"{d['name']}: {len(out)} episodes read, shard lengths say {len(where)}")
    check_order(d, out)
    return out


def check_order(d: dict, eps: list[dict]) -> None:
    """The episodes are in the shard/record order of manifest.json."""
    with open(os.path.join(HERE, "manifest.json")) as f:
        m = json.load(f)
    name = os.path.basename(os.path.dirname(d["dir"]))
    want = [r["episode_id"] for sh in m["datasets"][name]["splits"][SPLIT]["shards"] for r in sh["records"]]
    got = [e["tfds_episode_id"] for e in eps]
    if got != want:
        sys.exit(f"{name}: episodes in order {got}, manifest.json has {want}")


def clamp(t: int, deltas: list[int], L: int) -> tuple[list[int], list[int]]:
    idx = [min(max(t + dd, 0), L - 1) for dd in deltas]
    pad = [int(t + dd < 0 or t + dd >= L) for dd in deltas]
    return idx, pad


class Frames:
    """Decoded and resized frames, each once."""

    def __init__(self, digests: Digests):
        self.digests = digests
        self.memo: dict = {}

    def get(self, ep_key, encoded: bytes, size) -> int:
        k = (ep_key, hashlib.sha256(encoded).hexdigest(), tuple(size))
        if k not in self.memo:
            img = tf.io.decode_image(encoded, channels=3)
            resized = tf.cast(tf.image.resize(img, size, method="bilinear", antialias=False), tf.uint8)
            self.memo[k] = self.digests.add(resized.numpy())
        return self.memo[k]


def spec_yaml(spec: dict) -> str:
    lines = [
        "seed: 5",
        f"batch_size: {spec['batch_size']}",
        "samples_per_episode: 0",
        f"layout: {spec['layout']}",
        "sample:",
        f"  drop_last: {spec['drop_last']}",
        "  cameras:",
    ]
    for name, size, _ in spec["slots"]:
        dl = spec["slots_yaml"][name]
        lines.append(f"    {name}: {{size: [{size[0]}, {size[1]}]" + (f", {dl}}}" if dl else "}"))
    lines.append(f"  state: {{{spec['state_yaml']}}}")
    lines.append(f"  action: {{{spec['action_yaml']}}}")
    lines.append("datasets:")
    for d in DATASETS:
        lines.append(f"  - name: {d['name']}")
        lines.append(f"    source: $DATA/{d['dir']}")
        lines.append(f"    split: {SPLIT}")
        lines.append(f"    weight: {d.get('weight', 'proportionate')}")
        cams = ", ".join(f"{s}: {k}" for s, k in d["cameras"].items())
        lines.append(f"    cameras: {{{cams}}}")
        lines.append(f"    action_keys: [{', '.join(d['action_keys'])}]")
        if d.get("state_key"):
            lines.append(f"    state_key: {d['state_key']}")
        if d.get("language_key"):
            lines.append(f"    language_key: {d['language_key']}")
    return "\n".join(lines) + "\n"


def main() -> int:
    digests = Digests()
    frames = Frames(digests)
    episodes = {d["name"]: read_episodes(d) for d in DATASETS if d.get("weight", 1) != 0}
    S = max(e["state"].shape[1] for eps in episodes.values() for e in eps if "state" in e)
    A = max(e["action"].shape[1] for eps in episodes.values() for e in eps)
    specs = []
    for spec in SPECS:
        samples = []
        for di, d in enumerate(DATASETS):
            if d["name"] not in episodes:
                continue
            for e in episodes[d["name"]]:
                L = e["steps"]
                for t in range(L - spec["drop_last"]):
                    s = {
                        "view": "batches",
                        "dataset_name": d["name"],
                        "dataset_index": di,
                        "episode_id": e["episode_id"],
                        "frame_index": t,
                        "task": e["language"][t],
                        "robot": "",
                        "images": {},
                    }
                    for name, size, deltas in spec["slots"]:
                        idx, pad = clamp(t, deltas, L)
                        key = d["cameras"].get(name)
                        if key is None:
                            zero = digests.add(np.zeros((size[0], size[1], 3), np.uint8))
                            s["images"][name] = {"frames": [zero] * len(deltas), "is_pad": [1] * len(deltas), "mask": 0}
                            continue
                        fr = [frames.get((d["name"], e["episode_id"], key), e["images"][key][i], size) for i in idx]
                        s["images"][name] = {"frames": fr, "is_pad": pad, "mask": 1}
                    idx, pad = clamp(t, spec["state"], L)
                    st = np.zeros((len(idx), S), np.float32)
                    n = 0
                    if "state" in e:
                        n = e["state"].shape[1]
                        st[:, :n] = e["state"][idx]
                    s["state"] = [[f32(v) for v in row] for row in st]
                    s["state_is_pad"] = pad
                    s["state_mask"] = [int(j < n) for j in range(S)]
                    idx, pad = clamp(t, spec["action"], L)
                    ac = np.zeros((len(idx), A), np.float32)
                    n = e["action"].shape[1]
                    ac[:, :n] = e["action"][idx]
                    s["action"] = [[f32(v) for v in row] for row in ac]
                    s["action_is_pad"] = pad
                    s["action_mask"] = [int(j < n) for j in range(A)]
                    samples.append(s)
        specs.append(
            {
                "name": spec["name"],
                "yaml": spec_yaml(spec),
                "layout": spec["layout"],
                "batch_size": spec["batch_size"],
                "slots": [{"name": n, "size": sz, "deltas": dl} for n, sz, dl in spec["slots"]],
                "state_deltas": spec["state"],
                "action_deltas": spec["action"],
                "drop_last": spec["drop_last"],
                "datasets": {
                    d["name"]: {
                        "dataset_index": di,
                        "cameras": d["cameras"],
                        "deltas": {
                            "slots": {n: dl for n, _, dl in spec["slots"] if n in d["cameras"]},
                            "state": spec["state"],
                            "action": spec["action"],
                        },
                    }
                    for di, d in enumerate(DATASETS)
                    if d["name"] in episodes
                },
                "state_dim": S,
                "action_dim": A,
                "samples": samples,
            }
        )
    doc = {
        "generator": "testdata/steps_rlds.py",
        "python": sys.version.split()[0],
        "tensorflow_version": tf.__version__,
        "tensorflow_datasets_version": tfds.__version__,
        "numpy_version": np.__version__,
        "read": f"tfds.builder_from_directory(dir).as_dataset(split={SPLIT!r}, shuffle_files=False), images SkipDecoding",
        "decode": "tf.io.decode_image(encoded, channels=3)",
        "resize": "tf.cast(tf.image.resize(img, size, method='bilinear', antialias=False), tf.uint8)",
        "frames_note": "images.<slot>.frames index the table `frames`: sha256 of uint8 [H, W, 3] C-order bytes",
        "floats_note": "float32 values as their shortest float32 repr: parse as float32",
        "specs": specs,
        "frames": digests.table,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{OUT}: {sum(len(s['samples']) for s in specs)} samples, {len(digests.table)} frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
