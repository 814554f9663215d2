"""The Python half of TestGPUDecodeFidelity (augment/gpudecode_test.go).

Usage: gpu_decode.py DIR   (with the repository's python/ on PYTHONPATH)

DIR/cases.json lists the JPEG files and the groups: each group is one call
of oxefs._decode.decode_frames (its resize mode, frame size, the JPEGs of
its frames, the file of its recorded augment rows or null) and the file of
the pixels the Go code wrote for it ([N, H, W, 3] uint8); "decoders" names
each way to decode (decode_frames' decoder and device). For each group
and each of those, this decodes the group and writes to
DIR/results.json, per frame, the largest absolute difference from the Go
pixels, the sum of the absolute differences and of their squares, and the
number of values that differ: the Go test aggregates and judges them.
"""

import json
import sys

import numpy as np
import torch
import torchvision

from oxefs import _decode


def main(d):
    with open(f"{d}/cases.json") as f:
        cases = json.load(f)
    jpegs = []
    for name in cases["jpegs"]:
        with open(f"{d}/{name}", "rb") as f:
            jpegs.append(f.read())
    results = {"torch": torch.__version__, "torchvision": torchvision.__version__, "groups": []}
    for g in cases["groups"]:
        want = torch.from_numpy(np.load(f"{d}/{g['expected']}")).to(torch.int64)
        params = np.load(f"{d}/{g['params']}") if g["params"] else None
        out = {"name": g["name"]}
        for dec in cases["decoders"]:
            got = _decode.decode_frames([jpegs[i] for i in g["frames"]], params, g["h"], g["w"],
                                        resize=g["mode"], device=dec["device"], decoder=dec["decoder"]).cpu()
            if tuple(got.shape) != tuple(want.shape) or got.dtype != torch.uint8:
                raise SystemExit(f"{g['name']}: decode_frames gave {got.dtype} {tuple(got.shape)}, want uint8 {tuple(want.shape)}")
            diff = (got.to(torch.int64) - want).abs().flatten(1)
            out[dec["name"]] = {
                "max": diff.max(dim=1).values.tolist(),
                "sum": diff.sum(dim=1).tolist(),
                "sq": (diff * diff).sum(dim=1).tolist(),
                "differ": (diff != 0).sum(dim=1).tolist(),
            }
        results["groups"].append(out)
    with open(f"{d}/results.json", "w") as f:
        json.dump(results, f)
    print(f"torch {torch.__version__} torchvision {torchvision.__version__}: {len(cases['groups'])} groups, "
          f"decoders {', '.join(d['name'] for d in cases['decoders'])}")


if __name__ == "__main__":
    main(sys.argv[1])
