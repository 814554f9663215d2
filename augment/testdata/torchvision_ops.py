"""torchvision's reference for TestTorchvisionParity (augment/torchvision_test.go).

Usage: torchvision_ops.py DIR

DIR/cases.json lists the cases; DIR/params.npy is float32 [N, 18], one
recorded parameter row per case (augment.Columns). For each case this
replays the row with torchvision.transforms.functional on the uint8 CHW
input and writes DIR/<name>.ref.npy (HWC uint8); for the affine also
DIR/<name>.mask.npy (1 where the output is the fill). The crop box and the
translation are computed from the row as the package doc says, here in
Python, so the recorded columns are what is checked.
"""

import json
import math
import sys

import numpy as np
import torch
import torchvision
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode

COLUMNS = [
    "crop_w", "crop_h", "crop_x", "crop_y", "rotate", "translate_x", "translate_y",
    "brightness", "contrast", "saturation", "hue", "sharpness",
    "order_brightness", "order_contrast", "order_saturation", "order_hue", "order_sharpness", "drop",
]
COLOUR = ["brightness", "contrast", "saturation", "hue", "sharpness"]
ADJUST = {
    "brightness": F.adjust_brightness,
    "contrast": F.adjust_contrast,
    "saturation": F.adjust_saturation,
    "hue": F.adjust_hue,
    "sharpness": F.adjust_sharpness,
}


def side(frac, pos, n):
    """One side of the crop box: (offset, size) in whole pixels."""
    if frac == 0:
        frac = 1.0
    size = min(max(int(math.floor(frac * n + 0.5)), 1), n)
    free = n - size
    off = min(int(math.floor(pos * (free + 1))), free)
    return max(off, 0), size


def main(d):
    with open(f"{d}/cases.json") as f:
        cases = json.load(f)
    params = np.load(f"{d}/params.npy")
    assert params.shape == (len(cases), len(COLUMNS)), params.shape
    for case, row in zip(cases, params):
        p = {name: float(v) for name, v in zip(COLUMNS, row)}
        img = torch.from_numpy(np.load(f"{d}/{case['input']}")).permute(2, 0, 1).contiguous()
        H, W = case["out"]
        op = case["op"]
        mask = None
        if op == "resized_crop":
            left, w = side(p["crop_w"], p["crop_x"], img.shape[2])
            top, h = side(p["crop_h"], p["crop_y"], img.shape[1])
            out = F.resized_crop(img, top, left, h, w, [H, W],
                                 interpolation=InterpolationMode.BILINEAR, antialias=False)
        elif op in ("rotate", "affine"):
            tx = round(p["translate_x"] * W)
            ty = round(p["translate_y"] * H)
            ones = torch.full_like(img, 255)
            if op == "rotate":
                assert tx == 0 and ty == 0
                out = F.rotate(img, p["rotate"], interpolation=InterpolationMode.NEAREST)
                mask = F.rotate(ones, p["rotate"], interpolation=InterpolationMode.NEAREST)
            else:
                kw = dict(angle=-p["rotate"], translate=[tx, ty], scale=1.0, shear=[0.0, 0.0],
                          interpolation=InterpolationMode.NEAREST)
                out = F.affine(img, **kw)
                mask = F.affine(ones, **kw)
            mask = (mask == 0).all(dim=0).numpy().astype(np.uint8)
        elif op == "colour":
            out = img
            chain = sorted((p["order_" + c], c) for c in COLOUR if p["order_" + c] >= 0)
            for _, c in chain:
                out = ADJUST[c](out, p[c])
        else:
            raise SystemExit(f"unknown op {op}")
        np.save(f"{d}/{case['name']}.ref.npy", out.permute(1, 2, 0).contiguous().numpy())
        if mask is not None:
            np.save(f"{d}/{case['name']}.mask.npy", mask)
    print(f"torch {torch.__version__} torchvision {torchvision.__version__}: {len(cases)} cases")


if __name__ == "__main__":
    main(sys.argv[1])
