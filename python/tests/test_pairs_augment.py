"""The package's pair mode on a directory laid out as an augmented
pair-mode mount serves it: batches/NNNNNN.npy (the frames),
NNNNNN.augment.npy (each sample's parameters, float32 [B, 18]) and
NNNNNN.json, as info.json's files lists them. No daemon needed."""

import json
import os

import numpy as np
import pytest

import oxefs


def _write(root, augmented, batch_size=3, num_batches=2):
    os.makedirs(os.path.join(root, "batches"))
    shape = [batch_size, 2, 4, 6, 3]
    info = {
        "batch_size": batch_size,
        "files": ["npy", "augment.npy"] if augmented else ["npy"],
        "frames": {"shape": shape, "dtype": "uint8", "layout": "BFHWC", "decode": "exact"},
        "meta": "none",
        "train": {"num_batches": num_batches, "max_batch": num_batches - 1},
        "val": None,
    }
    with open(os.path.join(root, "info.json"), "w") as f:
        json.dump(info, f)
    rng = np.random.default_rng(5)
    want = []
    for n in range(num_batches):
        frames = rng.integers(0, 256, size=shape, dtype=np.uint8)
        np.save(os.path.join(root, "batches", f"{n:06d}.npy"), frames)
        batch = {"frames": frames}
        if augmented:
            params = rng.random((batch_size, 18), dtype=np.float32)
            np.save(os.path.join(root, "batches", f"{n:06d}.augment.npy"), params)
            batch["augment"] = params
        want.append(batch)
    return want


@pytest.mark.parametrize("augmented", [True, False])
@pytest.mark.parametrize("mmap", [True, False])
def test_pair_batches_read_augment(tmp_path, augmented, mmap):
    want = _write(str(tmp_path), augmented)
    b = oxefs.Batches(str(tmp_path), mmap=mmap)
    for n, w in enumerate(want):
        got = b[n]
        assert sorted(got) == sorted(w), f"batch {n}: keys {sorted(got)}, want {sorted(w)}"
        for key, value in w.items():
            assert got[key].dtype == value.dtype and got[key].shape == value.shape, key
            assert np.array_equal(got[key], value), key


def test_pair_pinned_read_has_augment(tmp_path):
    torch = pytest.importorskip("torch", reason="MISSING python torch: torch is not installed (./scripts/testdeps.sh installs python3-torch)")
    want = _write(str(tmp_path), True)
    got = oxefs.Batches(str(tmp_path)).read(1, pinned=False)
    assert np.array_equal(got["augment"], want[1]["augment"])
    # the pinned path's reader, without an accelerator to pin with
    t = oxefs._batches._read_pinned(os.path.join(str(tmp_path), "batches", "000001.augment.npy"), pin=False)
    assert isinstance(t, torch.Tensor) and np.array_equal(t.numpy(), want[1]["augment"])
