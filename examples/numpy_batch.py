"""Read one oxefs batch with numpy: with the oxefs package, and without it.

    python3 examples/numpy_batch.py /tmp/oxe     # needs numpy (apt install python3-numpy)
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import oxefs  # noqa: E402

mount = sys.argv[1] if len(sys.argv) > 1 else "/tmp/oxe"
batch = oxefs.Batches(mount)[0]
print(batch["frames"].shape, batch["frames"].dtype, batch["dataset_name"][:4])

# The same with plain file reads: any language can do this.
frames = np.load(f"{mount}/batches/000000.npy")  # uint8 [B, F, H, W, 3]
meta = json.load(open(f"{mount}/batches/000000.json"))  # dataset_name, action, action_mask, language, ...
assert (frames == batch["frames"]).all()
