"""The package's step mode (issue 26) on a directory laid out as a step-mode
mount serves it (see stepdir.py): Batches, Loader, pinned reads, channels
first, a DataLoader with workers, and examples/act_train.py. No daemon
needed: the package reads any directory with that layout."""

import json
import math
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import oxefs
import stepdir

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_ACT = os.path.join(_REPO, "examples", "act_train.py")


def _torch():
    return pytest.importorskip("torch", reason="MISSING python torch: torch is not installed (./scripts/testdeps.sh installs python3-torch)")


def _equal(got, want):
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    return got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


def _same_batch(got, want):
    assert list(got) == list(want), "keys (or their order) differ"
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            assert _equal(got[key], value), key
        else:
            assert got[key] == value, key


@pytest.fixture
def steps(tmp_path):
    info, want = stepdir.write(tmp_path, num_batches=3, val_batches=2)
    return tmp_path, info, want


def test_step_batch_is_every_array_and_the_strings(steps):
    root, info, want = steps
    ds = oxefs.Batches(root)
    assert len(ds) == 3
    names = [a["name"] for a in info["sample"]["arrays"]]
    for i in range(3):
        b = ds[i]
        assert list(b)[: len(names)] == names
        assert list(b)[len(names):] == ["dataset_name", "episode_id", "task", "robot", "index"]
        assert b["index"].dtype == np.int64 and b["index"].shape == (len(b["task"]),)
        _same_batch(b, want["train"][i])
    # The layout has what the contract is about: padded steps at both ends
    # of episodes, and a dataset without the wrist camera.
    every = want["train"]
    assert any(b["action_is_pad"][:, 0].any() for b in every) and any(b["action_is_pad"][:, -1].any() for b in every)
    assert any((~b["image_mask"][:, 1]).any() for b in every)
    val = oxefs.Batches(root, val=True)
    assert len(val) == 2
    _same_batch(val[1], want["val"][1])
    with pytest.raises(IndexError):
        ds[3]


def test_step_mmap_maps_frames_only(steps):
    """mmap=True maps the frames; the small arrays are read, so they do
    not depend on the mount staying up."""
    root, _, want = steps
    b = oxefs.Batches(root, mmap=True)[0]
    for key, value in want["train"][0].items():
        if key in ("observation.images.primary", "observation.images.wrist"):
            assert isinstance(b[key], np.memmap), key
        elif isinstance(value, np.ndarray):
            assert not isinstance(b[key], np.memmap), key
    _same_batch(b, want["train"][0])


@pytest.mark.parametrize("meta", ["full", "dataset", "none"])
def test_step_meta_modes(tmp_path, meta):
    info, want = stepdir.write(tmp_path, num_batches=1, meta=meta)
    b = oxefs.Batches(tmp_path)[0]
    _same_batch(b, want["train"][0])
    strings = {"full": ["dataset_name", "episode_id", "task", "robot"], "dataset": ["dataset_name"], "none": []}[meta]
    assert [k for k in b if not isinstance(b[k], np.ndarray)] == strings
    # meta=False: arrays only, the .json is not read.
    names = [a["name"] for a in info["sample"]["arrays"]]
    assert list(oxefs.Batches(tmp_path, meta=False)[0]) == names


def test_step_torch_items(steps):
    torch = _torch()
    root, _, want = steps
    b = oxefs.Batches(root, torch=True)[2]
    dtypes = {"observation.images.primary": torch.uint8, "image_mask": torch.bool, "action_is_pad": torch.bool,
              "observation.state": torch.float32, "action": torch.float32, "dataset_index": torch.int64, "frame_index": torch.int64, "index": torch.int64}
    for key, dtype in dtypes.items():
        assert isinstance(b[key], torch.Tensor) and b[key].dtype == dtype, key
    assert isinstance(b["task"], list) and all(isinstance(s, str) for s in b["task"])
    _same_batch(b, want["train"][2])


