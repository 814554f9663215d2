"""oxefs through a mount, read by oxefs.Loader: samples/s and CPU per sample
(the daemon's plus this reader process's), the mount side of
`scripts/peer.sh`.

    python3 loader_cpu.py MIX.yaml --binary OXEFS --cache-dir DIR [--warmup 10] [--batches 40] [--json]

It mounts MIX with OXEFS, reads batches 0 .. warmup-1 with an oxefs.Loader
(unmeasured: the daemon fills its caches and read-ahead), then batches
warmup .. warmup+batches-1 from the same Loader, touching one byte per page
of each batch's frames, as the tf.data peer does. CPU: the daemon's
/proc/PID/stat and this process's getrusage over the measured batches.
Needs numpy; the oxefs package is taken from this repository.
"""
import argparse
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import oxefs  # noqa: E402


def cpu_daemon(pid):
    with open(f"/proc/{pid}/stat") as f:
        p = f.read().rsplit(")", 1)[1].split()
    return (int(p[11]) + int(p[12])) / os.sysconf("SC_CLK_TCK")


def cpu_self():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("--binary", required=True, help="the oxefs binary to mount with")
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--mem", help="the daemon's --mem")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with oxefs.mount(a.config, args=["--cache-dir", a.cache_dir] + (["--mem", a.mem] if a.mem else []), binary=a.binary) as m:
        pid, bsz = m.process.pid, m.info["batch_size"]
        it = iter(oxefs.Loader(m, stop=a.warmup + a.batches))
        for _ in range(a.warmup):
            next(it)["frames"].reshape(-1)[::4096].sum()
        d0, s0, t0 = cpu_daemon(pid), cpu_self(), time.monotonic()
        for _ in range(a.batches):
            next(it)["frames"].reshape(-1)[::4096].sum()  # one byte per page: every page read
        d1, s1, t1 = cpu_daemon(pid), cpu_self(), time.monotonic()
        it.close()
    n = a.batches * bsz
    res = {
        "batch_size": bsz, "warmup": a.warmup, "batches": a.batches, "samples_per_s": n / (t1 - t0),
        "daemon_cpu_ms_per_sample": (d1 - d0) * 1e3 / n, "reader_cpu_ms_per_sample": (s1 - s0) * 1e3 / n,
    }
    res["cpu_ms_per_sample"] = res["daemon_cpu_ms_per_sample"] + res["reader_cpu_ms_per_sample"]
    if a.json:
        print(json.dumps(res))
    else:
        print(f"oxefs mount + Loader: {res['samples_per_s']:.1f} samples/s, {res['cpu_ms_per_sample']:.2f} CPU ms/sample "
              f"(daemon {res['daemon_cpu_ms_per_sample']:.2f}, reader {res['reader_cpu_ms_per_sample']:.2f})")


if __name__ == "__main__":
    main()
