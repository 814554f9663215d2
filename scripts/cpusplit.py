#!/usr/bin/env python3
"""Split a CPU profile of the pipeline into decode / resize / load / rest.

    perf record -F 499 -g -o perf.data ./oxefs bench --config MIX ...   # in-process
    python3 scripts/cpusplit.py perf.data [more.data ...]

Each sample is classified by its stack, first match wins: decode
(libjpeg-turbo, image/jpeg, image/png and its inflate), resize (the
TensorFlow-exact resizer and its C kernel), load (reading, checking and
parsing episode records), rest (everything else: assembly, metadata, the
scheduler, the runtime and the kernel's work for them). Prints the share of
each in percent.
"""
import subprocess
import sys

CLASSES = [
    ("decode", ("libturbojpeg", "turbojpeg.", "image/jpeg", "image/png", "compress/flate", "frames.(*Decoder).decode")),
    ("resize", ("oxefs_u8f", "oxefs_hrow", "oxefs_vrow", "oxefs_planar", "Cfunc_oxefs_resize", "frames.(*resizer)", "frames/bilinear")),
    ("load", ("tfrecord.ReadRecord", "rlds.(*Dataset).load", "example.Parse")),
]


def split(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "comm,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    counts = {name: 0 for name, _ in CLASSES}
    counts["rest"] = 0
    n = 0
    for sample in out.split("\n\n"):
        frames = sample.strip().split("\n")[1:]
        if not frames:
            continue
        n += 1
        stack = "\n".join(frames)
        for name, marks in CLASSES:
            if any(m in stack for m in marks):
                counts[name] += 1
                break
        else:
            counts["rest"] += 1
    return n, counts


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        n, counts = split(path)
        parts = ", ".join(f"{k} {100 * v / max(n, 1):.1f}%" for k, v in counts.items())
        print(f"{path}: {n} samples: {parts}")


if __name__ == "__main__":
    main()
