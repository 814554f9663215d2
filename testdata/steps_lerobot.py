#!/usr/bin/env python3
"""Writes testdata/steps/lerobot.json: what the real lerobot package returns
for step samples (issue 26) of the fixture lerobot/lerobot_av1, for the
parity test e2e/mount_steps_parity_test.go.

    pip install lerobot==0.4.4 numpy      # its own virtualenv
    python3 testdata/steps_lerobot.py     # from the repository root

CI never runs this script; the test only reads its output. See README.md.

For each spec of delta_timestamps, and for every frame index i of the
dataset (both splits), it records LeRobotDataset(root,
delta_timestamps=spec, video_backend="pyav")[i]: episode_index,
frame_index, task, each key's values at its deltas and its `<key>_is_pad`,
and each camera's frame at each delta as the sha256 of uint8 [H, W, 3]
(lerobot's float times 255, rounded: lossless for its k/255 values).
Indices i whose frame_index falls in the last drop_last steps of their
episode are left out (oxefs never makes them t; lerobot's
EpisodeAwareSampler drop_n_last_frames does the same).

What the spec's mix config asks of oxefs that lerobot does not do itself,
recorded as the contract (steps-spec.md) says:
- a key without deltas: lerobot returns the frame (or vector) at t and no
  `_is_pad`; the reference records it as deltas [0] with _is_pad [0];
- a camera slot the dataset does not map: zeros, image_mask 0, _is_pad all
  true (lerobot has no such thing);
- state and action are the dataset's own widths here (one dataset), masks
  all true; dataset_index 0.

Each spec carries the exact mix config (YAML, $DATA standing for the
absolute path of testdata/) that the test mounts. Frames are indices into a
table of sha256 digests. Floats are float32 values written as their
shortest float32 repr (parse them as float32).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np
import pyarrow.parquet as pq

from lerobot.datasets.lerobot_dataset import LeRobotDataset

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "lerobot", "lerobot_av1")
OUT = os.path.join(HERE, "steps", "lerobot.json")
NAME = "lr"
ROBOT = "synthetic_arm"
TOP, WRIST, SIDE = "observation.images.top", "observation.images.wrist", "observation.images.side"


def tenths(a: int, b: int) -> list[float]:
    """[a/10, (a+1)/10, ..., b/10] as the shortest decimals (0.3, not
    0.30000000000000004)."""
    return [round(k / 10, 6) for k in range(a, b + 1)]


# Each spec: the mix's slots (name, [h, w], the dataset's key or None, the
# deltas in seconds for lerobot or None for none, the YAML of the slot's
# deltas), state and action the same way, drop_last, layout, batch size.
SPECS = [
    {
        # History of 3 frames for all three cameras (two AV1 videos and the
        # PNG images in the data files), state history, a chunk of 16 steps
        # (as long as the longest episode: every t runs past the end).
        "name": "history3_chunk16",
        "batch_size": 8,
        "layout": "BFHWC",
        "drop_last": 0,
        "slots": [
            ("top", [48, 64], TOP, tenths(-2, 0), "seconds: [-0.2, -0.1, 0.0]"),
            ("wrist", [48, 64], WRIST, tenths(-2, 0), "seconds: [-0.2, -0.1, 0.0]"),
            ("side", [48, 64], SIDE, tenths(-2, 0), "seconds: [-0.2, -0.1, 0.0]"),
        ],
        "state": (tenths(-1, 0), "seconds: [-0.1, 0.0]"),
        "action": (tenths(0, 15), "seconds: [" + ", ".join(str(x) for x in tenths(0, 15)) + "]"),
    },
    {
        # Actions before and after t (steps in the config, seconds for
        # lerobot), state half a second either side, one camera at t only,
        # the last 2 steps of each episode dropped.
        "name": "around_t_drop2",
        "batch_size": 5,
        "layout": "BFHWC",
        "drop_last": 2,
        "slots": [("front", [48, 64], TOP, None, None)],
        "state": ([-0.5, 0.0, 0.5], "seconds: [-0.5, 0.0, 0.5]"),
        "action": (tenths(-3, 3), 'steps: "-3:4"'),
    },
    {
        # Two cameras at t (one video, one image column), a third slot the
        # dataset does not fill, channels-first frames, a chunk of 5, state
        # without deltas.
        "name": "two_cameras_empty_slot_bcfhw",
        "batch_size": 6,
        "layout": "BCFHW",
        "drop_last": 0,
        "slots": [
            ("primary", [48, 64], WRIST, [0.0], "seconds: [0.0]"),
            ("secondary", [48, 64], SIDE, [0.0], "steps: [0]"),
            ("empty", [32, 32], None, None, "steps: [0, 1]"),
        ],
        "state": (None, None),
        "action": (tenths(0, 4), 'steps: "0:5"'),
    },
]

FPS = 10


def f32(x) -> float:
    """A float32 as the float64 whose repr is its shortest float32 repr."""
    return float(np.format_float_positional(np.float32(x), unique=True, trim="-"))


class Digests:
    def __init__(self):
        self.index: dict[str, int] = {}
        self.table: list[str] = []

    def add(self, frame: np.ndarray) -> int:
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3, frame.shape
        h = hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest()
        if h not in self.index:
            self.index[h] = len(self.table)
            self.table.append(h)
        return self.index[h]


def to_uint8(chw) -> np.ndarray:
    """lerobot's float [C, H, W] in [0, 1] as uint8 [H, W, 3]."""
    x = chw.numpy().transpose(1, 2, 0) * 255.0
    r = np.rint(x)
    if np.abs(x - r).max() > 1e-3:
        sys.exit("a frame is not k/255: rounding would not be lossless")
    return r.astype(np.uint8)


