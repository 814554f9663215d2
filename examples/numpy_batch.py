"""Read one oxefs batch with numpy alone."""
import json, sys
import numpy as np

mount = sys.argv[1] if len(sys.argv) > 1 else "/tmp/oxe"
frames = np.load(f"{mount}/batches/000000.npy")              # uint8 [B, F, H, W, 3]
meta = json.load(open(f"{mount}/batches/000000.json"))       # dataset_name, action, language, ...
print(frames.shape, frames.dtype, meta["dataset_name"][:4])
