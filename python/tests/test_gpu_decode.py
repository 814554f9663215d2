"""decode: gpu through real mounts of the TFDS- and lerobot-written
fixtures: the daemon serves tiny_bridge's JPEG frames as their bytes and
the package decodes, resizes and augments them (oxefs.Loader(device="cpu"),
the fallback of a machine without a GPU, and oxefs.Batches in DataLoader
workers); the frames equal what a decode: exact mount of the same mix
serves, within the bound the README states. The LeRobot dataset's video
and PNG cameras in the same slots are served decoded, bit for bit exact's.

They need the oxefs binary (OXEFS_BIN, or oxefs on PATH), /dev/fuse, torch
and torchvision; without them they are skipped, with the reason.
"""

import contextlib
import json
import os
import sys

import numpy as np
import pytest

import oxefs
from mounting import REPO, need_mount

# The bounds the README states for decode_frames against the daemon
# (`go test -run TestGPUDecodeFidelity -v ./augment`): with libjpeg-turbo,
# the daemon's own decoder, hue's fixed point is at most a level off and
# everything else equal; with another decoder (torchvision's, where
# libturbojpeg.so.0 does not load) the IDCT differs. Each: the largest
# level difference of any value, and the mean difference.
BOUNDS = {"turbojpeg": (1, 0.001), "other": (48, 1.0)}


def _bound(mnt):
    """The bound for mount mnt's frames: libjpeg-turbo's where both the
    daemon (info.json's decoder) and the package decode with it."""
    from oxefs import _decode

    same = _decode.turbojpeg_available() and "libjpeg-turbo" in str(oxefs.read_info(mnt).get("decoder", ""))
    return BOUNDS["turbojpeg" if same else "other"]


DATA = os.path.join(REPO, "testdata")

# Every fused op, with a crop that resizes: the frames the package must
# rebuild are the augmented ones.
AUGMENT = """augment:
  random_resized_crop: {scale: [0.6, 0.9], ratio: [0.8, 1.25]}
  rotate: 10
  translate: [0.05, 0.05]
  brightness: 0.2
  contrast: 0.2
  saturation: 0.3
  hue: 0.05
  sharpness: [0.5, 1.5]
  random_order: true
  dropout: 0.1
"""


# Pairs have one camera: no dropout.
PAIR_AUGMENT = AUGMENT.replace("  dropout: 0.1\n", "")


def _need_torchvision():
    pytest.importorskip("torch", reason="MISSING python torch: torch is not installed (./scripts/testdeps.sh installs python3-torch)")
    pytest.importorskip("torchvision", reason="MISSING python torchvision: it decodes decode: gpu's JPEG frames "
                                              "(./scripts/testdeps.sh installs python3-torchvision)")


@contextlib.contextmanager
def _mount(cfg):
    """oxefs.mount(cfg); skipped, saying why, where the daemon cannot
    decode the LeRobot fixture's AV1 video (no libavcodec)."""
    try:
        m = oxefs.mount(cfg)
        mnt = m.__enter__()
    except oxefs.OxefsError as e:
        if "libavcodec" in str(e):
            pytest.skip("MISSING libavcodec: the LeRobot fixture's primary camera is AV1 video")
        raise
    try:
        yield mnt
    except BaseException:
        if not m.__exit__(*sys.exc_info()):
            raise
    else:
        m.__exit__(None, None, None)


def _steps_mix(tmp_path, decode):
    cfg = tmp_path / f"steps-{decode}.yaml"
    cfg.write_text(f"""seed: 3
batch_size: 8
num_batches: 6
decode: {decode}
sample:
  cameras:
    primary: {{size: [48, 64], steps: [-1, 0]}}
    wrist: {{size: [40, 40]}}
  action: {{steps: "0:4"}}
{AUGMENT}datasets:
  - name: bridge
    source: {DATA}/datasets/tiny_bridge/1.0.0
    weight: 2
    val_split: val
    cameras: {{primary: steps/observation/image, wrist: steps/observation/wrist_image}}
    action_keys: [steps/action/world_vector]
  - name: lr
    source: {DATA}/lerobot/lerobot_av1
    split: train
    cameras: {{primary: observation.images.top, wrist: observation.images.side}}
    action_keys: [action]
""")
    return str(cfg)


def _pairs_mix(tmp_path, decode):
    cfg = tmp_path / f"pairs-{decode}.yaml"
    cfg.write_text(f"""seed: 4
batch_size: 6
num_batches: 5
image_size: [72, 96]
decode: {decode}
{PAIR_AUGMENT}datasets:
  - name: bridge
    source: {DATA}/datasets/tiny_bridge/1.0.0
    val_split: val
    image_key: steps/observation/image
  - name: kuka
    source: {DATA}/datasets/tiny_kuka/1.0.0
""")
    return str(cfg)


