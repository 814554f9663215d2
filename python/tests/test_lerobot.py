"""oxefs.lerobot: a step-mode mount as LeRobot's batches, features and
statistics, checked against lerobot itself.

- test_lerobot_parity runs lerobot_parity.py with the interpreter named by
  $OXEFS_LEROBOT_PYTHON (one that imports lerobot 0.4.4 and torch 2):
  lerobot's ACTPolicy and DiffusionPolicy trained through the package
  (examples/lerobot_train.py) on a mount of the fixture lerobot_av1, and
  LeRobotDataset + DataLoader for the same samples: equal inputs,
  _is_pad and losses, and losses equal to the committed reference.
  Without the variable it is skipped, naming it.
- test_batches_match_lerobot_reference needs no lerobot: the package's
  batches (device="cpu", with whatever torch is here) for the same
  samples must match testdata/lerobot/parity.json, what lerobot's own
  batches were when it was written (shape, dtype, sum and sha256 of
  every key).
- the others check features, stats and the aggregation rule.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import oxefs
import oxefs.lerobot
from mounting import REPO, need_mount

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_specs import SPECS, mix_yaml  # noqa: E402

ROOT = os.path.join(REPO, "testdata", "lerobot", "lerobot_av1")
REFERENCE = os.path.join(REPO, "testdata", "lerobot", "parity.json")


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("MISSING python torch: oxefs.lerobot.Loader gives torch tensors")
    return torch


def _mounted(tmp_path, spec):
    """A mix config of spec with its statistics computed in its cache."""
    exe = need_mount()
    cfg = tmp_path / (spec["name"] + ".yaml")
    cfg.write_text(mix_yaml(spec, ROOT))
    cache = tmp_path / "cache"
    r = subprocess.run([exe, "stats", "--config", str(cfg), "--cache-dir", str(cache)], capture_output=True, text=True)
    if r.returncode != 0 and "libavcodec" in r.stderr:
        pytest.skip("MISSING libavcodec: the fixture's cameras are AV1 video")
    assert r.returncode == 0, r.stderr
    return str(cfg), ["--cache-dir", str(cache)]


def _digest(x):
    if isinstance(x, list):
        return {"values": x}
    a = x.detach().cpu().contiguous().numpy()
    return {"shape": list(a.shape), "dtype": a.dtype.str, "sum": float(a.astype(np.float64).sum()),
            "sha256": hashlib.sha256(a.tobytes()).hexdigest()}


@pytest.mark.parametrize("spec", SPECS, ids=[s["name"] for s in SPECS])
def test_batches_match_lerobot_reference(spec, tmp_path):
    _torch()
    ref = json.load(open(REFERENCE))["specs"][spec["name"]]["batches"]
    cfg, args = _mounted(tmp_path, spec)
    with oxefs.mount(cfg, args=args) as mnt:
        got = []
        for batch in oxefs.lerobot.Loader(mnt, device="cpu"):
            got.append(batch)
            if len(got) == len(ref):
                break
    assert len(got) == len(ref)
    for step, (batch, want) in enumerate(zip(got, ref)):
        for key, w in want.items():
            assert key in batch, f"batch {step}: no {key}; have {sorted(batch)}"
            have = _digest(batch[key])
            assert have == w, f"batch {step} {key}: oxefs {have}, lerobot {w}"


def test_lerobot_parity(tmp_path):
    python = os.environ.get("OXEFS_LEROBOT_PYTHON")
    if not python:
        pytest.skip("OXEFS_LEROBOT_PYTHON is not set: name a python that imports lerobot 0.4.4 and torch 2 to train "
                    "lerobot's ACT and Diffusion policies through the package against LeRobotDataset")
    need_mount()
    out = tmp_path / "out.json"
    env = dict(os.environ, OXEFS_BIN=oxefs.find_binary())
    r = subprocess.run([python, os.path.join(REPO, "python", "tests", "lerobot_parity.py"), str(out)],
                       capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.load(open(out))
    ref = json.load(open(REFERENCE))
    for spec in SPECS:
        g = got["specs"][spec["name"]]
        assert g["mismatches"] == [], g["mismatches"]
        assert len(g["losses"]) == spec["steps"]
        assert g["losses"] == g["lerobot_losses"]
        if got["torch"] == ref["torch"]:
            assert g["losses"] == ref["specs"][spec["name"]]["losses"]


def test_features_and_meta(tmp_path):
    spec = SPECS[1]
    cfg, args = _mounted(tmp_path, spec)
    with oxefs.mount(cfg, args=args) as mnt:
        f = oxefs.lerobot.features(mnt)
        meta = oxefs.lerobot.Meta(mnt)
    assert {k: (str(getattr(v.type, "value", v.type)), tuple(v.shape)) for k, v in f.items()} == {
        "observation.images.top": ("VISUAL", (3, 48, 64)),
        "observation.images.wrist": ("VISUAL", (3, 48, 64)),
        "observation.images.side": ("VISUAL", (3, 48, 64)),
        "observation.state": ("STATE", (6,)),
        "action": ("ACTION", (7,)),
    }
    assert meta.features["observation.images.top"]["shape"] == [48, 64, 3]
    assert meta.stats["observation.images.top"]["mean"].shape == (3, 1, 1)
    assert set(meta.stats) == set(f)


def _fake_info(stats_a, stats_b):
    return {"action_dim": 3, "state_dim": 0,
            "datasets": {"a": {"stats": {"action": stats_a}}, "b": {"stats": {"action": stats_b}}}}


def _stat(rows):
    rows = np.asarray(rows, np.float64)
    s = {"count": len(rows), "mean": rows.mean(0).tolist(), "std": rows.std(0).tolist(),
         "min": rows.min(0).tolist(), "max": rows.max(0).tolist()}
    for k, q in zip(oxefs.lerobot.QUANTILES, (0.01, 0.1, 0.5, 0.9, 0.99)):
        s[k] = np.quantile(rows, q, axis=0).tolist()
    s["per_episode"] = {k: [v + 100 for v in s[k]] for k in oxefs.lerobot.QUANTILES}
    return s


def test_stats_aggregate_as_lerobot():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(40, 3)), rng.normal(2, 3, size=(25, 2))
    info = _fake_info(_stat(a), _stat(b))
    got = oxefs.lerobot.stats(info)["action"]
    # dims 0-1 over both datasets, dim 2 over a only (b lacks it)
    for j, rows in enumerate([np.concatenate([a[:, 0], b[:, 0]]), np.concatenate([a[:, 1], b[:, 1]]), a[:, 2]]):
        assert np.isclose(got["mean"][j], rows.mean())
        assert np.isclose(got["std"][j], rows.std())
        assert got["min"][j] == rows.min() and got["max"][j] == rows.max()
    qa, qb = np.quantile(a, 0.99, axis=0), np.quantile(b, 0.99, axis=0)
    assert np.allclose(got["q99"][:2], (qa[:2] * 40 + qb * 25) / 65)
    assert np.isclose(got["q99"][2], qa[2])
    assert got["count"].tolist() == [65]
    pe = oxefs.lerobot.stats(info, quantiles="per_episode")["action"]
    assert np.allclose(pe["q01"], got["q01"] + 100)
    per = oxefs.lerobot.stats(info, per_dataset=True)
    assert per["b"]["action"]["mean"].shape == (3,) and per["b"]["action"]["std"][2] == 1
    with pytest.raises(ValueError, match="quantiles"):
        oxefs.lerobot.stats(info, quantiles="median")


def test_recipe_mix_of_lerobot_and_rlds(tmp_path):
    """The README's recipe as written (examples/lerobot_train.py) on a mix
    of a LeRobot dataset and an RLDS one: lerobot's ACT trains 3 steps
    with finite losses."""
    python = os.environ.get("OXEFS_LEROBOT_PYTHON")
    if not python:
        pytest.skip("OXEFS_LEROBOT_PYTHON is not set: name a python that imports lerobot 0.4.4 and torch 2 to run the "
                    "README's LeRobot recipe")
    exe = need_mount()
    data = os.path.join(REPO, "testdata")
    cfg = tmp_path / "mix.yaml"
    cfg.write_text(f"""batch_size: 4
