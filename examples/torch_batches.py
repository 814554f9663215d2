"""Read oxefs batches with PyTorch.

Each item of OxefsBatches is one whole batch: the daemon has already mixed,
decoded, resized and paired the frames, so the DataLoader only reads files.
Use it with batch_size=None (the items are batches already) and any number
of workers; all of them share the daemon's one cache.

    from torch.utils.data import DataLoader
    from torch_batches import OxefsBatches

    loader = DataLoader(OxefsBatches("/tmp/oxe"), batch_size=None, num_workers=4)
    for batch in loader:
        frames = batch["frames"]          # uint8 [B, F, H, W, 3] (layout BFHWC)
        actions = batch["action"]         # float32 [B, action_dim]
        texts = batch["language"]         # list of B strings

Resuming after preemption: batches are a pure function of their index, so
start the sampler (or the index range) where the last run stopped.
"""

import json
import os

import numpy as np
import torch
from torch.utils.data import Dataset

# Metadata fields that become tensors; the others stay lists.
_TENSOR_FIELDS = {
    "action": torch.float32,
    "initial_state": torch.float32,
    "action_mask": torch.bool,
    "state_mask": torch.bool,
    "frame_idx": torch.int64,
    "frame_indices": torch.int64,
    "offset": torch.int64,
}


class OxefsBatches(Dataset):
    """The batches of an oxefs mount (or of its validation view)."""

    def __init__(self, mount, val=False, meta=True):
        with open(os.path.join(mount, "info.json")) as f:
            info = json.load(f)
        view = info["val"] if val else info["train"]
        if view is None:
            raise ValueError(f"{mount} has no validation view: no dataset names a val_split")
        self.dir = os.path.join(mount, "val", "batches") if val else os.path.join(mount, "batches")
        self.length = view["num_batches"]
        self.meta = meta and info["meta"] != "none"
        self.layout = info["frames"]["layout"]

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        if not 0 <= index < self.length:
            raise IndexError(index)
        name = os.path.join(self.dir, f"{index:06d}")
        batch = {"frames": torch.from_numpy(np.load(name + ".npy"))}
        if self.meta:
            with open(name + ".json") as f:
                for key, value in json.load(f).items():
                    dtype = _TENSOR_FIELDS.get(key)
                    batch[key] = torch.tensor(value, dtype=dtype) if dtype else value
        return batch


if __name__ == "__main__":
    import sys

    from torch.utils.data import DataLoader

    mount = sys.argv[1] if len(sys.argv) > 1 else "/tmp/oxe"
    loader = DataLoader(OxefsBatches(mount), batch_size=None, num_workers=4)
    for i, batch in enumerate(loader):
        print(i, tuple(batch["frames"].shape), batch.get("dataset_name", [])[:3])
        if i == 4:
            break