def episode_ids(info: dict) -> dict[int, dict]:
    """episode_index -> the split, shard and record oxefs gives it (format/
    lerobot: a split's shards are the runs of its consecutive episodes that
    share a data file) and the episode id oxefs writes
    (dataset/split/episode_NNNNNN)."""
    t = pq.read_table(os.path.join(ROOT, "meta", "episodes", "chunk-000", "file-000.parquet"))
    eps = t.column("episode_index").to_pylist()
    files = list(zip(t.column("data/chunk_index").to_pylist(), t.column("data/file_index").to_pylist()))
    lengths = t.column("length").to_pylist()
    out = {}
    for split, rng in info["splits"].items():
        a, b = (int(x) for x in rng.split(":"))
        shard, record = -1, 0
        for k in range(a, b):
            if k == a or files[k] != files[k - 1]:
                shard, record = shard + 1, 0
            out[eps[k]] = {
                "episode_id": f"{NAME}/{split}/episode_{eps[k]:06d}",
                "split": split,
                "shard": shard,
                "record": record,
                "data_file": list(files[k]),
                "length": lengths[k],
            }
            record += 1
    return out


def spec_yaml(spec: dict) -> str:
    lines = [
        "seed: 6",
        f"batch_size: {spec['batch_size']}",
        "samples_per_episode: 0",
        f"layout: {spec['layout']}",
        "sample:",
        f"  drop_last: {spec['drop_last']}",
        "  cameras:",
    ]
    for name, size, _, _, dl in spec["slots"]:
        lines.append(f"    {name}: {{size: [{size[0]}, {size[1]}]" + (f", {dl}}}" if dl else "}"))
    for key in ("state", "action"):
        if spec[key][1]:
            lines.append(f"  {key}: {{{spec[key][1]}}}")
    cams = ", ".join(f"{n}: {k}" for n, _, k, _, _ in spec["slots"] if k)
    lines += [
        "datasets:",
        f"  - name: {NAME}",
        "    source: $DATA/lerobot/lerobot_av1",
        "    split: train",
        "    val_split: val",
        f"    cameras: {{{cams}}}",
        "    action_keys: [action]",
        "    state_key: observation.state",
        "    language_key: task",
        f"    robot: {ROBOT}",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    import lerobot

    with open(os.path.join(ROOT, "meta", "info.json")) as f:
        info = json.load(f)
    assert info["fps"] == FPS
    ids = episode_ids(info)
    digests = Digests()
    specs = []
    for spec in SPECS:
        dts = {}
        for _, _, key, secs, _ in spec["slots"]:
            if key and secs is not None:
                dts[key] = secs
        for key, name in (("observation.state", "state"), ("action", "action")):
            if spec[name][0] is not None:
                dts[key] = spec[name][0]
        ds = LeRobotDataset(f"oxefs/{NAME}", root=ROOT, delta_timestamps=dts, video_backend="pyav")
        resolved = resolve(spec, ds.delta_indices)
        samples = []
        for i in range(len(ds)):
            item = ds[i]
            ep = int(item["episode_index"])
            t = int(item["frame_index"])
            e = ids[ep]
            if t >= e["length"] - spec["drop_last"]:
                continue
            s = {
                "i": i,
                "episode_index": ep,
                "view": "batches" if e["split"] == "train" else "val/batches",
                "dataset_name": NAME,
                "dataset_index": 0,
                "episode_id": e["episode_id"],
                "frame_index": t,
                "task": item["task"],
                "robot": ROBOT,
                "images": {},
            }
            for name, size, key, secs, dl in spec["slots"]:
                if key is None:
                    T = len(yaml_steps(dl))
                    zero = digests.add(np.zeros((size[0], size[1], 3), np.uint8))
                    s["images"][name] = {"frames": [zero] * T, "is_pad": [1] * T, "mask": 0}
                    continue
                v = item[key]
                if secs is None:  # no deltas: the frame at t, never padding
                    v, pad = v.unsqueeze(0), [0]
                else:
                    if v.ndim == 3:  # lerobot squeezes a single delta
                        v = v.unsqueeze(0)
                    pad = [int(b) for b in item[f"{key}_is_pad"]]
                assert v.shape[1:] == (3, size[0], size[1]), (key, v.shape)
                s["images"][name] = {"frames": [digests.add(to_uint8(f)) for f in v], "is_pad": pad, "mask": 1}
            for key, name in (("observation.state", "state"), ("action", "action")):
                v = item[key].numpy()
                if spec[name][0] is None:
                    v, pad = v[None], [0]
                else:
                    pad = [int(b) for b in item[f"{key}_is_pad"]]
                s[name] = [[f32(x) for x in row] for row in v]
                s[f"{name}_is_pad"] = pad
                s[f"{name}_mask"] = [1] * v.shape[1]
            samples.append(s)
        specs.append(
            {
                "name": spec["name"],
                "yaml": spec_yaml(spec),
                "layout": spec["layout"],
                "batch_size": spec["batch_size"],
                "delta_timestamps": dts,
                "drop_last": spec["drop_last"],
                "datasets": {NAME: {"dataset_index": 0, "fps": FPS, "cameras": {n: k for n, _, k, _, _ in spec["slots"] if k}, "deltas": resolved}},
                "slots": [{"name": n, "size": sz, "key": k} for n, sz, k, _, _ in spec["slots"]],
                "state_dim": 6,
                "action_dim": 7,
                "samples": samples,
            }
        )
    doc = {
        "generator": "testdata/steps_lerobot.py",
        "python": sys.version.split()[0],
        "lerobot_version": getattr(lerobot, "__version__", ""),
        "numpy_version": np.__version__,
        "read": "LeRobotDataset('oxefs/lr', root=testdata/lerobot/lerobot_av1, delta_timestamps=spec, video_backend='pyav')[i]",
        "episodes": {str(k): v for k, v in sorted(ids.items())},
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


def yaml_steps(dl: str) -> list[int]:
    """The steps of YAML deltas written as `steps: [a, b]` or as a slice
    `steps: "start:stop"`."""
    if dl.startswith('steps: "'):
        a, b = dl[len('steps: "') : -1].split(":")
        return list(range(int(a), int(b)))
    assert dl.startswith("steps: ["), dl
    return [int(x) for x in dl[len("steps: [") : -1].split(",")]


def resolve(spec: dict, delta_indices: dict | None) -> dict:
    """The dataset's deltas in steps, as info.json lists them: lerobot's
    own delta_indices (round(d * fps)) for deltas given in seconds, the
    config's steps otherwise ([0] where it gives none). Slots the dataset
    does not map are left out. Deltas given both ways must agree."""
    di = delta_indices or {}

    def one(key, secs, dl):
        steps = yaml_steps(dl) if dl and dl.startswith("steps:") else None
        if secs is not None:
            if steps is not None and steps != di[key]:
                sys.exit(f"{spec['name']} {key}: the config's steps {steps} are not lerobot's {di[key]}")
            return di[key]
        return steps if steps is not None else [0]

    out = {"slots": {}}
    for name, _, key, secs, dl in spec["slots"]:
        if key:
            out["slots"][name] = one(key, secs, dl)
    out["state"] = one("observation.state", *spec["state"])
    out["action"] = one("action", *spec["action"])
    return out


if __name__ == "__main__":
    sys.exit(main())