@pytest.mark.parametrize("layout", ["BFHWC", "BCFHW"])
def test_step_channels_first_is_a_view(tmp_path, layout):
    """channels_first=True gives LeRobot's [B, T, 3, H, W] from either
    layout: the same values, as a permuted view of the mapped array."""
    torch = _torch()
    _, want = stepdir.write(tmp_path / "mine", num_batches=2, layout=layout)
    # The reference: the same samples laid out BFHWC, moved channels first.
    _, ref = stepdir.write(tmp_path / "ref", num_batches=2, layout="BFHWC")
    got = list(oxefs.Loader(tmp_path / "mine", torch=True, channels_first=True))
    assert len(got) == 2
    for b, r, w in zip(got, ref["train"], want["train"]):
        for slot, (h, wd) in (("primary", (16, 16)), ("wrist", (8, 12))):
            x = b[f"observation.images.{slot}"]
            assert x.dtype == torch.uint8 and tuple(x.shape) == (4, 2, 3, h, wd)
            assert np.array_equal(x.numpy(), r[f"observation.images.{slot}"].transpose(0, 1, 4, 2, 3))
            # A view, no copy: undoing the permutation gives the file's
            # (contiguous) array back.
            back = (0, 1, 3, 4, 2) if layout == "BFHWC" else (0, 2, 1, 3, 4)
            assert not x.is_contiguous() and x.permute(back).is_contiguous()
            assert np.array_equal(x.permute(back).numpy(), w[f"observation.images.{slot}"])
        assert torch.equal(b["action"], torch.from_numpy(w["action"]))
    # numpy items too (a transposed view).
    n = oxefs.Batches(tmp_path / "mine", channels_first=True)[0]["observation.images.wrist"]
    assert n.shape == (4, 2, 3, 8, 12) and np.array_equal(n, ref["train"][0]["observation.images.wrist"].transpose(0, 1, 4, 2, 3))


def test_pair_mode_channels_first(tmp_path):
    """Pair mode reads as before; channels_first moves its frames too."""
    frames = np.arange(2 * 3 * 4 * 5 * 3, dtype=np.uint8).reshape(2, 3, 4, 5, 3)
    (tmp_path / "batches").mkdir()
    np.save(tmp_path / "batches" / "000000.npy", frames)
    meta = {"dataset_name": ["a", "b"], "action": [[1.0, None], [0.5, 2.0]], "action_mask": [[True, False], [True, True]]}
    (tmp_path / "batches" / "000000.json").write_text(json.dumps(meta))
    info = {"frames": {"layout": "BFHWC", "shape": [2, 3, 4, 5, 3], "dtype": "uint8"}, "meta": "full", "world": 1, "rank": 0,
            "train": {"num_batches": 1}, "val": None}
    (tmp_path / "info.json").write_text(json.dumps(info))
    b = oxefs.Batches(tmp_path)[0]
    assert list(b) == ["frames", "dataset_name", "action", "action_mask"]
    assert np.array_equal(b["frames"], frames) and b["dataset_name"] == ["a", "b"]
    assert b["action"].dtype == np.float32 and np.isnan(b["action"][0, 1]) and b["action_mask"].dtype == np.bool_
    cf = oxefs.Batches(tmp_path, channels_first=True)[0]["frames"]
    assert cf.shape == (2, 3, 3, 4, 5) and np.array_equal(cf, frames.transpose(0, 1, 4, 2, 3))


def test_step_loader_start_stop(steps):
    root, _, want = steps
    got = list(oxefs.Loader(root, start=1, stop=3, readahead=1))
    assert len(got) == 2
    for b, w in zip(got, want["train"][1:]):
        _same_batch(b, w)
    assert isinstance(got[0]["observation.images.primary"], np.memmap)
    # Past what the directory holds (its info.json has no max_batch: one
    # epoch): refused, naming the range; a missing file is an IndexError
    # naming it.
    with pytest.raises(ValueError, match=r"stop 4 is past batch 2"):
        oxefs.Loader(root, start=2, stop=4)
    with pytest.raises(ValueError, match="start -1"):
        oxefs.Loader(root, start=-1, stop=1)
    with pytest.raises(IndexError, match=r"000003\.observation\.images\.primary\.npy does not exist"):
        oxefs.Batches(root).read(3)


