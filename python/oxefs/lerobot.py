"""A step-mode mount as LeRobot sees a dataset: batches, features, statistics.

Batches are keyed and shaped as ``LeRobotDataset`` + a torch ``DataLoader``
collate them, so that a lerobot policy (and its pre-processor) takes them
as they come:

- ``observation.images.<slot>``: float32 in [0, 1], ``[B, 3, H, W]``
  (``[B, T, 3, H, W]`` with several deltas), converted from the mount's
  uint8 on ``device`` after the copy there (pinned memory and an
  asynchronous copy when ``device`` is a CUDA device);
- ``observation.state`` ``[B, S]`` and ``action`` ``[B, A]`` for one
  delta, ``[B, T, S]`` / ``[B, H, A]`` for several;
- ``<key>_is_pad`` (bool ``[B, T]``) for every key whose deltas are not
  just ``[0]`` (LeRobot gives none for a key without ``delta_timestamps``;
  ``[B]`` for one other delta);
- ``task`` (list of B str), ``episode_index``, ``frame_index`` (int64
  ``[B]``), ``timestamp`` (float32 ``[B]``: frame_index / fps, as a
  LeRobot dataset stores it), ``index`` (int64 ``[B]``: the frame's
  index across its dataset, the episode's dataset_from_index +
  frame_index; -1 for an RLDS dataset), ``dataset_index`` (int64
  ``[B]``);
- and oxefs's own ``image_mask``, ``state_mask``, ``action_mask`` (a mix
  of several embodiments pads state and action to its widest) and
  ``sample_is_pad`` (the val view's repeats).

``features(mount)`` gives lerobot's ``PolicyFeature`` dicts (what
``lerobot.datasets.utils.dataset_to_policy_features`` makes of a
dataset's features), ``stats(mount)`` one set of statistics for the mix
under lerobot's names, combined as lerobot's ``aggregate_stats`` does
(or one per dataset), and ``Meta(mount)`` both, in the shape of
``LeRobotDatasetMetadata`` for ``lerobot.policies.factory.make_policy``.
lerobot is imported only where installed (``features`` falls back to a
stand-in with the same fields).
"""

import math
import re
from collections import namedtuple

import numpy as np

from ._batches import Loader as _Loader
from ._batches import _path, _reader, _StepReader, read_info

# The quantile keys of a lerobot statistic, in order.
QUANTILES = ("q01", "q10", "q50", "q90", "q99")

_EPISODE = re.compile(r"episode_(\d+)$")


def _info(mount):
    return mount if isinstance(mount, dict) else read_info(_path(mount))


def _steps(info):
    """The step reader of a mount's info.json (its arrays and slots); a
    mount of frame pairs raises ValueError."""
    r = _reader(info, "info.json", None, 0, False)
    if not isinstance(r, _StepReader):
        raise ValueError("oxefs.lerobot: the mount serves frame pairs; a LeRobot policy needs step samples (a mix with a sample: block)")
    return r


def deltas(mount):
    """Each key's deltas, in steps, of the mix's first dataset (every
    dataset has as many; deltas in seconds differ in steps where fps
    does): ``{"observation.images.<slot>": [...], "observation.state":
    [...], "action": [...]}``. A policy's chunk is ``len(deltas["action"])``."""
    info = _info(mount)
    _steps(info)
    ds = next(iter(info["datasets"].values()))["deltas"]
    out = {f"observation.images.{k}": v for k, v in ds["slots"].items()}
    out["observation.state"] = ds["state"]
    out["action"] = ds["action"]
    return out


def _shapes(info):
    """name → (dtype, shape) of every array a batch holds."""
    return {a.name: (a.dtype, a.shape) for a in _steps(info).arrays}


def features(mount):
    """lerobot's policy features of a mount: ``{key: PolicyFeature(type,
    shape)}`` for each camera slot (VISUAL, ``(3, H, W)``), the state
    (STATE, ``(S,)``, the mix's widest) and the action (ACTION,
    ``(A,)``), as ``dataset_to_policy_features`` gives them. ``type`` is
    lerobot's ``FeatureType`` where lerobot is installed, else its name
    (``"VISUAL"``…)."""
    try:
        from lerobot.configs.types import FeatureType, PolicyFeature

        make, kind = PolicyFeature, FeatureType
    except ImportError:
        make, kind = _PolicyFeature, _FeatureType
    info = _info(mount)
    shapes = _shapes(info)
    out = {}
    for slot in _steps(info).slots:
        h, w = slot["size"]
        out["observation.images." + slot["name"]] = make(type=kind.VISUAL, shape=(3, h, w))
    if "observation.state" in shapes:
        out["observation.state"] = make(type=kind.STATE, shape=(shapes["observation.state"][1][-1],))
    if "action" in shapes:
        out["action"] = make(type=kind.ACTION, shape=(shapes["action"][1][-1],))
    return out


