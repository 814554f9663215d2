"""Train-loop shapes with the oxefs package and PyTorch.

Run from the repository (or after `pip install ./python`):

    python3 examples/torch_batches.py [MOUNT]

With a MOUNT, it reads that mount; without one, it starts the built-in demo
mix itself (the oxefs binary from PATH or $OXEFS_BIN) and stops it at the
end. Either way it reads batches twice: with oxefs.Loader (read-ahead on a
thread, frames mapped and handed to torch without a copy: no DataLoader
workers needed) and with a DataLoader of 4 workers over oxefs.Batches.
"""

import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import oxefs  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402


def main(mount):
    for i, batch in enumerate(oxefs.Loader(mount, torch=True, stop=5)):
        frames = batch["frames"]  # uint8 [B, F, H, W, 3] (layout BFHWC)
        action, mask = batch["action"], batch["action_mask"]  # float32, bool [B, action_dim]
        print("loader", i, tuple(frames.shape), tuple(action.shape), int(mask.sum()), batch["dataset_name"][:2])
    loader = DataLoader(oxefs.Batches(mount, torch=True), batch_size=None, num_workers=4)
    for i, batch in enumerate(loader):
        print("dataloader", i, tuple(batch["frames"].shape))
        if i == 4:
            break


if __name__ == "__main__":
    with contextlib.ExitStack() as stack:
        mount = sys.argv[1] if len(sys.argv) > 1 else stack.enter_context(oxefs.mount())
        main(mount)
