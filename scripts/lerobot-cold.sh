#!/usr/bin/env bash
# LeRobot from a GCS-like remote: the 29-dataset LeRobot synth mix that
# scripts/lerobot.sh writes, served by scripts/fakegcs with LATENCY per
# request and a RATE cap on all responses (the client also gets
# --max-fetch-rate RATE). `oxefs bench` runs RUNS times from an empty
# --cache-dir (cold), then RUNS times on the cache the last cold run left
# (warm), and once on the local copy. Prints medians of time to the first
# batch, samples/s and MB fetched.
#
#   ./scripts/lerobot-cold.sh        # RUNS=3 RATE=10MB LATENCY=30ms LR=/tmp/oxefs-lerobot OUT=lerobot-cold-out
#
# Needs go and python3; the synth data (about 70 MB) is written once if
# missing, which takes about 4 minutes on 2 cores. A run takes about a
# minute.
set -euo pipefail
cd "$(dirname "$0")/.."
LR=${LR:-/tmp/oxefs-lerobot}
OUT=${OUT:-lerobot-cold-out}
RUNS=${RUNS:-3}
RATE=${RATE:-10MB}
LATENCY=${LATENCY:-30ms}
PORT=${PORT:-4444}
SYNTH=${SYNTH:-"--datasets 29 --episodes 4 --steps 40"}
BENCH=${BENCH:-"--readers 4 --warmup 5 --batches 20"}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
go build -o "$OUT/oxefs" .
go build -o "$OUT/fakegcs" ./scripts/fakegcs
X="$OUT/oxefs"
[ -f "$LR/mix.yaml" ] || "$X" synth --format lerobot $SYNTH "$LR"
du -sb "$LR" | awk '{printf "data: %.1f MB\n", $1/1e6}'

"$OUT/fakegcs" -dir "$LR" -bucket lr -port "$PORT" -latency "$LATENCY" -rate "$RATE" > "$OUT/fakegcs.log" 2>&1 &
gcs=$!
trap 'kill "$gcs" 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q serving "$OUT/fakegcs.log" && break; kill -0 "$gcs"; sleep 0.2; done
sed -E "s#source: \"?$LR/([^\"]*)\"?#source: gs://lr/\1\n    anonymous: true#" "$LR/mix.yaml" > "$OUT/mix-gcs.yaml"

run() { # name, config, cache dir
  STORAGE_EMULATOR_HOST=127.0.0.1:$PORT "$X" bench --config "$2" --cache-dir "$3" \
    --max-fetch-rate "$RATE" $BENCH --out "$OUT/$1" --json > "$OUT/$1.json" 2>"$OUT/$1.log"
}
for i in $(seq "$RUNS"); do
  rm -rf "$OUT/cache"
  run "cold-$i" "$OUT/mix-gcs.yaml" "$OUT/cache"
  echo "cold run $i done" >&2
done
for i in $(seq "$RUNS"); do run "warm-$i" "$OUT/mix-gcs.yaml" "$OUT/cache"; done
run local "$LR/mix.yaml" "$OUT/cache-local"
kill "$gcs"; wait "$gcs" 2>/dev/null || true
trap - EXIT

python3 - "$OUT" "$RUNS" "$RATE" "$LATENCY" <<'PY'
import json, statistics, sys
out, runs, rate, lat = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def load(name):
    r = json.load(open(f"{out}/{name}.json"))
    return {"first_s": r["time_to_first_batch_s"], "samples_per_s": r["samples_per_s"], "fetched_mb": r["fetched_bytes"] / 1e6}
rows = {
    "cold (empty cache)": [load(f"cold-{i}") for i in range(1, runs + 1)],
    "warm (the cache a cold run left)": [load(f"warm-{i}") for i in range(1, runs + 1)],
    "local copy": [load("local")],
}
print(f"\n29 LeRobot synth datasets from fakegcs at {rate}/s, {lat} per request; median of {runs}")
print("| | first batch s | samples/s | MB fetched |")
print("|---|---|---|---|")
for name, rs in rows.items():
    med = lambda k: statistics.median(r[k] for r in rs)
    print(f"| {name} | {med('first_s'):.2f} | {med('samples_per_s'):.1f} | {med('fetched_mb'):.1f} |")
PY
