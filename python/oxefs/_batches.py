"""Batches of a mount as numpy arrays or torch tensors."""

import json
import os
import queue
import threading
import warnings

import numpy as np

from ._dist import rank_world

# Metadata fields that become arrays, and their dtypes; the others (names,
# ids, language) stay lists of str.
_ARRAY_FIELDS = {
    "action": np.float32,
    "initial_state": np.float32,
    "action_mask": np.bool_,
    "state_mask": np.bool_,
    "frame_idx": np.int64,
    "frame_indices": np.int64,
    "offset": np.int64,
    "is_repeat": np.bool_,
}


def _path(mount):
    """The mountpoint of a path or of an oxefs.Mount."""
    return os.fspath(getattr(mount, "path", mount))


def read_info(mount):
    """info.json of a mount (or of a rank directory), as a dict."""
    with open(os.path.join(_path(mount), "info.json")) as f:
        return json.load(f)


def read_stats(mount):
    """stats.json of a mount (its live counters), as a dict."""
    with open(os.path.join(_path(mount), "stats.json")) as f:
        return json.load(f)


def rank_dir(mount, rank=None):
    """The directory that serves this process's batches.

    A daemon started with --ranks serves rank R under MOUNT/rank/R; rank
    None takes this process's rank from torch.distributed or the RANK
    environment variable (see rank_world). A single-rank mount is its own
    directory; there, a process of a larger world must be the rank the
    mount was started for, or every rank would read the same batches.
    Mismatches raise ValueError naming both.
    """
    path = _path(mount)
    info = read_info(path)
    if rank is None:
        rank, world = rank_world()
    else:
        world = info["world"]
    if "ranks" in info:
        if world != info["world"]:
            raise ValueError(f"{path} serves a world of {info['world']} ranks, but this process is rank {rank} of {world}")
        if rank not in info["ranks"]:
            raise ValueError(f"{path} serves ranks {info['ranks']}, not rank {rank}: start this node's daemon with --ranks covering it")
        return os.path.join(path, "rank", str(rank))
    if world > 1 and (info.get("world", 1), info.get("rank", 0)) != (world, rank):
        raise ValueError(
            f"{path} serves rank {info.get('rank', 0)} of {info.get('world', 1)}, but this process is rank {rank} of {world}: "
            f"mount with --world {world} --ranks covering every local rank (or --rank {rank} --world {world})"
        )
    return path


def _meta_arrays(meta):
    """A batch's .json as a dict of numpy arrays and lists."""
    out = {}
    for key, value in meta.items():
        dtype = _ARRAY_FIELDS.get(key)
        if dtype is None:
            out[key] = value
            continue
        if dtype is np.float32:
            # JSON null stands for a non-finite value: NaN here.
            value = [[np.nan if x is None else x for x in row] for row in value]
        out[key] = np.asarray(value, dtype=dtype)
    return out


def _to_torch(batch, pin_memory=False):
    import torch

    out = {}
    for key, value in batch.items():
        if isinstance(value, np.ndarray):
            # Mapped arrays are copy-on-write (_MMAP_MODE): writable, so
            # torch shares their memory without a warning.
            t = torch.from_numpy(value)
            out[key] = t.pin_memory() if pin_memory and not t.is_pinned() else t
        else:
            out[key] = value
    return out


def _can_pin():
    """Whether torch can pin host memory here (it needs an accelerator):
    without one, pin_memory=True warns once and reads unpinned."""
    import torch

    if torch.cuda.is_available():
        return True
    warnings.warn("oxefs.Loader(pin_memory=True): torch sees no CUDA device, so batches are not pinned", RuntimeWarning, stacklevel=3)
    return False


