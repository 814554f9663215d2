"""The trainer's loop against a real `oxefs mount`: tensors a trainer may
write into, epochs and resume, and the val view's repeats.

They need the oxefs binary (OXEFS_BIN, or oxefs on PATH) and /dev/fuse;
without either they are skipped, with the reason.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import oxefs
from mounting import PYTHON, REPO, need_mount



def _tiny_mix(tmp_path, extra):
    """tiny_bridge (train and val split) with extra top-level lines."""
    src = os.path.join(REPO, "testdata", "datasets", "tiny_bridge", "1.0.0")
    cfg = tmp_path / "mix.yaml"
    cfg.write_text(extra + f"datasets:\n  - source: {src}\n    image_key: steps/observation/image\n    val_split: val\n"
                   "    action_keys: [steps/action/world_vector, steps/action/rotation_delta]\n    state_key: steps/observation/state\n")
    return cfg


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """tiny_bridge in batches of 4 at 32², 5 batches listed."""
    need_mount()
    d = tmp_path_factory.mktemp("tiny")
    cfg = _tiny_mix(d, "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 5\n")
    with oxefs.mount(cfg, args=["--cache-dir", str(d / "cache")]) as mnt:
        yield mnt


def _in_subprocess(script, *args):
    """Runs script in a fresh Python (so that a SIGSEGV fails the test
    instead of killing pytest); returns its stdout."""
    env = dict(os.environ, PYTHONPATH=PYTHON)
    r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, f"exit status {r.returncode} (-11 is SIGSEGV)\n{r.stdout}{r.stderr}"
    return r.stdout


# Writes into every array of two batches of each reader a trainer uses
# (numpy and torch, Loader and Batches), then checks the files unchanged.
_WRITE_SCRIPT = r"""
import hashlib, os, sys
import numpy as np
import oxefs

mnt = sys.argv[1]
def digest(n):
    d = os.path.join(mnt, "batches")
    return {f: hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
            for f in os.listdir(d) if f.startswith("%06d." % n) and f.endswith(".npy")}
before = {n: digest(n) for n in range(2)}
readers = []
try:
    import torch
    readers += [oxefs.Loader(mnt, stop=2, torch=True), oxefs.Loader(mnt, stop=2, torch=True, channels_first=True),
                oxefs.Batches(mnt, mmap=True, torch=True)]
except ImportError:
    torch = None
readers += [oxefs.Loader(mnt, stop=2), oxefs.Batches(mnt, mmap=True), oxefs.Batches(mnt)]
wrote = 0
for r in readers:
    batches = list(r) if isinstance(r, oxefs.Loader) else [r[0], r[1]]
    for b in batches:
        for key, x in b.items():
            if isinstance(x, list):
                continue
            if torch is not None and isinstance(x, torch.Tensor):
                x[:1] = 0                   # e.g. a random erase, in place
                assert int(x[:1].sum()) == 0
                x.add_(1) if x.dtype != torch.bool else x.logical_not_()
            else:
                x[:1] = 0
                assert not x[:1].any()
            wrote += 1