def test_step_pinned_reads_every_array(steps, monkeypatch):
    """The pinned path reads each array file straight into a tensor (in
    ordinary memory here when torch has no accelerator; the read is the
    same): every array, bool and int64 included, the bytes np.load gives."""
    torch = _torch()
    import oxefs._batches as b

    cuda = torch.cuda.is_available()
    read = b._read_pinned
    monkeypatch.setattr(b, "_read_pinned", lambda name: read(name, pin=cuda))
    root, info, want = steps
    ds = oxefs.Batches(root)
    files = {a["name"] for a in info["sample"]["arrays"]}
    for i in range(3):
        got = ds.read(i, pinned=True)
        for key in files:
            assert isinstance(got[key], torch.Tensor) and got[key].is_pinned() == cuda, key
        _same_batch(got, want["train"][i])
        # And as the Loader hands them out: no second copy of pinned arrays.
        done = ds._finish(got, torch=True, pin_memory=cuda)
        assert done["action"] is got["action"]


def test_step_loader_pin_memory_without_cuda(steps):
    torch = _torch()
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: batches are pinned")
    root, _, want = steps
    with pytest.warns(RuntimeWarning, match="no CUDA device"):
        loader = oxefs.Loader(root, pin_memory=True, channels_first=True)
    got = list(loader)
    assert len(got) == 3
    for b, w in zip(got, want["train"]):
        assert torch.equal(b["action_is_pad"], torch.from_numpy(w["action_is_pad"]))
        assert np.array_equal(b["observation.images.primary"].numpy(), w["observation.images.primary"].transpose(0, 1, 4, 2, 3))


def test_step_dataloader_with_workers(steps):
    torch = _torch()
    from torch.utils.data import DataLoader

    root, _, want = steps
    ds = oxefs.Batches(root, torch=True, channels_first=True)
    got = list(DataLoader(ds, batch_size=None, num_workers=2))
    assert len(got) == 3
    for b, w in zip(got, want["train"]):
        assert tuple(b["observation.images.primary"].shape) == (4, 2, 3, 16, 16)
        assert torch.equal(b["action"], torch.from_numpy(w["action"])) and b["robot"] == w["robot"]
        assert torch.equal(b["observation.images.wrist_is_pad"], torch.from_numpy(w["observation.images.wrist_is_pad"]))


def _rewrite_info(root, edit):
    with open(root / "info.json") as f:
        info = json.load(f)
    edit(info)
    with open(root / "info.json", "w") as f:
        json.dump(info, f)


def test_step_file_that_disagrees_with_info(tmp_path):
    stepdir.write(tmp_path, num_batches=1)
    np.save(tmp_path / "batches" / "000000.action_mask.npy", np.ones((4, 6), np.bool_))
    with pytest.raises(ValueError, match=r"000000\.action_mask\.npy: \|b1 \[4, 6\], but info\.json's sample\.arrays says action_mask is \|b1 \[4, 5\]"):
        oxefs.Batches(tmp_path)[0]
    np.save(tmp_path / "batches" / "000000.action_mask.npy", np.ones((4, 5), np.int64))
    with pytest.raises(ValueError, match=r"<i8 \[4, 5\], but .* action_mask is \|b1 \[4, 5\]"):
        oxefs.Batches(tmp_path)[0]


def test_step_bad_info(tmp_path):
    stepdir.write(tmp_path, num_batches=1)

    def drop_dtype(info):
        del info["sample"]["arrays"][0]["dtype"]

    _rewrite_info(tmp_path, drop_dtype)
    with pytest.raises(ValueError, match="sample.arrays entry .*need name, file, dtype"):
        oxefs.Batches(tmp_path)

    def no_arrays(info):
        info["sample"]["arrays"] = []

    _rewrite_info(tmp_path, no_arrays)
    with pytest.raises(ValueError, match="sample.arrays is \\[\\]"):
        oxefs.Batches(tmp_path)


