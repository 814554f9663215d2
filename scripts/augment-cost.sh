#!/usr/bin/env bash
# What augmentation costs, side by side (issue 37): CPU per sample of the
# 29-dataset synth mix with an augment preset against the same mix with
# `--augment off`, in-process (`oxefs bench --config`, no FUSE), in pair
# mode (DATA/mix.yaml) and in step mode (DATA/mix-steps.yaml: primary 256²
# and wrist 128², two steps of history, a chunk of 50). Each round runs
# off then on for pairs, then for steps, each run a fresh pipeline over
# the same batches (same cache dir: the sources are local, so only the
# episode indexes are reused). Prints each run's pipeline CPU ms per
# sample, then per mode the medians and the median of the rounds'
# on/off ratios (the figure: ratios within a round share the machine's
# load).
#
#   ./scripts/augment-cost.sh    # DATA=/tmp/oxefs-synth OUT=/tmp/augment-cost RUNS=5 PRESET=octo
#                                # OXEFS=(built here) BENCH="--workers $(nproc) --warmup 10 --batches 40"
#                                # BASE=(none): another binary whose off and on runs alternate
#                                # with OXEFS's in each round, printed as its own rows
#
# DATA is an `oxefs synth DATA` directory (29 datasets, 1.8 GB; written if
# missing, about 5–10 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-synth}
OUT=${OUT:-/tmp/augment-cost}
RUNS=${RUNS:-5}
PRESET=${PRESET:-octo}
BENCH=${BENCH:-"--workers $(nproc) --warmup 10 --batches 40"}
mkdir -p "$OUT"
X=${OXEFS:-}      # a built binary to use (a machine without Go); else built here
if [ -z "$X" ]; then go build -o "$OUT/oxefs" . && X="$OUT/oxefs"; fi
[ -f "$DATA/mix.yaml" ] || nice "$X" synth "$DATA"
# The preset at the mix level: every camera, the one camera of pairs.
for m in mix mix-steps; do
  { echo "augment: {preset: $PRESET}"; cat "$DATA/$m.yaml"; } > "$OUT/$m.yaml"
done
BINS=("$X")
if [ -n "${BASE:-}" ]; then BINS+=("$BASE"); fi
for r in $(seq 1 "$RUNS"); do
  for m in mix mix-steps; do
    for i in "${!BINS[@]}"; do
      p=$m; [ "$i" = 0 ] || p=base-$m
      for a in off on; do
        nice "${BINS[$i]}" bench --config "$OUT/$m.yaml" --augment "$a" --cache-dir "$OUT/cache" $BENCH \
          --out "$OUT/$p-$a-$r" --json > "$OUT/$p-$a-$r.json" 2> "$OUT/$p-$a-$r.log" ||
          { tail -3 "$OUT/$p-$a-$r.log"; exit 1; }
      done
    done
    echo "round $r: $m done" >&2
  done
done
python3 - "$OUT" "$RUNS" "$PRESET" "${#BINS[@]}" <<'PY'
import json, statistics, sys
out, runs, preset, nbins = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
print(f"{'mode':11} {'off ms/sample':>14} {'on ms/sample':>13} {'on/off (median of rounds)':>26}  rounds (off/on ms)")
for m, name in (("mix", "pairs"), ("mix-steps", "steps")):
    for p, label in ((m, name), ("base-" + m, name + " BASE"))[:nbins]:
        cpu = {a: [json.load(open(f"{out}/{p}-{a}-{r}.json"))["pipeline_cpu_ms_per_sample"] for r in range(1, runs + 1)]
               for a in ("off", "on")}
        ratios = [n / f for f, n in zip(cpu["off"], cpu["on"])]
        each = ", ".join(f"{f:.2f}/{n:.2f}" for f, n in zip(cpu["off"], cpu["on"]))
        print(f"{label:11} {statistics.median(cpu['off']):14.2f} {statistics.median(cpu['on']):13.2f} "
              f"{statistics.median(ratios):10.3f} ({min(ratios):.3f}–{max(ratios):.3f}) {preset}  {each}")
PY