def _read_pinned(name, pin=True):
    """The .npy file name read straight into a new pinned tensor: one read
    of the file into page-locked memory, no mapping, no second copy. Pinned
    blocks come from torch's caching host allocator, so after the first
    few batches no memory is pinned anew; a block goes back to it when its
    tensor is freed (and any copy from it has finished), never before.
    pin=False reads into ordinary memory the same way (for tests on
    machines without an accelerator)."""
    import torch

    with open(name, "rb", buffering=0) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"{name}: .npy format version {version}, need 1.0 or 2.0")
        if fortran or dtype.hasobject:
            raise ValueError(f"{name}: not a C-ordered array of plain values")
        t = torch.empty(shape, dtype=torch.from_numpy(np.empty(0, dtype)).dtype, pin_memory=pin)
        if t.numel() == 0:
            return t  # nothing to read (and memoryview cannot cast an empty shape)
        view = memoryview(t.numpy()).cast("B")
        got = 0
        while got < len(view):
            n = f.readinto(view[got:])
            if not n:
                raise OSError(f"{name}: ends after {got} of {len(view)} array bytes")
            got += n
    return t


class _Array:
    """One array of a step-mode batch, as info.json's sample.arrays lists it."""

    __slots__ = ("name", "file", "dtype", "shape")

    def __init__(self, name, file, dtype, shape):
        self.name, self.file, self.dtype, self.shape = name, file, dtype, shape


def _step_arrays(info, path):
    """info.json's sample.arrays: each array's name, file suffix, dtype and
    shape, in the batch's order. A malformed entry raises ValueError naming
    info.json, the entry and the fields it needs."""
    entries = info["sample"].get("arrays")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}/info.json: sample.arrays is {entries!r}, need a list of arrays (name, file, dtype, shape)")
    out = []
    for e in entries:
        try:
            a = _Array(str(e["name"]), str(e["file"]), np.dtype(e["dtype"]), tuple(int(n) for n in e["shape"]))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{path}/info.json: sample.arrays entry {e!r}: {err!r}; need name, file, dtype (a NumPy dtype string) and shape") from None
        if a.dtype.hasobject or "/" in a.file:
            raise ValueError(f"{path}/info.json: sample.arrays entry {e!r}: need a plain dtype and a file name in batches/")
        out.append(a)
    return out


# How frames are mapped: copy-on-write (MAP_PRIVATE). The mount's files
# are read-only; a read-only mapping handed to torch (which cannot mark a
# tensor read-only) kills the process with SIGSEGV at the first in-place
# write, as an augmentation does. A private mapping reads the file's pages
# without a copy, and a write copies only the pages it touches into the
# process's own memory: the file, and every other reader, never see it.
_MMAP_MODE = "c"


# Channels-first view of a frames array, [B, T, 3, H, W], per layout.
_CHANNELS_FIRST = {"BFHWC": (0, 1, 4, 2, 3), "BCFHW": (0, 2, 1, 3, 4)}


def _frames_layout(info, shapes, path):
    """The layout of a mount's frames arrays: info.json's frames.layout or
    config.layout, else what the shapes (5 dims each) say; a layout that
    the shapes contradict raises ValueError naming both."""
    layout = (info.get("frames") or {}).get("layout") or (info.get("config") or {}).get("layout")
    fits = {
        "BFHWC": all(len(s) == 5 and s[4] == 3 for s in shapes),
        "BCFHW": all(len(s) == 5 and s[1] == 3 for s in shapes),
    }
    if layout is None:
        layout = "BFHWC" if fits["BFHWC"] else "BCFHW"
    if layout not in fits:
        raise ValueError(f"{path}/info.json: frames layout {layout!r}, need one of {sorted(fits)}")
    if not fits[layout]:
        raise ValueError(f"{path}/info.json: frames layout {layout} does not fit the frames shapes {[list(s) for s in shapes]}")
    return layout


