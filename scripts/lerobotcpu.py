"""Trainer CPU per sample of the LeRobot recipe's reading (README:
"Training a LeRobot policy"), on this machine's torch:

  uint8       oxefs.Loader(torch=True, channels_first=True): the batch as
              the mount serves it (frames mapped, not converted);
  lerobot     oxefs.lerobot.Loader(device=DEVICE): LeRobot's batch, frames
              converted to float32 [0, 1] on DEVICE (on "cpu", by the
              trainer's CPU: the fallback without a GPU).

    python3 scripts/lerobotcpu.py MIX.yaml [--device cpu|cuda] [--batches 30] [--runs 5]

The CPU is this process's (time.process_time: every thread, the
read-ahead thread included; the daemon is another process and not
counted), per sample, over BATCHES batches after 5 unmeasured; each run
alternates the two readers over the same batch indices of one mount, and
the medians of RUNS runs are printed. A timing decides nothing here: this
is a measurement for docs/performance.md.
"""
import argparse
import os
import statistics as st
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import oxefs  # noqa: E402
import oxefs.lerobot  # noqa: E402
import torch  # noqa: E402


def measure(make, start, n, sync):
    it = iter(make(start, start + n + 5))
    for _ in range(5):
        next(it)
    t0 = time.process_time()
    samples = 0
    for _ in range(n):
        b = next(it)
        samples += len(b["frame_index"])
    sync()
    return (time.process_time() - t0) * 1000 / samples


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mix")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    with oxefs.mount(a.mix) as mnt:
        readers = {
            "uint8": lambda lo, hi: oxefs.Loader(mnt, start=lo, stop=hi, torch=True, channels_first=True, pin_memory=a.device != "cpu"),
            "lerobot": lambda lo, hi: oxefs.lerobot.Loader(mnt, device=a.device, start=lo, stop=hi),
        }
        got = {k: [] for k in readers}
        n = len(oxefs.Batches(mnt))
        for run in range(a.runs):
            start = (run * (a.batches + 5)) % max(n - a.batches - 5, 1)
            for name, make in readers.items():
                got[name].append(measure(make, start, a.batches, sync))
            print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in got.items()) + " ms/sample", flush=True)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {a.device}")
    for k, v in got.items():
        print(f"{k}: median {st.median(v):.3f} ms/sample (range {min(v):.3f}-{max(v):.3f})")


if __name__ == "__main__":
    main()
