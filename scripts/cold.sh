#!/usr/bin/env bash
# Cold start from a GCS-like remote (issue 13): time to the first batch with
# an empty cache, against the bound
#   (bytes of the episodes batch 0 uses) / bandwidth + (header hops on the critical path) × latency,
# and steady-state samples/s cold beside warm.
#
#   ./scripts/cold.sh                          # CASE=four RUNS=3
#   CASE=mix29 RUNS=1 ./scripts/cold.sh
#   SOURCE=hf ./scripts/cold.sh                # the same from a fake Hugging Face Hub
#   SOURCE=s3 ./scripts/cold.sh                # the same from a fake S3 bucket
#
# CASE=four:  the first 4 synth datasets, 2 train shards each (synth --datasets 4 --shards 2).
# CASE=mix29: all 29 synth datasets, 8 train shards of about 40 MB each
#             (synth --shards 8 --shard-size 40MB: 30–50 MB shards at 10 MB/s
#             behave like OXE's 200–350 MB shards at 70 MB/s). About 9 GB.
#
# The data is written once under DATA/CASE and reused. scripts/fakegcs serves
# it (objects kept in DATA/CASE.store) with LATENCY per request and a RATE cap
# on all responses together; the client also gets --max-fetch-rate RATE.
# SOURCE=hf serves it instead from scripts/fakehub (in memory), as the
# repository oxe/synth, through the same limits: the sources are then
# hf://datasets/oxe/synth/NAME/VERSION, every shard an LFS file behind a
# redirect to the fake storage host (OUT defaults to cold-out/CASE-hf).
# Each cold run starts from a fresh --cache-dir; the warm runs then reuse the
# cache the last cold run left. Batch 0's episodes come from a mount of the
# local copy (same plan: only the sources differ), so /dev/fuse is needed.
#
# SOURCE=s3 serves the same data as an S3 bucket instead (fakegcs -s3:
# gofakes3, in memory, same latency and rate) and reads it as s3:// through
# AWS_ENDPOINT_URL_S3; OUT then defaults to cold-out/CASE-s3.
#
# Environment: CASE, SOURCE (gs; s3, hf), RUNS (3), RATE (10MB), LATENCY (30ms), DATA (/tmp/oxefs-cold),
# OUT (cold-out/CASE), PORT (4443), BENCH (bench flags; per-case default below),
# OXEFS (an oxefs binary to measure instead of this tree's, e.g. an older
# build for a before/after figure).
# Prints a table and writes OUT/summary.json; each run's bench JSON and log
# are in OUT. Needs go and python3. With whole-shard fetch, CASE=four takes
# about 45 s per cold run (after 2–3 minutes of synth on 2 cores, once);
# CASE=mix29 needs the 9 GB written once (about an hour on 2 busy cores)
# and minutes per cold run.
set -euo pipefail
cd "$(dirname "$0")/.."
CASE=${CASE:-four}
RUNS=${RUNS:-3}
RATE=${RATE:-10MB}
LATENCY=${LATENCY:-30ms}
DATA=${DATA:-/tmp/oxefs-cold}
SOURCE=${SOURCE:-gs}
case "$SOURCE" in
gs) OUT=${OUT:-cold-out/$CASE}; PORT=${PORT:-4443} ;;
s3) OUT=${OUT:-cold-out/$CASE-s3}; PORT=${PORT:-4443} ;;
hf) OUT=${OUT:-cold-out/$CASE-hf}; PORT=${PORT:-4480} ;;
*) echo "SOURCE must be gs, s3 or hf" >&2; exit 2 ;;
esac
case "$CASE" in
four)
  SYNTH=(--datasets 4 --shards 2)
  BENCH=${BENCH:-"--readers 4 --warmup 5 --batches 40"} ;;
mix29)
  SYNTH=(--shards 8 --shard-size 40MB)
  BENCH=${BENCH:-"--readers 4 --warmup 0 --batches 4"} ;;
*) echo "CASE must be four or mix29" >&2; exit 2 ;;
esac
SRC="$DATA/$CASE"
mkdir -p "$OUT" "$DATA"
OUT=$(cd "$OUT" && pwd)
go build -o "$OUT/oxefs" .
go build -o "$OUT/fakegcs" ./scripts/fakegcs
go build -o "$OUT/fakehub" ./scripts/fakehub
go build -o "$OUT/episodebytes" ./scripts/episodebytes
X=${OXEFS:-$OUT/oxefs}

[ -f "$SRC/mix.yaml" ] || "$X" synth "$SRC" "${SYNTH[@]}"
du -sb "$SRC" | awk '{printf "data: %s, %.1f MB\n", $2, $1/1e6}'