_PolicyFeature = namedtuple("PolicyFeature", "type shape")


class _FeatureType:
    VISUAL, STATE, ACTION = "VISUAL", "STATE", "ACTION"


def _dataset_stats(name, d, info, quantiles):
    """One dataset's statistics from info.json under lerobot's names, the
    state and action padded to the mix's widest (see stats)."""
    s = d.get("stats")
    if not s:
        raise ValueError(
            f"oxefs.lerobot.stats: the mount has no statistics for dataset {name}: run `oxefs stats --config MIX "
            f"--cache-dir DIR` with the mount's cache directory before mounting (or set normalize in the mix)")
    if quantiles not in ("exact", "per_episode"):
        raise ValueError(f"quantiles {quantiles!r}: need 'exact' (oxefs's) or 'per_episode' (lerobot's)")
    out = {}

    def one(st, width=None, image=False):
        qs = st.get("per_episode") if quantiles == "per_episode" else st
        if qs is None:
            raise ValueError(f"oxefs.lerobot.stats: dataset {name} has no per-episode quantiles: recompute with `oxefs stats`")
        r = {k: np.asarray(st[k], np.float64) for k in ("mean", "std", "min", "max")}
        r.update({k: np.asarray(qs[k], np.float64) for k in QUANTILES})
        have = len(r["mean"])
        if width is not None and width > have:
            # A dimension the dataset lacks is 0 in its batches: these
            # keep it 0 under every lerobot normalisation.
            fill = {"mean": 0, "std": 1, "min": -1, "max": 1, "q01": -1, "q10": -1, "q50": 0, "q90": 1, "q99": 1}
            r = {k: np.concatenate([v, np.full(width - have, fill[k], np.float64)]) for k, v in r.items()}
        if image:
            r = {k: v.reshape(3, 1, 1) for k, v in r.items()}
        r["count"] = np.array([st["count"]], np.int64)
        r["_dims"] = have
        return r

    if s.get("action"):
        out["action"] = one(s["action"], info.get("action_dim"))
    if s.get("state"):
        out["observation.state"] = one(s["state"], info.get("state_dim"))
    for slot, st in (s.get("images") or {}).items():
        out["observation.images." + slot] = one(st, image=True)
    return out


def _aggregate(items):
    """lerobot's aggregate_feature_stats over datasets, each dimension over
    the datasets that have it: weighted mean, the variance by the parallel
    rule, min of mins, max of maxes, quantiles weighted by count."""
    counts = np.array([it["count"][0] for it in items], np.float64)
    shape = items[0]["mean"].shape
    width = items[0]["mean"].reshape(-1).shape[0]
    # w[i, j]: dataset i's count where it has dimension j, else 0.
    w = np.array([[c if j < it["_dims"] or len(shape) == 3 else 0 for j in range(width)] for c, it in zip(counts, items)])
    total = w.sum(axis=0)
    safe = np.where(total > 0, total, 1)

    def stack(k):
        return np.stack([it[k].reshape(-1) for it in items])

    mean = (stack("mean") * w).sum(axis=0) / safe
    var = ((stack("std") ** 2 + (stack("mean") - mean) ** 2) * w).sum(axis=0) / safe
    has = w > 0
    out = {
        "mean": mean,
        "std": np.sqrt(var),
        "min": np.where(has, stack("min"), np.inf).min(axis=0),
        "max": np.where(has, stack("max"), -np.inf).max(axis=0),
        "count": np.array([int(counts.sum())], np.int64),
    }
    for k in QUANTILES:
        out[k] = (stack(k) * w).sum(axis=0) / safe
    lone = total == 0  # padding in every dataset: keep its neutral values
    for k in ("mean", "std", "min", "max") + QUANTILES:
        out[k] = np.where(lone, items[0][k].reshape(-1), out[k]).reshape(shape)
    return out


