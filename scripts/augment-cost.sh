#!/usr/bin/env bash
# What augmentation costs, side by side (issue 37): CPU per sample of the
# 29-dataset synth mix with an augment preset against the same mix with
# `--augment off`, in pair mode (DATA/mix.yaml) and in step mode
# (DATA/mix-steps.yaml: primary 256² and wrist 128², two steps of history,
# a chunk of 50). Each run is one `oxefs bench --augment-cost`: one process
# builds every batch twice, with the preset and without, in turn batch by
# batch (no readahead), so that both see the machine at the same moment;
# its figure is the ratio of the two CPU totals. Rounds repeat that for
# pairs, then step samples. Prints each run's figures, then per mode the
# medians over the rounds.
#
#   ./scripts/augment-cost.sh    # DATA=/tmp/oxefs-synth OUT=/tmp/augment-cost RUNS=5 PRESET=octo
#                                # OXEFS=(built here) BENCH="--workers $(nproc) --warmup 10 --batches 40"
#                                # BASE=(none): another binary, run after OXEFS in each round and
#                                # printed as its own rows
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
      # shellcheck disable=SC2086 # BENCH is a list of flags
      nice "${BINS[$i]}" bench --config "$OUT/$m.yaml" --augment-cost --cache-dir "$OUT/cache" $BENCH \
        --json > "$OUT/$p-$r.json" 2> "$OUT/$p-$r.log" || { tail -3 "$OUT/$p-$r.log"; exit 1; }
    done
    echo "round $r: $m done" >&2
  done
done
python3 - "$OUT" "$RUNS" "$PRESET" "${#BINS[@]}" <<'PY'
import json, statistics, sys
out, runs, preset, nbins = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
print(f"{'mode':11} {'off ms/sample':>14} {'on ms/sample':>13} {'on/off (median of runs)':>24}  runs (on/off; per batch median)")
for m, name in (("mix", "pairs"), ("mix-steps", "steps")):
    for p, label in ((m, name), ("base-" + m, name + " BASE"))[:nbins]:
        rs = [json.load(open(f"{out}/{p}-{r}.json")) for r in range(1, runs + 1)]
        off = statistics.median(x["off_cpu_ms_per_sample"] for x in rs)
        on = statistics.median(x["on_cpu_ms_per_sample"] for x in rs)
        ratios = [x["ratio"] for x in rs]
        each = ", ".join(f"{x['ratio']:.3f}; {x['batch_ratio_median']:.3f}" for x in rs)
        print(f"{label:11} {off:14.2f} {on:13.2f} {statistics.median(ratios):10.3f} ({min(ratios):.3f}–{max(ratios):.3f}) {preset}  {each}")
PY