def _decode_compressed(batch, slots, resize, device):
    """Decodes the JPEG frames of a decode: gpu batch in place of their
    bytes (see decode_batch), dropping the sizes arrays: the batch becomes
    what decode: exact serves, within the stated bound. device None keeps
    frames as they were read (numpy arrays or CPU tensors), decoded on the
    CPU; a device makes every decoded frames array a torch tensor there."""
    from ._decode import decode_frames

    for key, sizes_key, aug_key in slots:
        frames = batch[key]
        sizes = batch.pop(sizes_key)
        sizes = (sizes.numpy() if hasattr(sizes, "numpy") else np.asarray(sizes)).reshape(-1)
        b, t, h, w = frames.shape[:4]
        host = frames.numpy() if hasattr(frames, "numpy") else frames
        flat = host.reshape(b * t, h * w * 3)
        idx = np.flatnonzero(sizes)
        jpegs = [flat[j, : sizes[j]] for j in idx]
        params = None
        if aug_key is not None and len(idx):
            rows = batch[aug_key]
            rows = rows.numpy() if hasattr(rows, "numpy") else np.asarray(rows)
            params = rows[idx // t]
        if device is None:
            if len(idx):
                out = decode_frames(jpegs, params, h, w, resize, "cpu")
                host.reshape(b * t, h, w, 3)[idx] = out.numpy()
            continue
        import torch

        dev = torch.device(device)
        x = torch.empty((b * t, h, w, 3), dtype=torch.uint8, device=dev)
        pix = np.flatnonzero(sizes == 0)
        if len(pix):
            x[torch.from_numpy(pix).to(dev)] = torch.from_numpy(host.reshape(b * t, h, w, 3)[pix]).to(dev, non_blocking=True)
        if len(idx):
            x[torch.from_numpy(idx).to(dev)] = decode_frames(jpegs, params, h, w, resize, dev)
        batch[key] = x.view(b, t, h, w, 3)
    return batch


def _reader(info, path, batches, length, mmap):
    """The reader of a mount's batches, picked once from info.json: step
    samples (info.json has "sample") or frame pairs. It is the one place
    that looks."""
    if info.get("sample") is not None:
        return _StepReader(info, path, batches, length, mmap)
    return _PairReader(info, batches, length, mmap)


class _PairReader:
    """A pair-mode batch: NNNNNN.npy (the frames), every other .npy file
    info.json's files lists (augment.npy, an augmented mix's parameters:
    "augment"), each named by its file, and the metadata of NNNNNN.json as
    arrays."""

    def __init__(self, info, batches, length, mmap):
        self.dir, self.length, self.mmap = batches, length, mmap
        self.frames = ["frames"]
        # decode: gpu: (frames, JPEG sizes, augmentation parameters or
        # None); frames that may hold JPEG bytes are mapped, never read
        # whole
        self.compressed = []
        if (info.get("frames") or {}).get("decode") == "gpu":
            self.compressed = [("frames", "jpeg_size", "augment" if "augment.npy" in info.get("files", []) else None)]
        self.mapped = {k for k, _, _ in self.compressed}
        self.frame_shapes = [tuple(info["frames"]["shape"])] if "frames" in info else []
        self.others = [f[: -len(".npy")] for f in info.get("files", ["npy"]) if f != "npy" and f.endswith(".npy") and "/" not in f]

    def read(self, index, name, pinned):
        try:
            if pinned and "frames" not in self.mapped:
                frames = _read_pinned(name + ".npy")
            else:
                frames = np.load(name + ".npy", mmap_mode=_MMAP_MODE if self.mmap or "frames" in self.mapped else None)
        except FileNotFoundError:
            raise IndexError(f"batch {index}: {name}.npy does not exist (the view lists {self.length})") from None
        batch = {"frames": frames}
        for key in self.others:
            path = f"{name}.{key}.npy"
            batch[key] = _read_pinned(path) if pinned else np.load(path)
        return batch

    def meta(self, meta):
        return _meta_arrays(meta)


class _StepReader:
    """A step-mode batch: each array of info.json's sample.arrays from its
    own file, checked against the dtype and shape info.json gives it; the
    strings of NNNNNN.json stay lists of str, its index (each sample's
    frame index across its dataset, LeRobot's "index"; -1 for RLDS) is
    int64 [B]."""

    def __init__(self, info, path, batches, length, mmap):
        self.dir, self.length, self.mmap = batches, length, mmap
        self.arrays = _step_arrays(info, path)
        # The camera slots, in order: name, size [h, w], deltas.
        self.slots = info["sample"].get("slots", [])
        slots = {"observation.images." + s["name"] for s in self.slots}
        self.frames = [a.name for a in self.arrays if a.name in slots]
        self.frame_shapes = [a.shape for a in self.arrays if a.name in slots]
        # decode: gpu slots: (frames, JPEG sizes, augmentation parameters
        # or None); frames that may hold JPEG bytes are mapped, never read
        # whole
        names = {a.name for a in self.arrays}
        self.compressed = []
        for s in self.slots:
            if s.get("decode") == "gpu":
                key = "observation.images." + s["name"]
                aug = key + ".augment"
                self.compressed.append((key, s.get("jpeg_size") or key + ".jpeg_size", aug if aug in names else None))
        self.mapped = {k for k, _, _ in self.compressed}

    def read(self, index, name, pinned):
        batch = {}
        for a in self.arrays:
            path = f"{name}.{a.file}"
            try:
                if pinned and a.name not in self.mapped:
                    x = _read_pinned(path)
                else:
                    mapped = a.name in self.mapped or (self.mmap and a.name in self.frames)
                    x = np.load(path, mmap_mode=_MMAP_MODE if mapped else None)
            except FileNotFoundError:
                raise IndexError(f"batch {index}: {path} does not exist (the view lists {self.length})") from None
            dtype = x.dtype if isinstance(x, np.ndarray) else x.numpy().dtype
            if dtype != a.dtype or tuple(x.shape) != a.shape:
                raise ValueError(
                    f"{path}: {dtype.str} {list(x.shape)}, but info.json's sample.arrays says {a.name} is {a.dtype.str} {list(a.shape)}"
                )
            batch[a.name] = x
        return batch

    def meta(self, meta):
        if "index" in meta:
            meta = dict(meta, index=np.asarray(meta["index"], dtype=np.int64))
        return meta


class Batches:
    """The batches of a mount (or of its validation view), by index.

    Each item is one whole batch, a dict. In pair mode (the default) it has
    "frames" (uint8, [B, F, H, W, 3] or [B, 3, F, H, W] as info.json's
    frames.layout says), "augment" when the mix is augmented (float32
    [B, 18], each sample's parameters, info.json's augment.columns) and
    the metadata fields (action, action_mask,
    initial_state, state_mask, frame_idx, frame_indices, offset as arrays;
    dataset_name, episode_id, language, robot as lists; on the val view
    is_repeat, bool, true for the samples that only fill its last batch). In step mode
    (info.json has a sample section) it has every array that its sample.arrays
    lists, by its name (observation.images.<slot>, its _is_pad,
    image_mask, observation.state, action, their masks, dataset_index,
    frame_index, sample_is_pad: the val view's repeats...), each read from
    its own batches/NNNNNN.<file>, plus the
    strings of NNNNNN.json (dataset_name, episode_id, task, robot; lists of
    str) when the mount writes one. It is a map-style dataset: use it with
    a torch DataLoader (batch_size=None, since items are batches already)
    or index it directly.

    Indices are batch numbers, the files' names. len() is the view's
    listing, one epoch (iterating gives those); the train view also serves
    every later index up to max_batch (info.json's train.max_batch: the
    next epochs), so batches[n] works for any n in [0, max_batch]. The val
    view is one pass: max_batch is len() - 1.

    mmap: frames (step mode: the observation.images.<slot> arrays; the
    small arrays are read) are mapped from the file copy-on-write
    (np.load(mmap_mode="c")) instead of read into memory: writing into
    them (an in-place augmentation) copies the pages it touches and never
    reaches the file; torch: items hold torch tensors (sharing
    the arrays' memory) instead of numpy arrays; channels_first: frames as
    a [B, T, 3, H, W] view (LeRobot's layout; no copy), whatever the
    mount's layout. rank: which rank's batches a daemon serving several
    (--ranks) gives; None takes this process's rank from torch.distributed
    or the environment (see rank_dir).

    A mount with decode: gpu serves JPEG frames as their compressed bytes
    (and their sizes, observation.images.<slot>.jpeg_size or jpeg_size);
    every item has them decoded, resized and augmented as the batch
    records, in their frames' places, and no sizes array: the same dict as
    decode: exact, within the README's bound. device names where (a torch
    device; None: the CPU, into the arrays as read).
    """

    def __init__(self, mount, val=False, meta=True, mmap=False, torch=False, rank=None, channels_first=False, device=None):
        self.path = rank_dir(mount, rank)
        info = read_info(self.path)
        view = info["val"] if val else info["train"]
        if view is None:
            raise ValueError(f"{self.path} has no validation view: no dataset of its mix names a val_split")
        self.dir = os.path.join(self.path, "val", "batches") if val else os.path.join(self.path, "batches")
        self.info = info
        self.length = view["num_batches"]
        self.max_batch = view.get("max_batch", self.length - 1)
        self.meta = meta and info.get("meta") != "none"
        self.mmap = mmap
        self.torch = torch
        self.reader = _reader(info, self.path, self.dir, self.length, mmap)
        self.compressed = self.reader.compressed
        self.resize = (info.get("config") or {}).get("resize", "squash")
        self.device = device
        self.frames = self.reader.frames
        shapes = self.reader.frame_shapes
        self.channels_first = None
        if channels_first:
            self.channels_first = _CHANNELS_FIRST[_frames_layout(info, shapes, self.path)]

    def __len__(self):
        return self.length

    def __iter__(self):
        # One epoch: the listing. (Without this, iteration would call
        # __getitem__ up to max_batch.)
        for i in range(self.length):
            yield self[i]

    def read(self, index, pinned=False, device=None):
        """Batch index as numpy arrays, whatever torch says; pinned: its
        arrays (pair mode: the frames) as pinned torch tensors read
        straight from the files (see Loader). A decode: gpu batch's JPEG
        frames are decoded on device (None: the CPU, into the arrays)."""
        if index < 0:
            raise IndexError(f"batch {index}: negative index")
        name = os.path.join(self.dir, f"{index:06d}")
        batch = self.reader.read(index, name, pinned)
        if self.compressed:
            try:
                _decode_compressed(batch, self.compressed, self.resize, device)
            except RuntimeError as e:
                raise ValueError(f"batch {index} of {self.dir}: a compressed frame does not decode: {e}") from e
        if self.meta:
            with open(name + ".json") as f:
                batch.update(self.reader.meta(json.load(f)))
        return batch

    def _finish(self, batch, torch, pin_memory=False):
        """batch as the caller asked: torch tensors, frames channels first."""
        if torch:
            batch = _to_torch(batch, pin_memory)
        if self.channels_first is not None:
            for key in self.frames:
                x = batch[key]
                batch[key] = x.permute(self.channels_first) if hasattr(x, "permute") else x.transpose(self.channels_first)
        return batch

    def __getitem__(self, index):
        if not 0 <= index <= self.max_batch:
            raise IndexError(f"batch {index}: the view serves batches 0..{self.max_batch} ({self.length} listed, one epoch)")
        return self._finish(self.read(index, device=self.device), self.torch)


def _batch_range(batches, start, stop, epoch, view):
    """Loader's [start, stop), from its start, stop and epoch arguments
    (see Loader). Bad arguments raise ValueError naming them and the
    batches the view serves."""
    n, last = len(batches), batches.max_batch
    where = f"the {view} view of {batches.path} lists {n} batches per epoch and serves 0..{last}"
    if n < 1:
        raise ValueError(f"{where}: no epoch to read")
    if epoch is not None:
        if not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch {epoch!r}: need an int ≥ 0")
        lo, hi = epoch * n, (epoch + 1) * n
        if hi - 1 > last:
            raise ValueError(f"epoch {epoch}: {where}")
        if start is None:
            start = lo
        elif not lo <= start <= hi:
            raise ValueError(f"start {start} is not in epoch {epoch}, batches {lo}..{hi - 1}: pass epoch {start // n} or no epoch")
        stop = hi if stop is None else stop
    start = 0 if start is None else start
    if not 0 <= start <= last:
        raise ValueError(f"start {start}: need a batch index in 0..{last} ({where})")
    if stop is None:
        stop = (start // n + 1) * n  # the end of start's epoch
    if stop > last + 1:
        raise ValueError(f"stop {stop} is past batch {last}: {where}")
    return start, max(stop, start)


class Loader:
    """Iterates over a mount's batches with the next ones read ahead on a
    thread, no DataLoader workers needed: the daemon builds batches in
    parallel already, and worker processes would only copy them again.

    Each batch is a dict as Batches gives it (pair mode or step mode).
    Frames are mapped copy-on-write (np.load(mmap_mode="c")), and with
    torch=True handed to torch without a copy (torch.from_numpy): writing
    into them works and never touches the file; step mode's small arrays
    are read. pin_memory=True reads instead every array file (pair mode:
    the frames) straight into page-locked memory (one read of each file,
    on the read-ahead thread), so that .to("cuda", non_blocking=True) is
    an asynchronous DMA; without a CUDA device it warns once and reads
    unpinned. channels_first=True gives frames as a [B, T, 3, H, W] view
    (LeRobot's layout, still uint8: convert on the GPU). readahead is how
    many batches are read ahead. rank: as for Batches. device: where a
    decode: gpu mount's JPEG frames are decoded, resized and augmented
    (a torch device, "cuda" or "cpu"; None: the CPU, into the arrays as
    read); with a device, items are torch tensors and those frames
    arrays are on it.

    Epochs and resume. An epoch is the view's listing, N = len(Batches)
    batches; epoch e is batches [e*N, (e+1)*N), which the train view
    serves by index (each epoch new samples, no config change). start and
    stop are batch indices (the files' names) and select [start, stop);
    epoch=e makes them default to epoch e's bounds, and a start given
    with it must lie in epoch e. Without epoch, start defaults to 0 and
    stop to the end of start's epoch, so Loader(mnt, start=150) on a
    100-batch listing reads 150..199. Batches are a pure function of their
    index, so a run resumed at batch n reads the bytes an uninterrupted
    run reads there:

        for epoch in range(step // N, epochs):
            for batch in Loader(mnt, epoch=epoch, start=step):
                ...; step += 1          # checkpoint step, the next batch

    A range past the view's max_batch (the val view: one pass, epoch 0
    only) raises ValueError naming it.
    """

    def __init__(self, mount, val=False, start=None, stop=None, readahead=2, torch=False, pin_memory=False, meta=True, rank=None,
                 channels_first=False, epoch=None, device=None):
        if readahead < 1:
            raise ValueError(f"readahead {readahead}: need at least 1")
        self.batches = Batches(mount, val=val, meta=meta, mmap=True, rank=rank, channels_first=channels_first)
        self.start, self.stop = _batch_range(self.batches, start, stop, epoch, "val" if val else "train")
        if len(self.batches) == 1 and not val and epoch is None and stop is None:
            # A small mix at samples_per_episode 1: one pass over its
            # episodes fills one batch, and Loader(mnt) reads just that.
            warnings.warn(
                f"oxefs.Loader: {self.batches.path} lists 1 batch per epoch (num_batches defaults to one pass over the "
                "sample units, episodes × samples_per_episode, in batches of batch_size): iterate epochs with "
                "Loader(mnt, epoch=e), or set num_batches or samples_per_episode in the mix",
                RuntimeWarning, stacklevel=2)
        self.readahead = readahead
        self.device = device
        self.torch = torch or pin_memory or device is not None
        self.pin_memory = pin_memory and _can_pin()

    def __len__(self):
        return max(self.stop - self.start, 0)

    def __iter__(self):
        q = queue.Queue(maxsize=self.readahead)
        done = threading.Event()

        def read():
            try:
                for i in range(self.start, self.stop):
                    batch = self.batches.read(i, pinned=self.pin_memory, device=self.device)
                    batch = self.batches._finish(batch, self.torch, self.pin_memory)
                    while not done.is_set():
                        try:
                            q.put((batch, None), timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if done.is_set():
                        return
            except BaseException as e:  # handed to the consumer
                q.put((None, e))
                return
            q.put((None, None))

        t = threading.Thread(target=read, name="oxefs-readahead", daemon=True)
        t.start()
        try:
            while True:
                batch, err = q.get()
                if err is not None:
                    raise err
                if batch is None:
                    return
                yield batch
        finally:
            done.set()
