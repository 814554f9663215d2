"""CPU per sample of training-side reading, side by side on one mix:

  loader      oxefs.Loader over a mount (read-ahead thread, mapped frames,
              torch.from_numpy): the daemon's CPU plus this process's;
  dataloader  a torch DataLoader with 4 worker processes over oxefs.Batches:
              the daemon's plus this process's and its workers';
  in-process  `oxefs bench --config MIX --readers 1`: the same pipeline
              building and reading batches in one process, no FUSE (its
              pipeline_cpu_ms_per_sample).

    python3 scripts/readercpu.py MIX.yaml [BATCHES [WARMUP]]   # the oxefs binary from $OXEFS_BIN or PATH

Every run is a fresh process (a new daemon for the first two) over the
same batch indices: WARMUP batches read unmeasured, which warm its caches,
then BATCHES measured (60 and 20 by default; every pipeline builds up to
--readahead 8 batches past the last one read, the same in all three). The
three alternate, 3 times each. It prints each run and the medians in ms per
sample, and the ratio of the loader's total to in-process. Each mounted
batch is touched one byte per page, so every page is read and nothing else
is computed.
"""
import json
import os
import resource
import statistics as st
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import oxefs  # noqa: E402
from torch.utils.data import DataLoader, Subset  # noqa: E402

warnings.filterwarnings("ignore", message="This DataLoader will create")


def cpu_daemon(pid):
    with open(f"/proc/{pid}/stat") as f:
        p = f.read().rsplit(")", 1)[1].split()
    return (int(p[11]) + int(p[12])) / os.sysconf("SC_CLK_TCK")


def cpu_self():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


config = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 60
W = int(sys.argv[3]) if len(sys.argv) > 3 else 20
exe = oxefs.find_binary()
res = {"loader": [], "dataloader": [], "in-process": []}
with tempfile.TemporaryDirectory() as cache:
    args = ["--cache-dir", cache]
    with oxefs.mount(config, args=args) as m:  # builds what the cache needs once (indexes), unmeasured
        next(iter(oxefs.Loader(m, stop=1)))
    for rep in range(3):
        for how in res:
            if how == "in-process":
                out = subprocess.run([exe, "bench", "--config", config, *args, "--readers", "1", "--warmup", str(W),
                                      "--batches", str(N), "--json", "--out", os.path.join(cache, "bench")],
                                     capture_output=True, text=True, check=True).stdout
                s = json.loads(out)
                res[how].append((s["pipeline_cpu_ms_per_sample"], 0.0, s["samples_per_s"]))
                print(how, rep, "ms/sample %.2f samples/s %.0f" % res[how][-1][::2], flush=True)
                continue
            with oxefs.mount(config, args=args) as m:
                pid, B = m.process.pid, m.info["batch_size"]
                if how == "loader":
                    for b in oxefs.Loader(m, torch=True, stop=W):
                        b["frames"].reshape(-1)[::4096].sum()
                else:
                    ds = oxefs.Batches(m, torch=True)
                    for b in DataLoader(Subset(ds, range(W)), batch_size=None, num_workers=4):
                        b["frames"].reshape(-1)[::4096].sum()
                d0, s0, t0 = cpu_daemon(pid), cpu_self(), time.time()
                if how == "loader":
                    for b in oxefs.Loader(m, torch=True, start=W, stop=W + N):
                        b["frames"].reshape(-1)[::4096].sum()  # one byte per page: every page read
                else:
                    for b in DataLoader(Subset(ds, range(W, W + N)), batch_size=None, num_workers=4):
                        b["frames"].reshape(-1)[::4096].sum()
                d1, s1, t1 = cpu_daemon(pid), cpu_self(), time.time()
            res[how].append(((d1 - d0) * 1e3 / (N * B), (s1 - s0) * 1e3 / (N * B), N * B / (t1 - t0)))
            print(how, rep, "daemon ms/sample %.2f reader ms/sample %.2f samples/s %.0f" % res[how][-1], flush=True)
for how, r in res.items():
    print("%-10s median daemon %.2f reader %.2f total %.2f ms/sample, %.0f samples/s" % (
        how, st.median(x[0] for x in r), st.median(x[1] for x in r), st.median(x[0] + x[1] for x in r), st.median(x[2] for x in r)))
total = {how: st.median(x[0] + x[1] for x in r) for how, r in res.items()}
print("loader / in-process CPU per sample: %.2f; dataloader / in-process: %.2f" % (
    total["loader"] / total["in-process"], total["dataloader"] / total["in-process"]))
