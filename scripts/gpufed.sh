#!/usr/bin/env bash
# The GPU-fed benchmark, one command: for each binary, the pipeline's own
# rate (oxefs bench, in-process) and scripts/gpufed.py (ResNet-18,
# ResNet-50 and ViT-B/16 in bf16, resident batch vs fed by oxefs.Loader over a mount, decode: exact pinned and pageable, and decode: gpu decoded on the GPU).
#
#   BINS="before:/path/oxefs after:/path/oxefs" ./scripts/gpufed.sh
#
# DATA (default /tmp/oxefs-gpufed): synth data, written by the first binary
# when missing (29 datasets, default size). B (128): batch size. STEPS
# (300), WARMUP (30): per model. MODELS (resnet18,resnet50,vit_b_16). OUT (default $DATA/out): results, one
# JSON per binary and step. On a machine without a CUDA GPU, gpufed.py says
# so and exits 0; the in-process figures are still measured.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-/tmp/oxefs-gpufed}
B=${B:-128}
STEPS=${STEPS:-300}
WARMUP=${WARMUP:-30}
OUT=${OUT:-$DATA/out}
BINS=${BINS:-"this:./oxefs"}
MODELS=${MODELS:-resnet18,resnet50,vit_b_16}
PY=${PYTHON:-python3}
cores=$(nproc)
mkdir -p "$OUT"

first=${BINS%% *}
first=${first#*:}
if [ ! -f "$DATA/mix.yaml" ]; then
  echo "writing synth data to $DATA"
  "$first" synth "$DATA" --workers 0 >"$OUT/synth.log" 2>&1
fi
mix=$DATA/mix-gpufed.yaml
# Enough batches for both models' warm-up and measured steps.
sed -e "s/^batch_size: .*/batch_size: $B/" -e "s/^num_batches: .*/num_batches: 100000/" "$DATA/mix.yaml" >"$mix"

for entry in $BINS; do
  name=${entry%%:*}
  bin=${entry#*:}
  cache=$DATA/cache-$name
  echo "== $name ($bin)"
  # The pipeline alone, no FUSE, no trainer: its samples/s and CPU per sample.
  "$bin" bench --config "$mix" --cache-dir "$cache" --workers "$cores" --readers 4 \
    --warmup 10 --batches 60 --json --out "$DATA/bench-$name" >"$OUT/inprocess-$name.json"
  "$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); print("in-process: %.0f samples/s, %.3f CPU ms/sample" % (s["samples_per_s"], s["pipeline_cpu_ms_per_sample"]))' "$OUT/inprocess-$name.json"
  "$PY" scripts/gpufed.py "$mix" --binary "$bin" --workers "$cores" --steps "$STEPS" --warmup "$WARMUP" --models "$MODELS" \
    --mount-arg=--cache-dir="$cache" --json "$OUT/gpufed-$name.json"
done