samples_per_episode: 0
sample:
  cameras: {{primary: {{size: [48, 64]}}, wrist: {{size: [48, 64]}}}}
  action: {{steps: "0:5"}}
datasets:
  - name: lr
    source: {data}/lerobot/lerobot_av1
    split: train
    cameras: {{primary: observation.images.top, wrist: observation.images.wrist}}
    action_keys: [action]
    state_key: observation.state
    language_key: task
  - name: bridge
    source: {data}/datasets/tiny_bridge/1.0.0
    split: train
    cameras: {{primary: steps/observation/image, wrist: steps/observation/wrist_image}}
    action_keys: [steps/action/world_vector, steps/action/rotation_delta, steps/action/gripper_closedness_action]
    state_key: steps/observation/state
    language_key: steps/language_instruction
""")
    cache = str(tmp_path / "cache")
    subprocess.run([exe, "stats", "--config", str(cfg), "--cache-dir", cache], check=True, capture_output=True)
    env = dict(os.environ, OXEFS_BIN=exe, PYTHONPATH=os.path.join(REPO, "python"))
    r = subprocess.run([python, os.path.join(REPO, "examples", "lerobot_train.py"), str(cfg), "--steps", "3", "--device", "cpu",
                        "--cache-dir", cache, "--no-pretrained"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    losses = [float(line.split()[-1]) for line in r.stdout.splitlines() if line.startswith("step ")]
    assert len(losses) == 3 and all(np.isfinite(losses)), r.stdout


def test_pair_mode_is_refused():
    info = {"datasets": {"a": {}}}
    for call in (oxefs.lerobot.deltas, oxefs.lerobot.features):
        with pytest.raises(ValueError, match="step samples"):
            call(info)
