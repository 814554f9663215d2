#!/usr/bin/env bash
# Reproduces docs/performance.md's figures: medians of RUNS runs of
# `oxefs bench`, in-process and through a mount, on `oxefs synth` data.
#   ./scripts/perf.sh                 # DATA=/tmp/oxefs-synth OUT=perf-out RUNS=3
# Needs /dev/fuse for the mount rows; takes about 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-synth}
OUT=${OUT:-perf-out}
RUNS=${RUNS:-3}
BENCH=${BENCH:-"--readers 4 --warmup 5 --batches 40"}
mkdir -p "$OUT"
go build -o "$OUT/oxefs" .
X="$OUT/oxefs"
[ -f "$DATA/mix.yaml" ] || "$X" synth "$DATA"

# 29 copies of the single dataset on disjoint slices at equal weights: the
# same frames as mix-single, mixed like the 29-dataset mix.
python3 - "$DATA" <<'PY'
import re, sys
d = sys.argv[1]
single = open(f"{d}/mix-single.yaml").read()
head, ds = single.split("datasets:", 1)
entry = ds.strip().splitlines()
src = next(l.split(":", 1)[1].strip().strip("\"'") for l in entry if l.strip().startswith("source:"))
import json
info = json.load(open(f"{src}/dataset_info.json"))
n = sum(int(x) for s in info["splits"] if s["name"] == "train" for x in s["shardLengths"])
out = [head + "datasets:"]
for i in range(29):
    lo, hi = i * n // 29, (i + 1) * n // 29
    if hi <= lo:
        hi = lo + 1
    e = [l for l in entry if not re.match(r"\s*-?\s*(name|split|val_split|weight):", l)]
    out.append(f"  - name: copy{i:02d}")
    out += ["    " + l.strip().lstrip("- ").strip() for l in e]
    out.append(f"    split: train[{lo}:{hi}]")
    out.append("    weight: 1")
open(f"{d}/mix-29-copies.yaml", "w").write("\n".join(out) + "\n")
PY

bench() { # name, bench args...
  local name=$1; shift
  for i in $(seq "$RUNS"); do
    "$X" bench "$@" $BENCH --out "$OUT/$name-$i" --json > "$OUT/$name-$i.json" 2>"$OUT/$name-$i.log"
  done
}

mounted() { # name, mix, extra mount args...: bench through a mount
  local name=$1 mix=$2; shift 2
  local mnt="$OUT/mnt-$name"
  for i in $(seq "$RUNS"); do
    mkdir -p "$mnt"
    "$X" mount "$mnt" --config "$mix" --cache-dir "$OUT/cache" "$@" 2>"$OUT/$name-$i.mount.log" &
    local pid=$!
    for _ in $(seq 300); do [ -f "$mnt/info.json" ] && break; sleep 0.1; done
    "$X" bench "$mnt" $BENCH --out "$OUT/$name-$i" --json > "$OUT/$name-$i.json" 2>"$OUT/$name-$i.log"
    kill -TERM "$pid"; wait "$pid"
  done
}

for m in mix-single mix-two-copies mix-29-copies mix; do
  bench "inproc-$m" --config "$DATA/$m.yaml" --cache-dir "$OUT/cache"
  mounted "mount-$m" "$DATA/$m.yaml"
done
OXEFS_DECODER=go bench "inproc-go-mix-single" --config "$DATA/mix-single.yaml" --cache-dir "$OUT/cache"

# Cold cache: the single dataset from a loopback GCS (fake-gcs-server),
# fetched at most 70 MB/s, a fresh cache each run.
go build -o "$OUT/fakegcs" ./scripts/fakegcs
"$OUT/fakegcs" -dir "$DATA" -bucket synth -port 4443 > "$OUT/fakegcs.log" 2>&1 &
gcs=$!
for _ in $(seq 600); do grep -q serving "$OUT/fakegcs.log" && break; sleep 0.2; done
sed -E "s#source: \"?$DATA/([^\"]*)\"?#source: gs://synth/\1\n    anonymous: true#" "$DATA/mix-single.yaml" > "$OUT/mix-single-gcs.yaml"
cold() { # name, rate
  for i in $(seq "$RUNS"); do
    rm -rf "$OUT/cold-cache"
    STORAGE_EMULATOR_HOST=127.0.0.1:4443 "$X" bench --config "$OUT/mix-single-gcs.yaml" --cache-dir "$OUT/cold-cache" \
      --max-fetch-rate "$2" $BENCH --out "$OUT/$1-$i" --json > "$OUT/$1-$i.json" 2>"$OUT/$1-$i.log"
  done
}
cold cold 70MB   # decode-bound: the bandwidth bound is above the decode rate
cold cold5 5MB   # bandwidth-bound
kill "$gcs"

