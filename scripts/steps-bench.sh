#!/usr/bin/env bash
# Step samples against pairs on the 29-dataset synthetic mix, side by side
# (issue 26), in-process (`oxefs bench --config`, no FUSE):
#   (a) pairs:  DATA/mix.yaml (frames at t and t+offset, 256², summed action);
#   (b) steps:  one camera at t (256²) + a chunk of 50 actions + the state;
#   (c) steps:  DATA/mix-steps.yaml: primary 256² and wrist 128² with two
#               steps of history, the state at [-1, 0] and a chunk of 50
#               (datasets without a wrist camera leave that slot empty).
# (b) is (c) with the wrist slot and the history taken out. The three run
# in turn, RUNS rounds, each a fresh in-process pipeline (same cache dir:
# the sources are local, so only the episode indexes are reused); the
# table gives medians of samples/s and of the pipeline's CPU ms per sample.
#
#   ./scripts/steps-bench.sh     # DATA=/tmp/oxefs-synth OUT=/tmp/steps-bench RUNS=3 OXEFS=(built here)
#                                # BENCH="--workers $(nproc) --warmup 10 --batches 60"
#
# DATA is an `oxefs synth DATA` directory (29 datasets, 1.8 GB; written
# if missing, about 5 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-synth}
OUT=${OUT:-/tmp/steps-bench}
RUNS=${RUNS:-3}
BENCH=${BENCH:-"--workers $(nproc) --warmup 10 --batches 60"}
mkdir -p "$OUT"
X=${OXEFS:-}      # a built binary to use (a machine without Go); else built here
if [ -z "$X" ]; then go build -o "$OUT/oxefs" . && X="$OUT/oxefs"; fi
[ -f "$DATA/mix.yaml" ] || nice "$X" synth "$DATA"
if [ ! -f "$DATA/mix-steps.yaml" ]; then
  # A synth directory written before mix-steps.yaml existed: write the
  # file from a tiny synth of the same datasets, pointed at DATA.
  tiny=$(mktemp -d)
  "$X" synth "$tiny" --episodes 1 --steps 2 >/dev/null 2>&1
  sed "s#$tiny/#$DATA/#g" "$tiny/mix-steps.yaml" > "$DATA/mix-steps.yaml"
  rm -rf "$tiny"
fi
cp "$DATA/mix.yaml" "$OUT/a.yaml"
cp "$DATA/mix-steps.yaml" "$OUT/c.yaml"
python3 - "$OUT/c.yaml" "$OUT/b.yaml" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s = s.replace("    primary: {size: [256, 256], steps: [-1, 0]}\n    wrist: {size: [128, 128], steps: [-1, 0]}\n",
              "    primary: {size: [256, 256], steps: [0]}\n")
s = s.replace("  state: {steps: [-1, 0]}\n", "  state: {steps: [0]}\n")
s = re.sub(r", wrist: [^}]*}", "}", s)
# a dataset whose only camera is on the wrist feeds the one slot
s = re.sub(r"cameras: \{wrist: ([^}]*)\}", r"cameras: {primary: \1}", s)
open(sys.argv[2], "w").write(s)
PY
for r in $(seq 1 "$RUNS"); do
  for s in a b c; do
    nice "$X" bench --config "$OUT/$s.yaml" --cache-dir "$OUT/cache" $BENCH --out "$OUT/$s-$r" --json \
      > "$OUT/$s-$r.json" 2> "$OUT/$s-$r.log" || { tail -3 "$OUT/$s-$r.log"; exit 1; }
    echo "round $r: $s done" >&2
  done
done
python3 - "$OUT" "$RUNS" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = [("a", "(a) pairs: t, t+offset at 256²"),
        ("b", "(b) 1 camera 256² + chunk 50"),
        ("c", "(c) 256² + 128², history 2, chunk 50")]
base = None
print(f"{'sample':40} {'samples/s':>10} {'CPU ms/sample':>14} {'vs (a)':>7}  runs (samples/s)")
for key, name in rows:
    rs = [json.load(open(f"{out}/{key}-{r}.json")) for r in range(1, runs + 1)]
    sps = statistics.median(x["samples_per_s"] for x in rs)
    cpu = statistics.median(x["pipeline_cpu_ms_per_sample"] for x in rs)
    base = base or cpu
    each = ", ".join("%.0f" % x["samples_per_s"] for x in rs)
    print(f"{name:40} {sps:10.1f} {cpu:14.2f} {cpu / base:6.2f}x  {each}")
PY
