#!/usr/bin/env python3
"""oxefs.lerobot against lerobot itself (run by test_lerobot.py with the
interpreter of $OXEFS_LEROBOT_PYTHON, which imports lerobot 0.4.4 and
torch 2).

    lerobot_parity.py OUT.json [--reference testdata/lerobot/parity.json]

For each policy (lerobot's ACTPolicy and DiffusionPolicy, tiny configs,
no downloaded weights, fixed seeds) it mounts the fixture lerobot_av1 in
step mode with the policy's deltas, trains the policy for a few steps
through examples/lerobot_train.py (the README's recipe, no glue), and
for the same samples (each oxefs sample's episode and t, from the
batch's episode_index and frame_index) builds the batches of
LeRobotDataset(root, delta_timestamps) + a DataLoader: every key lerobot
gives (frames, state, action, their _is_pad, task, episode_index,
frame_index, timestamp, index) must be equal, and so must the loss of a second
policy, made with the same seed, trained on lerobot's batches. It writes
what it found to OUT.json; with --reference it also writes the reference
numbers (per key of lerobot's batches: shape, sum, sha256; the losses)
that test_lerobot.py checks the package's own output against where there
is no lerobot.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "examples"))

import oxefs  # noqa: E402
import oxefs.lerobot  # noqa: E402
import lerobot_train  # noqa: E402
from parity_specs import SPECS, mix_yaml  # noqa: E402

from lerobot.datasets.lerobot_dataset import LeRobotDataset  # noqa: E402

ROOT = os.path.join(REPO, "testdata", "lerobot", "lerobot_av1")


def digest(x):
    """A key's reference figures: shape, float64 sum, sha256 of its bytes."""
    if isinstance(x, list):
        return {"values": x}
    a = x.detach().cpu().contiguous().numpy()
    return {"shape": list(a.shape), "dtype": a.dtype.str, "sum": float(a.astype(np.float64).sum()),
            "sha256": hashlib.sha256(a.tobytes()).hexdigest()}


def lerobot_batch(ds, batch):
    """LeRobotDataset + DataLoader's batch of the samples of an oxefs batch."""
    idx = [ds.meta.episodes[int(e)]["dataset_from_index"] + int(t) for e, t in zip(batch["episode_index"], batch["frame_index"])]
    dl = torch.utils.data.DataLoader(ds, batch_size=len(idx), sampler=idx, num_workers=0)
    return next(iter(dl))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--reference")
    a = ap.parse_args()
    exe = oxefs.find_binary()
    result, reference = {"lerobot": __import__("lerobot").__version__, "torch": torch.__version__, "specs": {}}, {"specs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in SPECS:
            name = spec["name"]
            cfg_path = os.path.join(tmp, name + ".yaml")
            with open(cfg_path, "w") as f:
                f.write(mix_yaml(spec, ROOT))
            cache = os.path.join(tmp, "cache")
            subprocess.run([exe, "stats", "--config", cfg_path, "--cache-dir", cache], check=True, capture_output=True)
            ds = LeRobotDataset("lerobot_av1", root=ROOT, delta_timestamps=spec["delta_timestamps"], video_backend="pyav")
            with oxefs.mount(cfg_path, args=["--cache-dir", cache]) as mnt:
                ours, theirs = [], []

                def see(step, batch, loss):
                    ours.append({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in batch.items()})

                torch.manual_seed(0)
                cfg = lerobot_train.policy_config(spec["policy"], "cpu", **spec["config"])
                losses = lerobot_train.train(mnt, cfg, spec["steps"], "cpu", on_step=see, seed=1000)
                # The same policy, from the same seed, on lerobot's batches.
                from lerobot.policies.factory import make_policy, make_pre_post_processors

                torch.manual_seed(0)
                cfg2 = lerobot_train.policy_config(spec["policy"], "cpu", **spec["config"])
                meta = oxefs.lerobot.Meta(mnt)
                policy = make_policy(cfg2, ds_meta=meta)
                pre, _ = make_pre_post_processors(cfg2, dataset_stats=meta.stats)
                opt = cfg2.get_optimizer_preset().build(policy.get_optim_params())
                policy.train()
                ref_losses, mismatches, ref_batches = [], [], []
                for step, batch in enumerate(ours):
                    lb = lerobot_batch(ds, batch)
                    keys = [k for k in lb if k != "task_index"]
                    for k in keys:
                        if k not in batch:
                            mismatches.append(f"step {step}: oxefs has no {k}")
                            continue
                        x, y = batch[k], lb[k]
                        same = x == y if isinstance(y, list) else (x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y))
                        if not same:
                            mismatches.append(f"step {step} {k}: oxefs {getattr(x, 'shape', x)} {getattr(x, 'dtype', '')}, "
                                              f"lerobot {getattr(y, 'shape', y)} {getattr(y, 'dtype', '')}")
                    ref_batches.append({k: digest(lb[k]) for k in keys})
                    torch.manual_seed(1000 + step)
                    loss, _ = policy.forward(pre(dict(lb)))
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
                    ref_losses.append(loss.item())
                result["specs"][name] = {"losses": losses, "lerobot_losses": ref_losses, "mismatches": mismatches,
                                         "keys": sorted(keys)}
                reference["specs"][name] = {"batches": ref_batches, "losses": ref_losses}
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    if a.reference:
        reference["lerobot"], reference["torch"] = result["lerobot"], result["torch"]
        with open(a.reference, "w") as f:
            json.dump(reference, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