python3 - "$OUT" "$RUNS" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def load(name):
    return [json.load(open(f"{out}/{name}-{i}.json")) for i in range(1, runs + 1)]
def med(rs, f):
    return statistics.median(f(r) for r in rs)
rows = [("inproc-mix-single", "1 dataset, in-process"), ("mount-mix-single", "1 dataset, mount"),
        ("inproc-mix-two-copies", "2 copies 50/50, in-process"), ("mount-mix-two-copies", "2 copies 50/50, mount"),
        ("inproc-mix-29-copies", "29 copies, in-process"), ("mount-mix-29-copies", "29 copies, mount"),
        ("inproc-mix", "29-dataset synth mix, in-process"), ("mount-mix", "29-dataset synth mix, mount"),
        ("inproc-go-mix-single", "1 dataset, image/jpeg decoder"), ("cold", "1 dataset, cold GCS cache, 70 MB/s")]
print("| run | samples/s | p50 ms | p90 ms | p99 ms | first batch ms | peak RSS MiB | fetched MB/sample |")
print("|---|---|---|---|---|---|---|---|")
res = {}
for name, label in rows:
    rs = load(name)
    sps = med(rs, lambda r: r["samples_per_s"])
    res[name] = sps
    fetched = med(rs, lambda r: r["fetched_bytes"] / 1e6 / ((r["batches"] + 5) * r["batch_size"]))
    print(f"| {label} | {sps:.0f} | {med(rs, lambda r: r['latency']['p50_s'])*1e3:.0f} | "
          f"{med(rs, lambda r: r['latency']['p90_s'])*1e3:.0f} | {med(rs, lambda r: r['latency']['p99_s'])*1e3:.0f} | "
          f"{med(rs, lambda r: r['time_to_first_batch_s'])*1e3:.0f} | {med(rs, lambda r: r['daemon_peak_rss_bytes'])/2**20:.0f} | "
          f"{fetched:.3f} |")
print()
for a, b, what in [("mount-mix-single", "inproc-mix-single", "mount / in-process, 1 dataset"),
                   ("mount-mix", "inproc-mix", "mount / in-process, 29-dataset mix"),
                   ("inproc-mix-two-copies", "inproc-mix-single", "2 copies / 1 dataset (in-process)"),
                   ("inproc-mix-29-copies", "inproc-mix-single", "29 copies / 1 dataset (in-process)"),
                   ("mount-mix-two-copies", "mount-mix-single", "2 copies / 1 dataset (mount)"),
                   ("mount-mix-29-copies", "mount-mix-single", "29 copies / 1 dataset (mount)"),
                   ("inproc-go-mix-single", "inproc-mix-single", "image/jpeg / libjpeg-turbo")]:
    print(f"- {what}: {res[a]/res[b]:.2f}")
cold = load("cold")
bound = 70e6 / med(cold, lambda r: r["fetched_bytes"] / ((r["batches"] + 5) * r["batch_size"]))
print(f"- cold at 70 MB/s: {res['cold']:.0f} samples/s in the measured phase against a bandwidth bound of {bound:.0f} samples/s: decode-bound, {res['cold']/res['inproc-mix-single']:.2f} of warm")
# Bandwidth-bound: every sample of the whole run (warm-up included, where
# the fetching happens) over its wall time, against 5 MB/s / bytes per sample.
ratios = []
for i in range(1, runs + 1):
    recs = [json.loads(l) for l in open(f"{out}/cold5-{i}/batch_times.jsonl")]
    s = json.load(open(f"{out}/cold5-{i}.json"))
    n = len(recs) * s["batch_size"]
    rate = n / max(r["end_s"] for r in recs)
    ratios.append(rate / (5e6 / (s["fetched_bytes"] / n)))
print(f"- cold at 5 MB/s (bandwidth-bound), whole run / bandwidth bound: {statistics.median(ratios):.2f}")
PY
