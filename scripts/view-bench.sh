#!/usr/bin/env bash
# The daemon's throughput with the web page open and refreshing, against
# without, alternating on one mount so that both see the same load:
#   ./scripts/view-bench.sh
# Each pair: `oxefs bench MNT` alone, then again while a page is open: a
# headless chromium loads the page of a batch (frames, charts) every
# PAGE_EVERY seconds, and the live section's poll (stats.json, every 2 s)
# runs all along. Prints samples/s of each run and the median of the
# ratios with/without. Needs /dev/fuse and chromium.
# Environment: DATA (/tmp/oxefs-view-synth), OUT (view-bench-out), PAIRS
# (3), MIX (mix-steps), PAGE_EVERY (5).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-view-synth}
OUT=${OUT:-view-bench-out}
PAIRS=${PAIRS:-3}
MIX=${MIX:-mix-steps}
PAGE_EVERY=${PAGE_EVERY:-5}
BENCH="--readers 2 --warmup 3 --batches 30"
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
  local n=0 t=0
  while :; do
    curl -s -o /dev/null "${url}api/stats"
    if [ $((t % PAGE_EVERY)) -lt 2 ]; then
      chromium --headless --no-sandbox --disable-gpu --user-data-dir="$OUT/chromium" \
        --virtual-time-budget=10000 --dump-dom "${url}?n=$n&samples=64&live=0" >/dev/null 2>&1 || true
      n=$((n + 1))
    fi
    sleep 2; t=$((t + 2))
  done
}

rate() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples_per_s"])' "$1"; }
start=0
ratios=()
for i in $(seq "$PAIRS"); do
  for mode in without with; do
    if [ $mode = with ]; then page & ppid=$!; fi
    "$BIN" bench "$mnt" $BENCH --start $start --json --out "$OUT/$mode-$i" > "$OUT/$mode-$i.json" 2>"$OUT/$mode-$i.log"
    if [ $mode = with ]; then kill $ppid; wait $ppid 2>/dev/null || true; fi
    start=$((start + 40))
    echo "pair $i $mode: $(rate "$OUT/$mode-$i.json") samples/s"
  done
  ratios+=("$(python3 -c 'import sys; print(float(sys.argv[2]) / float(sys.argv[1]))' "$(rate "$OUT/without-$i.json")" "$(rate "$OUT/with-$i.json")")")
done
python3 -c 'import statistics,sys; r=[float(x) for x in sys.argv[1:]]; print("with/without per pair:", " ".join(f"{x:.3f}" for x in r), "median", f"{statistics.median(r):.3f}")' "${ratios[@]}"
