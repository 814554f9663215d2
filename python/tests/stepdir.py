"""A step-mode batch directory laid out with numpy, as the contract says.

The files a step-mode mount serves (issue 26: info.json with "sample",
batches/NNNNNN.<array>.npy, NNNNNN.json), written here from a small
simulated mix, so that the package's step mode is tested on any directory
with that layout, mount or not. Samples follow LeRobot's delta_timestamps
semantics: index clamp(t+d, 0, L-1), _is_pad where t+d is outside the
episode; a slot the dataset lacks is zeros, image_mask 0, _is_pad true.
"""

import json
import os

import numpy as np

# The simulated mix: two datasets (the second entry of the config has
# weight 0, so the second dataset's index is 2); "bravo" has no wrist
# camera and narrower state and action.
DATASETS = [
    {"name": "alpha", "index": 0, "cameras": {"primary": "observation.images.top", "wrist": "observation.images.wrist"},
     "state_dim": 6, "action_dim": 5, "lengths": [12, 9, 15], "robot": "arm_a"},
    {"name": "bravo", "index": 2, "cameras": {"primary": "steps/observation/image"},
     "state_dim": 4, "action_dim": 3, "lengths": [7, 20], "robot": "arm_b"},
]


def _image(ds, episode, step, size, slot):
    """A frame that tells its dataset, episode, step and slot apart."""
    h, w = size
    y, x = np.mgrid[0:h, 0:w]
    base = 37 * ds["index"] + 11 * episode + 5 * step + 71 * slot
    return np.stack([(base + x) % 256, (base + y) % 256, np.full((h, w), (step * 13) % 256)], axis=-1).astype(np.uint8)


def _state(ds, episode, step):
    return np.array([np.sin(0.3 * step + i + episode) for i in range(ds["state_dim"])], np.float32)


def _action(ds, episode, step):
    return np.array([np.cos(0.2 * step + 0.5 * i + episode) + 0.1 * ds["index"] for i in range(ds["action_dim"])], np.float32)


def _sample(rng, drop_last):
    ds = DATASETS[rng.integers(len(DATASETS))]
    episode = int(rng.integers(len(ds["lengths"])))
    length = ds["lengths"][episode]
    t = int(rng.integers(length - drop_last))
    return ds, episode, length, t


def _at(t, deltas, length):
    """Clamped indices and pad flags of t's deltas in an episode of length."""
    idx = [min(max(t + d, 0), length - 1) for d in deltas]
    pad = [not 0 <= t + d < length for d in deltas]
    return idx, np.array(pad, np.bool_)


