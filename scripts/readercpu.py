"""CPU per sample of reading a mount from Python: oxefs.Loader (read-ahead
thread, mapped frames, torch.from_numpy) against a torch DataLoader with 4
worker processes over oxefs.Batches, alternating, 3 times each, on fresh
batch indices every time.

    python3 scripts/readercpu.py MIX.yaml        # the oxefs binary from $OXEFS_BIN or PATH

It prints, per run and as medians, the daemon's CPU and the reader's CPU
(this process and its DataLoader workers) in ms per sample, and samples/s.
Each batch is touched one byte per page, so every page is read and nothing
else is computed.
"""
import os
import resource
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
        p = f.read().split(")")[1].split()
    return (int(p[11]) + int(p[12])) / os.sysconf("SC_CLK_TCK")

def cpu_self():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

N = 30
config = sys.argv[1] if len(sys.argv) > 1 else None
with tempfile.TemporaryDirectory() as cache, oxefs.mount(config, args=["--cache-dir", cache]) as m:
    pid = m.process.pid
    B = m.info["batch_size"]
    ds = oxefs.Batches(m, torch=True)
    N = min(N, (len(ds) - 1) // 6)  # 6 runs on fresh indices within the listing
    next(iter(oxefs.Loader(m, stop=1)))  # warm the daemon's start
    res = {"loader": [], "dataloader": []}
    start = 1
    for rep in range(3):
        for how in ("loader", "dataloader"):
            d0, s0, t0 = cpu_daemon(pid), cpu_self(), time.time()
            if how == "loader":
                for b in oxefs.Loader(m, torch=True, start=start, stop=start + N):
                    b["frames"].reshape(-1)[::4096].sum()  # one byte per page: every page read
            else:
                for b in DataLoader(Subset(ds, range(start, start + N)), batch_size=None, num_workers=4):
                    b["frames"].reshape(-1)[::4096].sum()
            d1, s1, t1 = cpu_daemon(pid), cpu_self(), time.time()
            res[how].append(((d1 - d0) * 1e3 / (N * B), (s1 - s0) * 1e3 / (N * B), N * B / (t1 - t0)))
            print(how, rep, "daemon ms/sample %.2f reader ms/sample %.2f samples/s %.0f" % res[how][-1], flush=True)
            start += N
import statistics as st
for how, r in res.items():
    print(how, "median daemon %.2f reader %.2f total %.2f ms/sample, %.0f samples/s" % (
        st.median(x[0] for x in r), st.median(x[1] for x in r), st.median(x[0] + x[1] for x in r), st.median(x[2] for x in r)))