def _host(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _within_bound(got, want, what, bound):
    assert got.shape == want.shape and got.dtype == want.dtype, f"{what}: {got.dtype} {got.shape}, want {want.dtype} {want.shape}"
    d = np.abs(got.astype(np.int16) - want.astype(np.int16))
    most, mean = bound
    assert d.max() <= most, f"{what}: a value {d.max()} levels from decode: exact's (bound {most})"
    assert d.mean() <= mean, f"{what}: mean difference {d.mean():.4f} levels (bound {mean})"
    return d


def _raw(mnt, view, n, name):
    d = os.path.join(mnt, view, "batches") if view else os.path.join(mnt, "batches")
    return np.load(os.path.join(d, f"{n:06d}.{name}.npy"))


@pytest.mark.parametrize("view", ["train", "val"])
def test_step_mount_gpu_equals_exact(tmp_path, view):
    need_mount()
    _need_torchvision()
    val = view == "val"
    slots = ["observation.images.primary", "observation.images.wrist"]
    with _mount(_steps_mix(tmp_path, "exact")) as exact, _mount(_steps_mix(tmp_path, "gpu")) as gpu:
        info = oxefs.read_info(gpu)
        assert [(s["name"], s["decode"]) for s in info["sample"]["slots"]] == [("primary", "gpu"), ("wrist", "gpu")]
        want = list(oxefs.Loader(exact, val=val, device="cpu"))
        got = list(oxefs.Loader(gpu, val=val, device="cpu"))
        assert len(got) == len(want) > 0
        compressed = pixels = 0
        worst = 0
        for n, (g, w) in enumerate(zip(got, want)):
            assert sorted(g) == sorted(w), f"batch {n}: keys {sorted(g)}, want {sorted(w)} (no jpeg_size left)"
            for key in w:
                if key in slots:
                    continue
                if isinstance(w[key], list):
                    assert g[key] == w[key], f"batch {n} {key}"
                else:
                    assert np.array_equal(_host(g[key]), _host(w[key])), f"batch {n} {key}"
            lerobot = np.array([name == "lr" for name in w["dataset_name"]])
            for key in slots:
                gk, wk = _host(g[key]), _host(w[key])
                d = _within_bound(gk, wk, f"{view} batch {n} {key}", _bound(exact))
                worst = max(worst, int(d.max()))
                sizes = _raw(gpu, "val" if val else "", n, key + ".jpeg_size")
                # LeRobot's video (primary) and PNG (wrist) frames are
                # never compressed and are exact's bit for bit.
                assert not sizes[lerobot].any(), f"batch {n} {key}: a LeRobot frame served compressed"
                assert np.array_equal(gk[lerobot], wk[lerobot]), f"batch {n} {key}: LeRobot frames differ"
                compressed += int((sizes > 0).sum())
                pixels += int((sizes == 0).sum())
        # tiny_bridge's frames were compressed; on the train view the
        # LeRobot dataset's and dropped cameras' were not (the val view
        # is tiny_bridge's, not augmented)
        assert compressed > 0, "no frame was served compressed"
        if not val:
            assert pixels > 0, f"{compressed} compressed frames, {pixels} served as pixels"
            assert json.load(open(os.path.join(gpu, "stats.json")))["frames_compressed"] > 0
        print(f"\n{view}: {compressed} frames decoded by the package, {pixels} by the daemon; largest difference {worst} levels")


def test_pair_mount_gpu_equals_exact(tmp_path):
    need_mount()
    _need_torchvision()
    with _mount(_pairs_mix(tmp_path, "exact")) as exact, _mount(_pairs_mix(tmp_path, "gpu")) as gpu:
        info = oxefs.read_info(gpu)
        assert info["frames"]["decode"] == "gpu" and "jpeg_size.npy" in info["files"]
        want = list(oxefs.Loader(exact, device="cpu"))
        got = list(oxefs.Loader(gpu, device="cpu"))
        compressed = 0
        for n, (g, w) in enumerate(zip(got, want)):
            assert sorted(g) == sorted(w), f"batch {n}: keys {sorted(g)}, want {sorted(w)}"
            _within_bound(_host(g["frames"]), _host(w["frames"]), f"batch {n} frames", _bound(exact))
            assert np.array_equal(_host(g["augment"]), _host(w["augment"])), f"batch {n}: recorded parameters differ"
            compressed += int((_raw(gpu, "", n, "jpeg_size") > 0).sum())
        assert compressed > 0


def test_gpu_mount_through_dataloader_workers(tmp_path):
    """oxefs.Batches decodes in each DataLoader worker, on the CPU: the
    same frames as Loader(device="cpu"), whatever the worker."""
    need_mount()
    _need_torchvision()
    import torch

    with _mount(_steps_mix(tmp_path, "gpu")) as gpu:
        # The Loader first: the workers are forked from a process whose
        # decoding threads have run.
        want = list(oxefs.Loader(gpu, stop=4, device="cpu"))
        ds = oxefs.Batches(gpu, torch=True)
        # timeout: a worker that hangs (its decoding threads lost at the
        # fork) fails the test instead of stalling the suite
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, sampler=range(4), timeout=120)
        got = list(dl)
        for n, (g, w) in enumerate(zip(got, want)):
            assert "observation.images.primary.jpeg_size" not in g
            for key in ("observation.images.primary", "observation.images.wrist"):
                assert torch.equal(g[key], w[key]), f"batch {n} {key}: the worker's frames are not the Loader's"


def test_lerobot_loader_over_gpu_mount(tmp_path):
    """oxefs.lerobot.Loader decodes a decode: gpu mount's frames on its
    device: LeRobot's float frames equal the decode: exact mount's within
    the bound (in levels of 1/255)."""
    need_mount()
    _need_torchvision()
    import torch
    from oxefs import lerobot

    with _mount(_steps_mix(tmp_path, "exact")) as exact, _mount(_steps_mix(tmp_path, "gpu")) as gpu:
        want = list(lerobot.Loader(exact, device="cpu", stop=3))
        got = list(lerobot.Loader(gpu, device="cpu", stop=3))
        most, mean = _bound(exact)
        for n, (g, w) in enumerate(zip(got, want)):
            assert sorted(g) == sorted(w), f"batch {n}: keys {sorted(g)}, want {sorted(w)}"
            for key in ("observation.images.primary", "observation.images.wrist"):
                assert g[key].dtype == torch.float32 and g[key].shape == w[key].shape, key
                d = (g[key] - w[key]).abs() * 255
                assert d.max() <= most + 1e-3 and d.mean() <= mean, f"batch {n} {key}: max {d.max():.3f} mean {d.mean():.5f} levels"
