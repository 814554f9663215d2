#!/usr/bin/env bash
# Bytes flipped in transit, against a real mount: a synthetic RLDS mix
# served by fakegcs -flip N (every Nth object read has one byte inverted),
# read through `oxefs mount` cold, again after a restart over the same
# cache with no faults, and through `oxefs warm` + `mount --offline`; each
# run's batches are compared with a mount of the local copy.
#
#   scripts/flips.sh            # FLIP=3 BATCHES=20 DATA=/tmp/oxefs-flips-$FORMAT
#   FORMAT=lerobot scripts/flips.sh   # a LeRobot mix (AV1 video, parquet)
#
# A LeRobot mix is read by ranges (video sample spans, parquet blocks) that
# no parser checks: those are compared as two copies (--verify-ranges
# twice); VERIFY=off mounts with --verify-ranges off, to see what it risks.
#
# At a high rate (FLIP=3), a whole shard downloaded in several slices
# rarely comes undamaged three times running: warm then says which shards
# it could not keep, and --offline refuses to start.
#
# It prints, per run, how many batches differ from the local run and how
# many reads failed (EIO), and the disk cache's verified/damaged/rejected
# counts from stats.json.
set -euo pipefail
cd "$(dirname "$0")/.."
FLIP=${FLIP:-3}
BATCHES=${BATCHES:-20}
FORMAT=${FORMAT:-rlds}
VERIFY=${VERIFY:-twice}
DATA=${DATA:-/tmp/oxefs-flips-$FORMAT}
PORT=${PORT:-4453}
OUT=$(mktemp -d)
trap 'for m in "$OUT"/mnt-*; do fusermount3 -u "$m" 2>/dev/null || true; done; kill "${gcs:-0}" 2>/dev/null || true' EXIT
go build -o "$OUT/oxefs" .
go build -o "$OUT/fakegcs" ./scripts/fakegcs
X=${OXEFS:-$OUT/oxefs} # OXEFS: another build to try, e.g. the commit before
if [ "$FORMAT" = lerobot ]; then
  [ -f "$DATA/mix.yaml" ] || "$X" synth "$DATA" --datasets 2 --format lerobot >/dev/null
else
  [ -f "$DATA/mix.yaml" ] || "$X" synth "$DATA" --datasets 2 --shards 3 >/dev/null
fi

# hashes NAME CONFIG CACHE [MOUNT FLAGS...]: mounts, hashes the first
# $BATCHES batches into $OUT/NAME.txt ("-" for a read that failed), prints
# the disk cache counts, unmounts.
hashes() {
  local name=$1 cfg=$2 cache=$3
  shift 3
  local mnt="$OUT/mnt-$name"
  mkdir -p "$mnt"
  STORAGE_EMULATOR_HOST=127.0.0.1:$PORT "$X" mount "$mnt" --config "$cfg" --cache-dir "$cache" --verify-ranges "$VERIFY" "$@" 2>"$OUT/$name.log" &
  local pid=$!
  for _ in $(seq 600); do [ -f "$mnt/info.json" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "  $name: the mount refused to start: $(tail -n 3 "$OUT/$name.log" | tr '\n' ' ')"
    printf -- '-\n%.0s' $(seq "$BATCHES") > "$OUT/$name.txt"
    return
  fi
  for ((i = 0; i < BATCHES; i++)); do
    sha256sum "$mnt/batches/$(printf %06d "$i").npy" 2>/dev/null | cut -c1-64 || echo -
  done > "$OUT/$name.txt"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["disk_cache"]; print("  disk cache: verified %d, damaged %d, rejected %d, compared %d" % (d.get("verified",0), d.get("damaged",0), d.get("rejected",0), d.get("compared",0)))' "$mnt/stats.json" 2>/dev/null || true
  kill -TERM "$pid"
  wait "$pid" || true
}

# compare NAME: batches that differ from the local run, and failed reads.
compare() {
  local differ failed
  differ=$(paste "$OUT/local.txt" "$OUT/$1.txt" | awk '$2 != "-" && $1 != $2' | wc -l)
  failed=$(grep -c '^-$' "$OUT/$1.txt" || true)
  echo "$1: $differ of $BATCHES batches differ from the local run, $failed reads failed"
}

hashes local "$DATA/mix.yaml" "$OUT/cache-local"
"$OUT/fakegcs" -dir "$DATA" -bucket synth -port "$PORT" -flip "$FLIP" >"$OUT/fakegcs.log" 2>&1 &
gcs=$!
for _ in $(seq 600); do grep -q serving "$OUT/fakegcs.log" && break; sleep 0.1; done
sed -E "s#source: \"?$DATA/([^\"]*)\"?#source: gs://synth/\1\n    anonymous: true#" "$DATA/mix.yaml" >"$OUT/mix-gcs.yaml"

hashes cold "$OUT/mix-gcs.yaml" "$OUT/cache"
compare cold
kill "$gcs"; wait "$gcs" 2>/dev/null || true
"$OUT/fakegcs" -dir "$DATA" -bucket synth -port "$PORT" >"$OUT/fakegcs.log" 2>&1 &
gcs=$!
for _ in $(seq 600); do grep -q serving "$OUT/fakegcs.log" && break; sleep 0.1; done
hashes restart "$OUT/mix-gcs.yaml" "$OUT/cache"
compare restart
kill "$gcs"; wait "$gcs" 2>/dev/null || true

"$OUT/fakegcs" -dir "$DATA" -bucket synth -port "$PORT" -flip "$FLIP" >"$OUT/fakegcs.log" 2>&1 &
gcs=$!
for _ in $(seq 600); do grep -q serving "$OUT/fakegcs.log" && break; sleep 0.1; done
STORAGE_EMULATOR_HOST=127.0.0.1:$PORT "$X" warm --config "$OUT/mix-gcs.yaml" --cache-dir "$OUT/cache-warm" --verify-ranges "$VERIFY" 2>"$OUT/warm.log" |
  grep -E "damaged|offline|shards in" | sed 's/^/  warm: /'
kill "$gcs"; wait "$gcs" 2>/dev/null || true
hashes offline "$OUT/mix-gcs.yaml" "$OUT/cache-warm" --offline
compare offline
rm -rf "$OUT"