after = {n: digest(n) for n in range(2)}
assert before == after, "a write reached the mount's files"
print("wrote", wrote)
"""


def test_writing_into_batches_pair_mode(tiny):
    """In-place writes into Loader/Batches arrays and tensors (frames
    mapped from the mount) work and leave the files as they were."""
    out = _in_subprocess(_WRITE_SCRIPT, tiny.path)
    assert int(out.split()[-1]) >= 3 * 2 * 8, out


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    """Two synthetic datasets (train and val splits) as step samples, in
    batches of 5."""
    need_mount()
    d = tmp_path_factory.mktemp("steps")
    subprocess.run([oxefs.find_binary(), "synth", str(d / "synth"), "--datasets", "2", "--episodes", "3", "--steps", "30"],
                   check=True, capture_output=True)
    text = (d / "synth" / "mix-steps.yaml").read_text().replace("batch_size: 64", "batch_size: 5")
    cfg = d / "mix.yaml"
    cfg.write_text(text)
    with oxefs.mount(cfg, args=["--cache-dir", str(d / "cache")]) as mnt:
        assert "sample" in mnt.info
        yield mnt


def test_writing_into_batches_step_mode(steps):
    """The same in step mode: every array, each camera slot's frames
    mapped from the mount."""
    out = _in_subprocess(_WRITE_SCRIPT, steps.path)
    assert int(out.split()[-1]) >= 3 * 2 * 10, out


def _check_one_pass(units, repeat):
    """One pass of a val view: the unmarked samples are distinct units,
    and each marked one repeats a unit of the pass."""
    first = [u for u, r in zip(units, repeat) if not r]
    again = [u for u, r in zip(units, repeat) if r]
    assert len(set(first)) == len(first), "a unit served twice, unmarked"
    assert set(again) <= set(first)
    return len(again)


def test_val_repeats_marked_pair_mode(tiny):
    """The val view's last batch is topped up with repeats: is_repeat (a
    bool array per batch) marks them; the train view has no is_repeat."""
    val = oxefs.Batches(tiny, val=True)
    units, repeat = [], []
    for b in val:
        assert b["is_repeat"].dtype == np.bool_ and b["is_repeat"].shape == (len(b["episode_id"]),)
        units += b["episode_id"]
        repeat += list(b["is_repeat"])
    assert _check_one_pass(units, repeat) > 0
    assert "is_repeat" not in oxefs.Batches(tiny)[0]


def test_val_repeats_marked_step_mode(steps):
    """In step mode sample_is_pad, listed in info.json's sample.arrays after
    frame_index, marks them; all false on the train view."""
    names = [a["name"] for a in steps.info["sample"]["arrays"]]
    assert names[-2:] == ["frame_index", "sample_is_pad"]
    units, repeat = [], []
    for b in oxefs.Batches(steps, val=True):
        pad = b["sample_is_pad"]
        assert pad.dtype == np.bool_ and pad.shape == (5,)
        units += b["episode_id"]  # samples_per_episode 1: a unit is an episode (a repeat draws a new t)
        repeat += list(pad)
    assert _check_one_pass(units, repeat) > 0
    for n in range(3):
        assert not oxefs.Batches(steps)[n]["sample_is_pad"].any()


def _digest(batch):
    h = hashlib.sha256()
    for key in sorted(batch):
        x = batch[key]
        h.update(key.encode())
        h.update(np.ascontiguousarray(np.asarray(x)).tobytes() if not isinstance(x, list) else json.dumps(x).encode())
    return h.hexdigest()


def test_epochs_are_new_batches(tiny):
    """Each epoch of the train view is new batches: epoch 1 is batches
    5..9, which the mount serves past its 5-batch listing."""
    n = len(oxefs.Batches(tiny))
    assert n == 5
    e0 = [_digest(b) for b in oxefs.Loader(tiny, epoch=0)]
    e1 = [_digest(b) for b in oxefs.Loader(tiny, epoch=1)]
    assert len(e0) == len(e1) == n
    assert not set(e0) & set(e1), "epoch 1 replays epoch 0"
    assert e0 == [_digest(b) for b in oxefs.Loader(tiny)]


def test_resume_reads_the_same_bytes(tiny):
    """A run resumed at any batch, in any epoch, reads the bytes an
    uninterrupted run reads there, with the loop the Loader's doc gives."""
    n = len(oxefs.Batches(tiny))
    epochs = 3
    whole = []
    for epoch in range(epochs):
        whole += [_digest(b) for b in oxefs.Loader(tiny, epoch=epoch)]
    assert len(whole) == epochs * n
    for resume in (0, 3, n, n + 2, 2 * n - 1, 2 * n + 4):
        got, step = [], resume
        for epoch in range(step // n, epochs):
            for b in oxefs.Loader(tiny, epoch=epoch, start=step):
                got.append(_digest(b))
                step += 1
        assert got == whole[resume:], f"resumed at batch {resume}"
        # The same without epochs: start alone runs to the end of its epoch.
        rest = [_digest(b) for b in oxefs.Loader(tiny, start=resume)]
        assert rest == whole[resume:(resume // n + 1) * n], f"Loader(start={resume})"
        # And by index.
        assert _digest(oxefs.Batches(tiny, mmap=True)[resume]) == whole[resume]


def test_start_past_the_listing(tiny):
    """Loader(start=k) past a listing of n reads the rest of k's epoch
    (it used to yield nothing); Batches[k] serves it."""
    n = len(oxefs.Batches(tiny))
    loader = oxefs.Loader(tiny, start=3 * n + 1)
    assert len(loader) == n - 1
    got = list(loader)
    assert len(got) == n - 1
    ds = oxefs.Batches(tiny)
    assert got[0]["episode_id"] == ds[3 * n + 1]["episode_id"]
    assert len(list(ds)) == n  # iterating is one epoch, the listing


def test_bad_ranges_are_named(tiny):
    ds = oxefs.Batches(tiny)
    n, last = len(ds), ds.max_batch
    with pytest.raises(IndexError, match=f"serves batches 0..{last}"):
        ds[last + 1]
    with pytest.raises(IndexError):
        ds[-1]
    with pytest.raises(ValueError, match="start -1"):
        oxefs.Loader(tiny, start=-1)
    with pytest.raises(ValueError, match="not in epoch 1"):
        oxefs.Loader(tiny, epoch=1, start=0)
    with pytest.raises(ValueError, match="epoch -1"):
        oxefs.Loader(tiny, epoch=-1)
    with pytest.raises(ValueError, match=f"past batch {last}"):
        oxefs.Loader(tiny, stop=last + 2)
    # The val view is one pass: no epoch 1, nothing past its listing.
    val = oxefs.Batches(tiny, val=True)
    assert val.max_batch == len(val) - 1
    with pytest.raises(ValueError, match="val view"):
        oxefs.Loader(tiny, val=True, epoch=1)
    with pytest.raises(ValueError, match="val view"):
        oxefs.Loader(tiny, val=True, start=len(val))
    with pytest.raises(IndexError):
        val[len(val)]
    assert len(list(oxefs.Loader(tiny, val=True))) == len(val)


def test_one_batch_epoch_warns(tmp_path):
    """samples_per_episode 1 over a few episodes lists one batch (one pass
    over the units): Loader(mnt) says so, and epochs still give new
    batches."""
    need_mount()
    cfg = _tiny_mix(tmp_path, "batch_size: 32\nimage_size: [16, 16]\nsamples_per_episode: 1\n")
    with oxefs.mount(cfg, args=["--cache-dir", str(tmp_path / "cache")]) as mnt:
        assert len(oxefs.Batches(mnt)) == 1
        with pytest.warns(RuntimeWarning, match="lists 1 batch per epoch"):
            assert len(oxefs.Loader(mnt)) == 1
        got = [_digest(next(iter(oxefs.Loader(mnt, epoch=e)))) for e in range(3)]
        assert len(set(got)) == 3