def test_step_layout_that_contradicts_the_shapes(tmp_path):
    stepdir.write(tmp_path, num_batches=1, layout="BFHWC")

    def claim(layout):
        def edit(info):
            info["config"]["layout"] = layout
        return edit

    _rewrite_info(tmp_path, claim("BCFHW"))
    with pytest.raises(ValueError, match=r"frames layout BCFHW does not fit the frames shapes \[\[4, 2, 16, 16, 3\]"):
        oxefs.Batches(tmp_path, channels_first=True)
    oxefs.Batches(tmp_path)  # only channels_first needs the layout
    _rewrite_info(tmp_path, claim("BHWC"))
    with pytest.raises(ValueError, match=r"frames layout 'BHWC', need one of \['BCFHW', 'BFHWC'\]"):
        oxefs.Batches(tmp_path, channels_first=True)

    def drop(info):
        del info["config"]["layout"]

    _rewrite_info(tmp_path, drop)  # no layout said: the shapes tell
    assert oxefs.Batches(tmp_path, channels_first=True)[0]["observation.images.primary"].shape == (4, 2, 3, 16, 16)


def _act(args, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.path.join(_REPO, "python"), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, _ACT, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)


def _losses(out):
    return [float(m.group(1)) for m in re.finditer(r"^step \d+ loss (\S+)$", out, re.M)]


def test_act_example_overfits_one_batch(tmp_path):
    """examples/act_train.py through oxefs.Loader: two cameras (one missing
    for one dataset), a chunk of 8 with padded steps; on one batch the
    masked L1 falls."""
    _torch()
    stepdir.write(tmp_path, batch_size=8, num_batches=2)
    r = _act([tmp_path, "--steps", 60, "--overfit", "--lr", "3e-3"])
    assert r.returncode == 0, r.stdout + r.stderr
    losses = _losses(r.stdout)
    assert len(losses) == 60 and all(math.isfinite(x) for x in losses), r.stdout
    assert sum(losses[-5:]) / 5 < 0.5 * losses[0], r.stdout


def test_act_example_with_dataloader_workers(tmp_path):
    """The DataLoader path (2 workers over oxefs.Batches), on a BCFHW mount
    without state: it trains past the view's length (the epoch repeats)."""
    _torch()
    stepdir.write(tmp_path, num_batches=3, layout="BCFHW", with_state=False)
    r = _act([tmp_path, "--steps", 5, "--dataloader", "--workers", 2])
    assert r.returncode == 0, r.stdout + r.stderr
    losses = _losses(r.stdout)
    assert len(losses) == 5 and all(math.isfinite(x) for x in losses), r.stdout


def test_act_example_fails_on_a_non_finite_loss(tmp_path):
    _torch()
    stepdir.write(tmp_path, num_batches=1, nan_action=True)
    r = _act([tmp_path, "--steps", 1])
    assert r.returncode != 0
    assert "step 0: loss nan is not finite" in r.stderr, r.stdout + r.stderr


def test_act_example_refuses_a_pair_mount(tmp_path):
    _torch()
    (tmp_path / "info.json").write_text(json.dumps({"frames": {"layout": "BFHWC", "shape": [1, 2, 4, 4, 3]}, "world": 1,
                                                    "train": {"num_batches": 1}, "val": None}))
    r = _act([tmp_path, "--steps", 1])
    assert r.returncode != 0 and "needs a sample: block (step mode)" in r.stderr, r.stderr


def test_no_warnings_reading_steps(steps):
    """Reading mapped read-only arrays into torch does not warn."""
    _torch()
    root, _, _ = steps
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        next(iter(oxefs.Loader(root, torch=True, channels_first=True)))


def test_step_ranks(tmp_path, monkeypatch):
    """A daemon serving several ranks (rank/R/ each a step-mode view):
    Batches and Loader read this process's rank, or the one named."""
    want = {}
    for rank in (0, 1):
        (tmp_path / "rank" / str(rank)).mkdir(parents=True)
        _, want[rank] = stepdir.write(tmp_path / "rank" / str(rank), num_batches=2, seed=rank)
    (tmp_path / "info.json").write_text(json.dumps({"ranks": [0, 1], "world": 2, "rank_dirs": "rank/R"}))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    _same_batch(oxefs.Batches(tmp_path)[1], want[1]["train"][1])
    _same_batch(next(iter(oxefs.Loader(tmp_path, rank=0))), want[0]["train"][0])
