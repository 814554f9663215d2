"""Step mode through a real `oxefs mount`: synthetic OXE-like datasets
written by `oxefs synth`, served as step samples (two camera slots, history,
a chunk of 50 actions), read by oxefs.Batches, a torch DataLoader with
workers, and the ACT-like example trainer.

They need the oxefs binary (OXEFS_BIN, or oxefs on PATH) and /dev/fuse;
without either they are skipped, with the reason.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import oxefs
from mounting import REPO, need_mount



@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """Six synthetic datasets (the sixth, taco_play, has a wrist camera),
    4 episodes of 60 steps each, and the mix-steps.yaml synth writes."""
    exe = need_mount()
    d = tmp_path_factory.mktemp("synth")
    subprocess.run([exe, "synth", str(d), "--datasets", "6", "--episodes", "4", "--steps", "60"],
                   check=True, capture_output=True)
    return d


def _small(synth, tmp_path, batch_size=8):
    """mix-steps.yaml with a smaller batch, for a test's CPU budget."""
    text = open(synth / "mix-steps.yaml").read().replace("batch_size: 64", "batch_size: %d" % batch_size)
    p = tmp_path / "mix.yaml"
    p.write_text(text)
    return str(p)


def test_step_batches_through_a_mount(synth, tmp_path):
    with oxefs.mount(_small(synth, tmp_path)) as mnt:
        b = oxefs.Batches(mnt)
        info = b.info
        names = [a["name"] for a in info["sample"]["arrays"]]
        assert names[:5] == ["observation.images.primary", "observation.images.wrist",
                             "observation.images.primary_is_pad", "observation.images.wrist_is_pad", "image_mask"]
        seen_wrist = seen_no_wrist = False
        for n in range(6):
            x = b[n]
            assert x["observation.images.primary"].shape == (8, 2, 256, 256, 3)
            assert x["observation.images.wrist"].shape == (8, 2, 128, 128, 3)
            assert x["action"].shape[:2] == (8, 50) and x["action"].dtype == np.float32
            assert x["action_is_pad"].shape == (8, 50) and x["action_is_pad"].dtype == np.bool_
            t = x["frame_index"]
            # A chunk of 50 from t in an episode of 60 steps pads exactly
            # the steps past the end; history [-1, 0] pads only at t = 0.
            assert (x["action_is_pad"].sum(axis=1) == np.maximum(0, t + 50 - 60)).all()
            assert (x["observation.images.primary_is_pad"][:, 0] == (t == 0)).all()
            for i, name in enumerate(x["dataset_name"]):
                wrist = bool(x["image_mask"][i, 1])
                assert wrist == (name == "synth_taco_play")
                seen_wrist |= wrist
                seen_no_wrist |= not wrist
                if not wrist:
                    assert not x["observation.images.wrist"][i].any()
                    assert x["observation.images.wrist_is_pad"][i].all()
            # the files read with mmap_mode too, the same bytes
            m = np.load(os.path.join(mnt, "batches", "%06d.action.npy" % n), mmap_mode="r")
            assert np.array_equal(m, x["action"])
        assert seen_wrist and seen_no_wrist


def test_dataloader_with_workers_over_a_step_mount(synth, tmp_path):
    torch = pytest.importorskip("torch", reason="MISSING python torch: torch is not installed (./scripts/testdeps.sh installs python3-torch)")
    with oxefs.mount(_small(synth, tmp_path)) as mnt:
        ds = oxefs.Batches(mnt, torch=True, channels_first=True)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, sampler=range(4))
        got = list(dl)
        assert len(got) == 4
        for n, x in enumerate(got):
            assert tuple(x["observation.images.primary"].shape) == (8, 2, 3, 256, 256)
            want = oxefs.Batches(mnt)[n]
            assert np.array_equal(x["action"].numpy(), want["action"])
            assert np.array_equal(x["frame_index"].numpy(), want["frame_index"])


def test_act_example_trains_over_a_mount(synth, tmp_path):
    """The ACT-like example: two cameras, a chunk of 50, action_is_pad in
    the loss, over a real mount through oxefs.Loader."""
    pytest.importorskip("torch", reason="MISSING python torch: torch is not installed (./scripts/testdeps.sh installs python3-torch)")
    env = dict(os.environ, OXEFS_BIN=oxefs.find_binary())
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "act_train.py"),
                        _small(synth, tmp_path), "--steps", "4"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    losses = [float(line.split()[-1]) for line in r.stdout.splitlines() if line.startswith("step ")]
    assert len(losses) == 4 and all(np.isfinite(losses)), r.stdout
