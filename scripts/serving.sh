#!/usr/bin/env bash
# Side-by-side figures for docs/performance.md: through the mount (FUSE passthrough,
# and the page cache with --no-passthrough) against in-process, and
# `decode: fast` against `decode: exact` in-process, on `oxefs synth` data.
# Each repetition runs every case once, in turn, so that a slow spell of a
# shared machine hits all of them; the summary gives medians of the runs
# and the median of the per-repetition ratios.
#   ./scripts/serving.sh            # DATA=/tmp/oxefs-synth OUT=serving-out REPS=5
# Every case runs with MEM (2GiB: room for about 30 train batches of the
# synth mix) and a warm-up of 40 batches, so that batch buffers are
# reused while measuring, as in a long training run, rather than each
# batch getting fresh memory.
# Needs /dev/fuse (as root for passthrough); about 25 minutes on 2 cores
# (SIZES= skips the decode comparison: about 8).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-synth}
OUT=${OUT:-serving-out}
REPS=${REPS:-5}
MEM=${MEM:-2GiB}
BENCH=${BENCH:-"--readers 4 --warmup 40 --batches 40"}
SIZES=${SIZES-"256 224 128"} # SIZES= skips the decode comparison
mkdir -p "$OUT"
go build -o "$OUT/oxefs" .
X="$OUT/oxefs"
[ -f "$DATA/mix.yaml" ] || "$X" synth "$DATA"
for s in $SIZES; do
  for m in exact fast; do
    sed -e "s/^image_size: .*/image_size: [$s, $s]/" -e "s/^seed: \(.*\)/seed: \1\ndecode: $m/" "$DATA/mix.yaml" > "$OUT/mix-$s-$m.yaml"
  done
done

inproc() { # name, config
  "$X" bench --config "$2" --cache-dir "$OUT/cache" --mem "$MEM" $BENCH --out "$OUT/runs/$1" --json > "$OUT/runs/$1.json" 2>"$OUT/runs/$1.log"
}
mounted() { # name, config, mount flags...
  local name=$1 mix=$2 mnt="$OUT/mnt"; shift 2
  mkdir -p "$mnt"
  "$X" mount "$mnt" --config "$mix" --cache-dir "$OUT/cache" --mem "$MEM" "$@" 2>"$OUT/runs/$name.mount.log" &
  local pid=$!
  for _ in $(seq 600); do [ -f "$mnt/info.json" ] && break; sleep 0.1; done
  "$X" bench "$mnt" $BENCH --out "$OUT/runs/$name" --json > "$OUT/runs/$name.json" 2>"$OUT/runs/$name.log"
  kill -TERM "$pid"; wait "$pid"
}

mkdir -p "$OUT/runs"
for r in $(seq "$REPS"); do
  for m in mix mix-single; do
    inproc "$m-inproc-$r" "$DATA/$m.yaml"
    mounted "$m-passthrough-$r" "$DATA/$m.yaml"
    mounted "$m-pagecache-$r" "$DATA/$m.yaml" --no-passthrough
  done
  for s in $SIZES; do
    inproc "decode-$s-exact-$r" "$OUT/mix-$s-exact.yaml"
    inproc "decode-$s-fast-$r" "$OUT/mix-$s-fast.yaml"
  done
done

python3 - "$OUT/runs" "$REPS" "$SIZES" <<'PY' | tee "$OUT/summary.txt"
import json, statistics, sys
runs, reps, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def load(name, r):
    return json.load(open(f"{runs}/{name}-{r}.json"))
def cpu(d):  # the pipeline's CPU (the daemon's, through a mount) plus the reader's
    return d["pipeline_cpu_ms_per_sample"] + d["reader_cpu_ms_per_sample"]
def row(label, a, b):
    xs = [load(a, r) for r in range(1, reps + 1)]
    ys = [load(b, r) for r in range(1, reps + 1)]
    ratios = [x["samples_per_s"] / y["samples_per_s"] for x, y in zip(xs, ys)]
    med = lambda v: statistics.median(v)
    print(f"| {label} | {med([x['samples_per_s'] for x in xs]):.0f} | {med([y['samples_per_s'] for y in ys]):.0f} | "
          f"{med(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | {med([cpu(x) for x in xs]):.2f} / {med([cpu(y) for y in ys]):.2f} "
          f"(reader {med([x['reader_cpu_ms_per_sample'] for x in xs]):.2f}) |")
print("| comparison | samples/s | against | ratio (range) | CPU ms/sample, this / that |")
print("|---|---|---|---|---|")
for m, label in (("mix", "29-dataset mix"), ("mix-single", "one dataset")):
    row(f"{label}: passthrough mount ÷ in-process", f"{m}-passthrough", f"{m}-inproc")
    row(f"{label}: page-cache mount ÷ in-process", f"{m}-pagecache", f"{m}-inproc")
    row(f"{label}: passthrough ÷ page-cache mount", f"{m}-passthrough", f"{m}-pagecache")
for s in sizes:
    row(f"29-dataset mix at {s}×{s}: fast ÷ exact, in-process", f"decode-{s}-fast", f"decode-{s}-exact")
PY
