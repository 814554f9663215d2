#!/usr/bin/env bash
# What decode: gpu saves the daemon, side by side (issue 41): pipeline CPU
# per sample of the 29-dataset synth mix with `decode: gpu` (JPEG frames
# served compressed) against the same mix with `decode: exact`,
# in-process (`oxefs bench --config`, no FUSE), in pair mode (DATA/mix.yaml)
# and in step mode (DATA/mix-steps.yaml). Each round runs exact then gpu
# for pairs, then for steps. Prints per mode the medians and the median of
# the rounds' gpu/exact ratios (ratios within a round share the machine's
# load). The trainer's side (decoding on its device) is scripts/gpufed.sh's.
#
#   ./scripts/decode-gpu-cost.sh   # DATA=/tmp/oxefs-synth OUT=/tmp/decode-gpu-cost RUNS=5
#                                  # OXEFS=(built here) BENCH="--workers $(nproc) --warmup 5 --batches 20"
#
# DATA is an `oxefs synth DATA` directory (written if missing, 5–10 minutes
# on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-synth}
OUT=${OUT:-/tmp/decode-gpu-cost}
RUNS=${RUNS:-5}
BENCH=${BENCH:-"--workers $(nproc) --warmup 5 --batches 20"}
mkdir -p "$OUT"
X=${OXEFS:-}
if [ -z "$X" ]; then go build -o "$OUT/oxefs" . && X="$OUT/oxefs"; fi
[ -f "$DATA/mix.yaml" ] || nice "$X" synth "$DATA"
for m in mix mix-steps; do
  for d in exact gpu; do
    { echo "decode: $d"; grep -v '^decode:' "$DATA/$m.yaml"; } > "$OUT/$m-$d.yaml"
  done
done
for r in $(seq 1 "$RUNS"); do
  for m in mix mix-steps; do
    for d in exact gpu; do
      nice "$X" bench --config "$OUT/$m-$d.yaml" --cache-dir "$OUT/cache" $BENCH \
        --out "$OUT/$m-$d-$r" --json > "$OUT/$m-$d-$r.json" 2> "$OUT/$m-$d-$r.log" ||
        { tail -3 "$OUT/$m-$d-$r.log"; exit 1; }
    done
    echo "round $r: $m done" >&2
  done
done
python3 - "$OUT" "$RUNS" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
print(f"{'mode':6} {'exact ms/sample':>16} {'gpu ms/sample':>14} {'gpu/exact (median of rounds)':>29}  rounds (exact/gpu ms)")
for m, name in (("mix", "pairs"), ("mix-steps", "steps")):
    cpu = {d: [json.load(open(f"{out}/{m}-{d}-{r}.json"))["pipeline_cpu_ms_per_sample"] for r in range(1, runs + 1)]
           for d in ("exact", "gpu")}
    ratios = [g / e for e, g in zip(cpu["exact"], cpu["gpu"])]
    each = ", ".join(f"{e:.2f}/{g:.2f}" for e, g in zip(cpu["exact"], cpu["gpu"]))
    print(f"{name:6} {statistics.median(cpu['exact']):16.2f} {statistics.median(cpu['gpu']):14.2f} "
          f"{statistics.median(ratios):13.3f} ({min(ratios):.3f}–{max(ratios):.3f})  {each}")
PY
