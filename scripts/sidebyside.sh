#!/usr/bin/env bash
# Two builds of oxefs side by side on the same data, alternating, so that a
# change's effect on speed is a ratio measured under the same load:
#   BASE=path/to/old/oxefs ./scripts/sidebyside.sh      # NEW: this tree, built now
# Per pair: in-process bench of one dataset and of the synth mix, and a bench
# through a mount of the mix (`--readers 4 --warmup 5 --batches 40`); then
# scripts/cold.sh (CASE=four, RUNS=1) with each build, PAIRS times. Prints the
# samples/s of each run, the median of the per-pair ratios new/base, time to
# the first batch and peak RSS. Needs /dev/fuse; about 20 minutes on 2 cores.
# Environment: BASE (required), NEW, DATA (/tmp/oxefs-synth), OUT
# (sidebyside-out), PAIRS (3), COLD (1: also the cold runs; 0: skip them).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BASE:?BASE=path to the oxefs build to compare against}"
DATA=${DATA:-/tmp/oxefs-synth}
OUT=${OUT:-sidebyside-out}
PAIRS=${PAIRS:-3}
COLD=${COLD:-1}
BENCH="--readers 4 --warmup 5 --batches 40"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ -z "${NEW:-}" ]; then NEW=$OUT/oxefs; go build -o "$NEW" .; fi
[ -f "$DATA/mix.yaml" ] || "$NEW" synth "$DATA"
declare -A BIN=([base]=$BASE [new]=$NEW)

for i in $(seq "$PAIRS"); do
  for v in base new; do
    x=${BIN[$v]}
    for mix in mix-single mix; do
      "$x" bench --config "$DATA/$mix.yaml" --cache-dir "$OUT/cache-$v" $BENCH --json \
        --out "$OUT/in-process-$mix-$v-$i" > "$OUT/in-process-$mix-$v-$i.json" 2>"$OUT/in-process-$mix-$v-$i.log"
    done
    mnt=$OUT/mnt-$v
    mkdir -p "$mnt"
    "$x" mount "$mnt" --config "$DATA/mix.yaml" --cache-dir "$OUT/cache-$v" 2>"$OUT/mount-$v-$i.log" &
    pid=$!
    for _ in $(seq 600); do [ -f "$mnt/info.json" ] && break; sleep 0.1; done
    "$x" bench "$mnt" $BENCH --json --out "$OUT/mount-mix-$v-$i" > "$OUT/mount-mix-$v-$i.json" 2>"$OUT/mount-mix-$v-$i.log"
    kill -TERM "$pid"; wait "$pid"
  done
done
if [ "$COLD" = 1 ]; then
  for i in $(seq "$PAIRS"); do
    for v in base new; do
      OXEFS=${BIN[$v]} RUNS=1 OUT="$OUT/cold-$v-$i" ./scripts/cold.sh > "$OUT/cold-$v-$i.txt" 2>&1
    done
  done
fi

python3 - "$OUT" "$PAIRS" <<'PY'
import json, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def runs(name, v):
    return [json.load(open(f"{out}/{name}-{v}-{i}.json")) for i in range(1, pairs + 1)]
print("| run | base samples/s | new samples/s | new/base, median of pairs (range) | first batch s, base / new | peak RSS MiB, base / new |")
print("|---|---|---|---|---|---|")
for name in ("in-process-mix-single", "in-process-mix", "mount-mix"):
    b, n = runs(name, "base"), runs(name, "new")
    r = [y["samples_per_s"] / x["samples_per_s"] for x, y in zip(b, n)]
    med = lambda rs, k, s=1: statistics.median(x[k] for x in rs) * s
    print(f"| {name} | {med(b, 'samples_per_s'):.0f} | {med(n, 'samples_per_s'):.0f} | {statistics.median(r):.2f} ({min(r):.2f}–{max(r):.2f}) "
          f"| {med(b, 'time_to_first_batch_s'):.2f} / {med(n, 'time_to_first_batch_s'):.2f} "
          f"| {med(b, 'daemon_peak_rss_bytes', 2**-20):.0f} / {med(n, 'daemon_peak_rss_bytes', 2**-20):.0f} |")
cold = {v: [json.load(open(f"{out}/cold-{v}-{i}/summary.json")) for i in range(1, pairs + 1)]
        for v in ("base", "new") if os.path.exists(f"{out}/cold-{v}-1/summary.json")}
if len(cold) == 2:
    for k, label in (("first_s", "cold first batch s"), ("run_samples_per_s", "cold whole run samples/s"), ("fetched_mb", "cold fetched MB")):
        b = statistics.median(s["cold"][k] for s in cold["base"])
        n = statistics.median(s["cold"][k] for s in cold["new"])
        print(f"| {label} (CASE=four) | {b:.1f} | {n:.1f} | {n / b:.2f} | | |")
PY