def stats(mount, quantiles="exact", per_dataset=False):
    """The mix's statistics under lerobot's names (``action``,
    ``observation.state``, ``observation.images.<slot>``), each a dict of
    numpy arrays ``mean``, ``std``, ``min``, ``max``, ``q01`` … ``q99``
    and ``count``; images per channel, shaped ``(3, 1, 1)`` in [0, 1] as
    lerobot stores them. They are those ``oxefs stats`` computed for each
    dataset (the mount shows them in info.json once computed with its
    cache directory), combined across datasets as lerobot's
    ``aggregate_stats`` combines episodes: count-weighted mean, the
    variance by the parallel rule, min of mins, max of maxes, quantiles
    count-weighted; a state or action dimension only over the datasets
    that have it. ``per_dataset=True`` gives ``{dataset: stats}`` instead,
    for normalising per embodiment, each padded to the mix's widest state
    and action (mean 0, std 1, min −1, max 1: a padded 0 stays 0).

    quantiles: ``"exact"`` (oxefs's quantiles over every step of the
    dataset) or ``"per_episode"`` (lerobot's: each episode's own, by
    lerobot's histogram rule, averaged weighted by steps), for a model
    trained under lerobot and normalised with QUANTILES (pi0, SmolVLA…)
    to see the values it saw there.
    """
    info = _info(mount)
    per = {name: _dataset_stats(name, d, info, quantiles) for name, d in info["datasets"].items()}
    strip = lambda s: {k: {f: v for f, v in x.items() if f != "_dims"} for k, x in s.items()}  # noqa: E731
    if per_dataset:
        return {name: strip(s) for name, s in per.items()}
    keys = []
    for s in per.values():
        keys += [k for k in s if k not in keys]
    return {k: _aggregate([s[k] for s in per.values() if k in s]) for k in keys}


class Meta:
    """What ``lerobot.policies.factory.make_policy(cfg, ds_meta=...)``
    reads of a ``LeRobotDatasetMetadata``, for a mount: ``features``
    (lerobot's dataset feature dicts: dtype, shape, names) and ``stats``
    (``stats(mount, quantiles)``)."""

    def __init__(self, mount, quantiles="exact"):
        info = _info(mount)
        self.info = info
        self.stats = stats(info, quantiles=quantiles)
        self.features = {}
        for key, f in features(info).items():
            if key.startswith("observation.images."):
                c, h, w = f.shape
                self.features[key] = {"dtype": "video", "shape": [h, w, c], "names": ["height", "width", "channels"]}
            else:
                self.features[key] = {"dtype": "float32", "shape": list(f.shape), "names": None}
        ds = next(iter(info["datasets"].values()))
        self.fps = ds.get("fps")

    def __bool__(self):
        return True


class Loader:
    """A mount's step batches as LeRobot's dicts (see the module), on
    ``device``.

    The mount's arrays are read as ``oxefs.Loader`` reads them (read
    ahead on a thread; with a CUDA device into pinned memory), each
    copied to ``device`` as it is, and only there are the frames turned
    into floats: on a GPU the trainer's CPU never touches a pixel.
    ``device="cpu"`` (the default where torch sees no CUDA device)
    converts on the CPU, the fallback of a machine without one.
    ``val``, ``start``, ``stop``, ``epoch``, ``readahead`` and ``rank``
    are ``oxefs.Loader``'s.
    """

    def __init__(self, mount, device=None, val=False, start=None, stop=None, epoch=None, readahead=2, rank=None):
        import torch

        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        cuda = self.device.type == "cuda"
        self.loader = _Loader(mount, val=val, start=start, stop=stop, epoch=epoch, readahead=readahead, torch=True,
                              pin_memory=cuda, channels_first=True, rank=rank, device=self.device)
        info = self.loader.batches.info
        self.info = info
        self.deltas = deltas(info)
        self.fps = {name: d.get("fps") for name, d in info["datasets"].items()}
        self.images = [k for k in _shapes(info) if k.startswith("observation.images.") and k in self.deltas]

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for batch in self.loader:
            yield self.convert(batch)

    def convert(self, batch):
        """One batch of oxefs.Loader(torch=True, channels_first=True) as
        LeRobot's dict on the device."""
        import torch

        dev, nb = self.device, self.device.type == "cuda"
        out = {}
        for key, x in batch.items():
            if not isinstance(x, torch.Tensor) or key.endswith("_is_pad"):
                continue
            base = key
            x = x.to(dev, non_blocking=nb)
            if key in self.images:
                x = x.to(torch.float32, memory_format=torch.contiguous_format).div_(255)
            deltas = self.deltas.get(base)
            if deltas is not None and len(deltas) == 1:
                x = x[:, 0]
            out[key] = x
            if deltas is not None and deltas != [0]:
                pad = batch[key + "_is_pad"].to(dev, non_blocking=nb)
                out[key + "_is_pad"] = pad[:, 0] if len(deltas) == 1 else pad
        out["sample_is_pad"] = batch["sample_is_pad"].to(dev, non_blocking=nb)
        if "task" in batch:
            out["task"] = list(batch["task"])
        if "episode_id" in batch:
            eps = [_EPISODE.search(e) for e in batch["episode_id"]]
            out["episode_index"] = torch.tensor([int(m.group(1)) if m else -1 for m in eps], dtype=torch.int64).to(dev, non_blocking=nb)
            names = batch["dataset_name"]
            fps = [self.fps.get(n) or math.nan for n in names]
            t = batch["frame_index"].to(torch.float64) / torch.tensor(fps, dtype=torch.float64)
            out["timestamp"] = t.to(torch.float32).to(dev, non_blocking=nb)
        return out
