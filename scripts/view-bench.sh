#!/usr/bin/env bash
# The daemon's throughput with the web page open and refreshing, against
# without, alternating on one mount so that both see the same load:
#   ./scripts/view-bench.sh
# Each pair: `oxefs bench MNT` alone, then again while a page is open: the
# requests a browser makes for the page of a batch (the page, its script
# and style, the mix, the batch, the check, the first four samples' frames)
# every PAGE_EVERY seconds, the next batch each time, and the live
# section's poll (stats, every 2 s) all along. The browser's own rendering
# is left out: it runs on the user's machine, not the training node's.
# Pairs alternate which run comes first (odd pairs without, even pairs
# with), since a later run finds more of the episodes in RAM: with a fixed
# order that warming counted as the page's doing.
# Prints samples/s and the daemon's CPU per sample of each run, and the
# medians of the ratios with/without of both: the CPU ratio is what the
# page costs the daemon, steadier than throughput on a shared machine.
# Needs /dev/fuse and curl.
# Environment: DATA (/tmp/oxefs-view-synth), OUT (view-bench-out), PAIRS
# (3), MIX (mix-steps), PAGE_EVERY (5), BATCHES (30, each run's; the page
# costs a fixed amount per PAGE_EVERY seconds, so short runs overstate it).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-view-synth}
OUT=${OUT:-view-bench-out}
PAIRS=${PAIRS:-3}
MIX=${MIX:-mix-steps}
PAGE_EVERY=${PAGE_EVERY:-5}
BATCHES=${BATCHES:-30}
BENCH="--readers 2 --warmup 3 --batches $BATCHES"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=$OUT/oxefs
go build -o "$BIN" .
[ -f "$DATA/$MIX.yaml" ] || "$BIN" synth "$DATA" --datasets 6 --episodes 8 --steps 60 >/dev/null
mnt=$OUT/mnt
mkdir -p "$mnt"
"$BIN" mount "$mnt" --config "$DATA/$MIX.yaml" --cache-dir "$OUT/cache" --view 127.0.0.1:0 2>"$OUT/mount.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q 'view: serving' "$OUT/mount.log" && break; sleep 0.1; done
url=$(sed -n 's/.*msg="view: serving the page" url=\([^ ]*\).*/\1/p' "$OUT/mount.log")

# page runs until killed: the live poll every 2 s, and a whole page of a
# batch (the next one each time) every PAGE_EVERY s.
page() {
  local n=0 t=0 slots
  slots=$(python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); print(" ".join(s["name"] for s in i["sample"]["slots"]) if i.get("sample") else "frames")' "$mnt/info.json")
  while :; do
    curl -s -o /dev/null "${url}api/stats"
    if [ $((t % PAGE_EVERY)) -lt 2 ]; then
      urls=("$url" "${url}assets/app.js" "${url}assets/style.css" "${url}api/mix" "${url}api/batch?n=$n" "${url}api/check")
      for s in 0 1 2 3; do for slot in $slots; do for k in 0 1; do urls+=("${url}api/frame?n=$n&sample=$s&slot=$slot&step=$k"); done; done; done
      printf 'url = "%s"\noutput = "/dev/null"\n' "${urls[@]}" | curl -s --parallel --parallel-max 6 -K - 2>/dev/null || true
      n=$((n + 1))
    fi
    sleep 2; t=$((t + 2))
  done
}

rate() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples_per_s"])' "$1"; }
cpu() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pipeline_cpu_ms_per_sample"])' "$1"; }
start=0
ratios=()
cpus=()
for i in $(seq "$PAIRS"); do
  order="without with"
  [ $((i % 2)) -eq 0 ] && order="with without"
  for mode in $order; do
    if [ $mode = with ]; then page & ppid=$!; fi
    "$BIN" bench "$mnt" $BENCH --start $start --json --out "$OUT/$mode-$i" > "$OUT/$mode-$i.json" 2>"$OUT/$mode-$i.log"
    if [ $mode = with ]; then kill $ppid; wait $ppid 2>/dev/null || true; fi
    start=$((start + BATCHES + 10))
    echo "pair $i $mode: $(rate "$OUT/$mode-$i.json") samples/s, daemon $(cpu "$OUT/$mode-$i.json") CPU ms/sample"
  done
  ratio() { python3 -c 'import sys; print(float(sys.argv[2]) / float(sys.argv[1]))' "$1" "$2"; }
  ratios+=("$(ratio "$(rate "$OUT/without-$i.json")" "$(rate "$OUT/with-$i.json")")")
  cpus+=("$(ratio "$(cpu "$OUT/without-$i.json")" "$(cpu "$OUT/with-$i.json")")")
done
median() { python3 -c 'import statistics,sys; r=[float(x) for x in sys.argv[2:]]; print(sys.argv[1], " ".join(f"{x:.3f}" for x in r), "median", f"{statistics.median(r):.3f}")' "$@"; }
median "throughput with/without per pair:" "${ratios[@]}"
median "daemon CPU per sample with/without per pair:" "${cpus[@]}"