def write(root, batch_size=4, num_batches=3, val_batches=0, layout="BFHWC", meta="full", seed=0,
          slots=(("primary", (16, 16), [-1, 0]), ("wrist", (8, 12), [-1, 0])),
          state_deltas=(-1, 0), action_deltas=tuple(range(-1, 7)), drop_last=0, with_state=True, nan_action=False):
    """Lay out a step-mode directory under root; returns (info, {"train":
    [batches], "val": [batches]}) where each batch is the dict the package
    should give: arrays by name, and the .json's strings when meta says so."""
    rng = np.random.default_rng(seed)
    state_dim = max(d["state_dim"] for d in DATASETS) if with_state else 0
    action_dim = max(d["action_dim"] for d in DATASETS)
    b = batch_size
    specs = []
    for name, (h, w), deltas in slots:
        shape = [b, len(deltas), h, w, 3] if layout == "BFHWC" else [b, 3, len(deltas), h, w]
        specs.append((f"observation.images.{name}", "|u1", shape))
    specs += [(f"observation.images.{name}_is_pad", "|b1", [b, len(deltas)]) for name, _, deltas in slots]
    specs.append(("image_mask", "|b1", [b, len(slots)]))
    if state_dim:
        specs += [("observation.state", "<f4", [b, len(state_deltas), state_dim]),
                  ("observation.state_is_pad", "|b1", [b, len(state_deltas)]), ("state_mask", "|b1", [b, state_dim])]
    specs += [("action", "<f4", [b, len(action_deltas), action_dim]),
              ("action_is_pad", "|b1", [b, len(action_deltas)]), ("action_mask", "|b1", [b, action_dim]),
              ("dataset_index", "<i8", [b]), ("frame_index", "<i8", [b]), ("sample_is_pad", "|b1", [b])]
    arrays = [{"name": n, "file": n + ".npy", "dtype": dt, "shape": shape} for n, dt, shape in specs]

    def batch():
        out = {n: np.zeros(shape, np.dtype(dt)) for n, dt, shape in specs}
        strings = {"dataset_name": [], "episode_id": [], "task": [], "robot": [], "index": []}
        for j in range(b):
            ds, episode, length, t = _sample(rng, drop_last)
            for k, (name, size, deltas) in enumerate(slots):
                idx, pad = _at(t, deltas, length)
                if name not in ds["cameras"]:
                    out[f"observation.images.{name}_is_pad"][j] = True
                    continue
                out["image_mask"][j, k] = True
                out[f"observation.images.{name}_is_pad"][j] = pad
                frames = np.stack([_image(ds, episode, i, size, k) for i in idx])  # [T, H, W, 3]
                out[f"observation.images.{name}"][j] = frames if layout == "BFHWC" else frames.transpose(3, 0, 1, 2)
            if state_dim:
                idx, pad = _at(t, state_deltas, length)
                out["observation.state"][j, :, : ds["state_dim"]] = [_state(ds, episode, i) for i in idx]
                out["observation.state_is_pad"][j] = pad
                out["state_mask"][j, : ds["state_dim"]] = True
            idx, pad = _at(t, action_deltas, length)
            out["action"][j, :, : ds["action_dim"]] = [_action(ds, episode, i) for i in idx]
            out["action_is_pad"][j] = pad
            out["action_mask"][j, : ds["action_dim"]] = True
            out["dataset_index"][j], out["frame_index"][j] = ds["index"], t
            strings["dataset_name"].append(ds["name"])
            strings["episode_id"].append(f"{ds['name']}/train/shard-0/{episode}")
            strings["task"].append(f"task {episode} of {ds['name']}" if ds["index"] == 0 else "")
            strings["robot"].append(ds["robot"])
            # the frame's index across its dataset: dataset 0 numbers its
            # frames as LeRobot does, the others (RLDS) do not
            strings["index"].append(sum(ds["lengths"][:episode]) + t if ds["index"] == 0 else -1)
        if nan_action:
            out["action"][0, 0, 0] = np.nan
        if meta == "dataset":
            strings = {"dataset_name": strings["dataset_name"]}
        return out, (None if meta == "none" else strings)

    want = {"train": [], "val": []}
    for view, n, sub in (("train", num_batches, "batches"), ("val", val_batches, os.path.join("val", "batches"))):
        if n == 0:
            continue
        d = os.path.join(root, sub)
        os.makedirs(d)
        for i in range(n):
            out, strings = batch()
            for a in arrays:
                np.save(os.path.join(d, f"{i:06d}.{a['file']}"), out[a["name"]])
            if strings is not None:
                with open(os.path.join(d, f"{i:06d}.json"), "w") as f:
                    json.dump(strings, f)
                out.update({k: np.asarray(v, np.int64) if k == "index" else v for k, v in strings.items()})
            want[view].append(out)

    def deltas_of(ds):
        return {"slots": {name: list(deltas) for name, _, deltas in slots if name in ds["cameras"]},
                "state": list(state_deltas), "action": list(action_deltas)}

    view = {"num_batches": num_batches}
    info = {
        "action_dim": action_dim,
        "batch_size": b,
        "config": {"layout": layout, "seed": seed, "batch_size": b},
        "datasets": {d["name"]: {"action_dim": d["action_dim"], "state_dim": d["state_dim"], "dataset_index": d["index"],
                                 "cameras": d["cameras"], "fps": 10, "deltas": deltas_of(d)} for d in DATASETS},
        "meta": meta,
        "num_batches": num_batches,
        "rank": 0,
        "sample": {
            "mode": "steps",
            "drop_last": drop_last,
            "slots": [{"name": name, "size": list(size), "deltas": list(deltas)} for name, size, deltas in slots],
            "state_deltas": list(state_deltas),
            "action_deltas": list(action_deltas),
            "arrays": arrays,
        },
        "seed": seed,
        "serving": {"mode": "page cache"},
        "state_dim": state_dim,
        "train": view,
        "val": {"num_batches": val_batches} if val_batches else None,
        "world": 1,
    }
    with open(os.path.join(root, "info.json"), "w") as f:
        json.dump(info, f)
    return info, want
