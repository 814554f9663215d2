#!/usr/bin/env bash
# oxefs against tf.data doing the same all-pairs work, side by side on the
# same data and machine: samples per CPU-second of
#   tf.data v2      scripts/peer/tfdata_v2.py (sample_from_datasets, shuffle
#                   500, batch, map(decode, resize), AUTOTUNE);
#   in-process      `oxefs bench --config MIX --readers 1`, per binary;
#   mount + Loader  `oxefs mount` read by oxefs.Loader
#                   (scripts/peer/loader_cpu.py: the daemon's CPU plus the
#                   reader's), per binary;
# on MIX = DATA/mix.yaml with `samples_per_episode: 0` (every valid pair of
# every episode is a sample; WORK=one: `samples_per_episode: 1` and the peer's
# --pairs one, one random pair per episode visit). RUNS rounds, each running every case once in
# turn; it prints each run, then the medians and the ratios oxefs / tf.data
# of samples per CPU-second (median of the per-round ratios, range).
#   TFPY=/path/to/venv/bin/python ./scripts/peer.sh
#   BINS="main:/tmp/main-bin/oxefs cpu:/tmp/cpu-bin/oxefs" TFPY=... ./scripts/peer.sh
# Environment: BINS (NAME:PATH ..., default: this tree, built now, as
# "this"), TFPY (a python with tensorflow, tensorflow_datasets and pyyaml;
# default python3), PY (a python with numpy for the Loader; default
# python3), DATA (/tmp/oxefs-synth; written with `oxefs synth` if absent),
# OUT (peer-out), RUNS (3), WARMUP (30) and BATCHES (100) batches of each
# run, MEM (oxefs's --mem; unset: its default, which is also the fastest
# here: at 2GiB the GC runs 3-4 times as often), PEER_ARGS (more tfdata_v2.py flags, e.g.
# --decode-first). Before measuring, scripts/peer/same_work.py checks that
# the peer's samples equal the first binary's (frames bit for bit) on two
# batches. Needs /dev/fuse. About 15 minutes on 2 cores with two
# binaries. Without TensorFlow it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-synth}
OUT=${OUT:-peer-out}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-30}
BATCHES=${BATCHES:-100}
MEM=${MEM:-}
memflag=(${MEM:+--mem "$MEM"})
TFPY=${TFPY:-python3}
PY=${PY:-python3}
PEER_ARGS=${PEER_ARGS:-}
WORK=${WORK:-all}
case $WORK in
  all) spe=0 ;;
  one) spe=1 ;;
  *) echo "peer.sh: WORK=$WORK: all (every pair, samples_per_episode: 0) or one (one random pair per episode visit)" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

if ! "$TFPY" -c 'import tensorflow, tensorflow_datasets, yaml' 2>/dev/null; then
  echo "peer.sh: $TFPY lacks tensorflow, tensorflow_datasets or yaml: nothing measured (TFPY=a python that has them)"
  exit 0
fi
if [ -z "${BINS:-}" ]; then go build -o "$OUT/oxefs" .; BINS="this:$OUT/oxefs"; fi
names=()
declare -A BIN
for nb in $BINS; do
  name=${nb%%:*} path=${nb#*:}
  [ -x "$path" ] || { echo "peer.sh: BINS entry $nb: $path is not an executable" >&2; exit 2; }
  names+=("$name"); BIN[$name]=$path
done
first=${BIN[${names[0]}]}
[ -f "$DATA/mix.yaml" ] || "$first" synth "$DATA"
MIX=$OUT/mix-$WORK.yaml
sed -E "s/^samples_per_episode:.*//; s/^(batch_size:.*)\$/\1\nsamples_per_episode: $spe/" "$DATA/mix.yaml" > "$MIX"
grep -q "^samples_per_episode: $spe\$" "$MIX" || { echo "peer.sh: $DATA/mix.yaml has no batch_size line to put samples_per_episode after" >&2; exit 2; }
# Each binary its own cache; the episode-length indexes are built here,
# unmeasured.
for n in "${names[@]}"; do
  "${BIN[$n]}" warm --config "$MIX" --cache-dir "$OUT/cache-$n" > "$OUT/warm-$n.log" 2>&1
done
"$TFPY" scripts/peer/same_work.py "$MIX" --binary "$first" --cache-dir "$OUT/cache-${names[0]}" \
  > "$OUT/same-work.txt" 2> "$OUT/same-work.log" || { cat "$OUT/same-work.txt"; echo "peer.sh: the tf.data peer does not build what oxefs builds" >&2; exit 1; }
tail -1 "$OUT/same-work.txt"

for i in $(seq "$RUNS"); do
  "$TFPY" scripts/peer/tfdata_v2.py "$MIX" --warmup "$WARMUP" --batches "$BATCHES" --pairs "$WORK" $PEER_ARGS --json \
    > "$OUT/tfdata-$i.json" 2> "$OUT/tfdata-$i.log"
  echo "round $i tf.data v2: $(cat "$OUT/tfdata-$i.json")"
  for n in "${names[@]}"; do
    "${BIN[$n]}" bench --config "$MIX" --cache-dir "$OUT/cache-$n" "${memflag[@]}" --readers 1 \
      --warmup "$WARMUP" --batches "$BATCHES" --json --out "$OUT/bench-$n-$i" \
      > "$OUT/inproc-$n-$i.json" 2> "$OUT/inproc-$n-$i.log"
    echo "round $i $n in-process: samples/s $(jq -r .samples_per_s "$OUT/inproc-$n-$i.json") CPU ms/sample $(jq -r .pipeline_cpu_ms_per_sample "$OUT/inproc-$n-$i.json")"
    "$PY" scripts/peer/loader_cpu.py "$MIX" --binary "${BIN[$n]}" --cache-dir "$OUT/cache-$n" "${memflag[@]}" \
      --warmup "$WARMUP" --batches "$BATCHES" --json > "$OUT/loader-$n-$i.json" 2> "$OUT/loader-$n-$i.log"
    echo "round $i $n mount + Loader: $(cat "$OUT/loader-$n-$i.json")"
  done
done

"$PY" - "$OUT" "$RUNS" "${names[@]}" <<'PY'
import json, statistics as st, sys
out, runs, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(f):
    return [json.load(open(f"{out}/{f}-{i}.json")) for i in range(1, runs + 1)]
tf = [r["cpu_ms_per_sample"] for r in load("tfdata")]
tf_sps = [r["samples_per_s"] for r in load("tfdata")]
print(f"\n{runs} rounds; samples per CPU-second = 1000 / CPU ms per sample (medians); ratio: median of the per-round ratios (range)\n")
print("| pipeline | CPU ms/sample | samples per CPU-s | samples/s | ÷ tf.data v2, samples per CPU-s |")
print("|---|---|---|---|---|")
print(f"| tf.data v2 | {st.median(tf):.2f} | {1e3 / st.median(tf):.0f} | {st.median(tf_sps):.0f} | 1 |")
for n in names:
    for label, f, k in (("in-process", "inproc", "pipeline_cpu_ms_per_sample"), ("mount + Loader", "loader", "cpu_ms_per_sample")):
        rs = load(f"{f}-{n}")
        ms = [r[k] for r in rs]
        ratio = [t / m for t, m in zip(tf, ms)]
        print(f"| oxefs {n}, {label} | {st.median(ms):.2f} | {1e3 / st.median(ms):.0f} | {st.median(r['samples_per_s'] for r in rs):.0f} "
              f"| **{st.median(ratio):.2f}** ({min(ratio):.2f}–{max(ratio):.2f}) |")
PY