# Batch 0 of the local copy: the episodes it uses, their record bytes and
# the header hops to reach them.
mnt="$OUT/mnt"
mkdir -p "$mnt"
"$X" mount "$mnt" --config "$SRC/mix.yaml" --cache-dir "$OUT/cache-local" 2>"$OUT/local-mount.log" &
mpid=$!
for _ in $(seq 600); do [ -f "$mnt/info.json" ] && break; sleep 0.1; done
cp "$mnt/batches/000000.json" "$OUT/batch0.json"
# Every batch the bench reads (--warmup + --batches), for the whole run's
# bandwidth bound.
total=$(( $(sed -nE 's/.*--warmup[ =]([0-9]+).*/\1/p' <<<"$BENCH" | grep . || echo 5) + $(sed -nE 's/.*--batches[ =]([0-9]+).*/\1/p' <<<"$BENCH" | grep . || echo 50) ))
mkdir -p "$OUT/batches"
for ((i = 0; i < total; i++)); do cp "$mnt/batches/$(printf %06d "$i").json" "$OUT/batches/"; done
kill -TERM "$mpid"; wait "$mpid" || true
"$OUT/episodebytes" -data "$SRC" "$OUT/batch0.json" > "$OUT/episodes.json"
"$OUT/episodebytes" -data "$SRC" "$OUT"/batches/*.json > "$OUT/episodes-run.json"

case "$SOURCE" in
hf)
  "$OUT/fakehub" -v -dir "$SRC" -repo oxe/synth -port "$PORT" -latency "$LATENCY" -rate "$RATE" > "$OUT/fakehub.log" 2>&1 &
  remote=$!
  SRCENV=(HF_ENDPOINT=http://127.0.0.1:$PORT)
  sed -E "s#source: \"?$SRC/([^\"]*)\"?#source: hf://datasets/oxe/synth/\1#" "$SRC/mix.yaml" > "$OUT/mix-remote.yaml"
  ;;
s3)
  "$OUT/fakegcs" -s3 -dir "$SRC" -bucket synth -port "$PORT" -latency "$LATENCY" -rate "$RATE" > "$OUT/fakegcs.log" 2>&1 &
  remote=$!
  SRCENV=(AWS_ENDPOINT_URL_S3=http://127.0.0.1:$PORT AWS_REGION=us-east-1)
  sed -E "s#source: \"?$SRC/([^\"]*)\"?#source: s3://synth/\1\n    anonymous: true#" "$SRC/mix.yaml" > "$OUT/mix-remote.yaml"
  ;;
*)
  "$OUT/fakegcs" -dir "$SRC" -store "$SRC.store" -bucket synth -port "$PORT" -latency "$LATENCY" -rate "$RATE" > "$OUT/fakegcs.log" 2>&1 &
  remote=$!
  SRCENV=(STORAGE_EMULATOR_HOST=127.0.0.1:$PORT)
  sed -E "s#source: \"?$SRC/([^\"]*)\"?#source: gs://synth/\1\n    anonymous: true#" "$SRC/mix.yaml" > "$OUT/mix-remote.yaml"
  ;;
esac
trap 'kill "$remote" 2>/dev/null || true' EXIT
for _ in $(seq 6000); do grep -q serving "$OUT"/fake*.log && break; kill -0 "$remote"; sleep 0.2; done

run() { # name, cache dir
  local t0 t1
  t0=$(date +%s.%N)
  env "${SRCENV[@]}" "$X" bench --config "$OUT/mix-remote.yaml" --cache-dir "$2" \
    --max-fetch-rate "$RATE" $BENCH --out "$OUT/$1" --json > "$OUT/$1.json" 2>"$OUT/$1.log"
  t1=$(date +%s.%N)
  echo "$t0 $t1" > "$OUT/$1.wall"
}
for i in $(seq "$RUNS"); do
  rm -rf "$OUT/cache"
  run "cold-$i" "$OUT/cache"
  echo "cold run $i: $(cat "$OUT/cold-$i.wall" | awk '{printf "%.1f s", $2-$1}')"
done
for i in $(seq "$RUNS"); do run "warm-$i" "$OUT/cache"; done
kill "$remote"; wait "$remote" 2>/dev/null || true
trap - EXIT

python3 - "$OUT" "$RUNS" "$RATE" "$LATENCY" "$CASE" "$SOURCE" <<'PY'
import collections, json, re, statistics, sys
out, runs, rate_s, lat_s, case, source = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
def parse_rate(t):
    m = re.fullmatch(r"([\d.]+)\s*([kmg]i?b|b)?", t.strip().lower())
    mult = {None: 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 2**10, "mib": 2**20, "gib": 2**30}[m.group(2)]
    return float(m.group(1)) * mult
def parse_latency(t):
    m = re.fullmatch(r"([\d.]+)(ms|s|us)", t.strip())
    return float(m.group(1)) * {"ms": 1e-3, "s": 1, "us": 1e-6}[m.group(2)]
rate, lat = parse_rate(rate_s), parse_latency(lat_s)
ep = json.load(open(f"{out}/episodes.json"))
bound = ep["bytes"] / rate + ep["hops"] * lat
# The whole run moves at least the distinct episodes of every batch read.
run_ep = json.load(open(f"{out}/episodes-run.json"))
run_fetch_s = run_ep["bytes"] / rate
# Batch 0 of the local mount and of the remote bench must be the same plan.
local = collections.Counter(json.load(open(f"{out}/batch0.json"))["dataset_name"])

def load(name):
    r = json.load(open(f"{out}/{name}.json"))
    recs = [json.loads(l) for l in open(f"{out}/{name}/batch_times.jsonl")]
    b0 = next(x for x in recs if x["idx"] == 0)
    if collections.Counter(b0["dataset_counts"]) != local:
        print(f"WARNING {name}: batch 0 mixes {b0['dataset_counts']}, the local mount's {dict(local)}")
    t0, t1 = map(float, open(f"{out}/{name}.wall").read().split())
    end = max(x["end_s"] for x in recs)
    n = len(recs) * r["batch_size"]
    return {
        "first_s": b0["end_s"],                  # bench start (after opening the mix) to batch 0
        "open_s": (t1 - t0) - end,               # process start to bench start, and exit
        "fetched_mb": r["fetched_bytes"] / 1e6,
        "samples_per_s": r["samples_per_s"],     # measured phase (after --warmup)
        "run_samples_per_s": n / end,            # every batch, warm-up included
        "wall_s": t1 - t0,
    }
cold = [load(f"cold-{i}") for i in range(1, runs + 1)]
warm = [load(f"warm-{i}") for i in range(1, runs + 1)]
med = lambda rs, k: statistics.median(r[k] for r in rs)
s = {
    "case": case, "source": source, "runs": runs, "rate_bytes_per_s": rate, "latency_s": lat,
    "batch0": {"samples": ep["samples"], "episodes": ep["episodes"], "episode_mb": ep["bytes"] / 1e6,
               "shards": ep["shards"], "hops": ep["hops"]},
    "bound_s": bound,
    "cold": {k: med(cold, k) for k in cold[0]}, "warm": {k: med(warm, k) for k in warm[0]},
    "cold_runs": cold, "warm_runs": warm,
}
s["cold_first_over_bound"] = s["cold"]["first_s"] / bound
# The whole run, cold, against min(decode rate, bandwidth bound): the warm
# runs' rate is the decode rate; the bandwidth bound moves the distinct
# episodes of every batch read once.
s["run"] = {"samples": run_ep["samples"], "episodes": run_ep["episodes"], "episode_mb": run_ep["bytes"] / 1e6,
            "bandwidth_samples_per_s": run_ep["samples"] / run_fetch_s,
            "decode_samples_per_s": s["warm"]["run_samples_per_s"]}
s["run"]["bound_samples_per_s"] = min(s["run"]["bandwidth_samples_per_s"], s["run"]["decode_samples_per_s"])
s["cold_run_over_bound"] = s["cold"]["run_samples_per_s"] / s["run"]["bound_samples_per_s"]
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
c, w = s["cold"], s["warm"]
print(f"\n{case} from {source}://: {rate_s}/s, {lat_s} per request, median of {runs}")
print(f"batch 0: {ep['samples']} samples, {ep['episodes']} episodes, {ep['bytes']/1e6:.1f} MB in {ep['shards']} shards, {ep['hops']} hops")
print(f"bound: {ep['bytes']/1e6:.1f} MB / {rate/1e6:g} MB/s + {ep['hops']} × {lat*1e3:g} ms = {bound:.1f} s")
print("| | first batch s | open s | fetched MB | samples/s measured | samples/s whole run |")
print("|---|---|---|---|---|---|")
for name, r in (("cold", c), ("warm", w)):
    print(f"| {name} | {r['first_s']:.1f} | {r['open_s']:.1f} | {r['fetched_mb']:.0f} | {r['samples_per_s']:.0f} | {r['run_samples_per_s']:.0f} |")
print(f"cold first batch / bound: {s['cold_first_over_bound']:.2f}")
r = s["run"]
print(f"whole run: {r['samples']} samples, {r['episodes']} distinct episodes, {r['episode_mb']:.1f} MB: "
      f"bandwidth bound {r['bandwidth_samples_per_s']:.1f} samples/s, decode (warm) {r['decode_samples_per_s']:.1f}")
print(f"cold whole run / min(decode, bandwidth bound): {s['cold_run_over_bound']:.2f}")
PY
