#!/usr/bin/env bash
# LeRobot's own loader against oxefs on the same step-sample work (issue
# 26): two LeRobot v3 synth datasets (`oxefs synth --format lerobot
# --datasets 2 --episodes 10 --steps 100`: synth_fractal, one 256×320
# camera; synth_bridge, two 256×256 cameras; AV1, 10 fps, action[7],
# observation.state[7]; train = 10 episodes × 100 steps each), and two
# specs, each one oxefs config that both sides read:
#   (b) scripts/peer/lerobot_steps_b.yaml: one camera at t (256²) + an
#       action chunk of 50;
#   (c) scripts/peer/lerobot_steps_c.yaml: two cameras (256², 128²) and
#       the state at [-1/fps, 0] + an action chunk of 50.
# The LeRobot side is scripts/peer/lerobot_steps.py: LeRobotDataset
# (delta_timestamps, video_backend pyav, or torchcodec where it loads) and a
# torch DataLoader (shuffle, WORKERS workers, batch_size of the config),
# frames resized in the workers with torch.nn.functional.interpolate. Case
# "(b) spec cameras" removes the cameras the spec does not use from
# LeRobot's features (LeRobotDataset otherwise decodes every camera, here
# synth_bridge's second one too). Each case runs RUNS times (fresh
# workers, WARMUP batches, then BATCHES timed: multiples of WORKERS, as the
# workers deliver batches in rounds); the table gives medians of
# samples/s and of CPU ms per sample (the process and its workers).
#
#   ./scripts/lerobot-steps.sh   # PY=/tmp/lrvenv/bin/python DATA=/tmp/oxefs-lerobot-steps OUT=/tmp/lerobot-steps-out
#                                # RUNS=3 WORKERS=4 WARMUP=WORKERS BATCHES=4*WORKERS
#
# PY is a Python with lerobot 0.4.x (`pip install lerobot==0.4.4` in a
# venv; never needed by CI). Writing the data takes about 30 s on 2 cores;
# each LeRobot case about a minute.
#
# The oxefs side of the same spec is `oxefs bench --config` on the same
# file, with @SYNTH@ replaced by DATA, in-process (or on a mount):
#   sed "s#@SYNTH@#$DATA#" scripts/peer/lerobot_steps_c.yaml > c.yaml
#   oxefs bench --config c.yaml --workers 4 --warmup 5 --batches 20 --json
# This script runs it too (OXEFS_BENCH flags) and reports its
# samples_per_s and pipeline_cpu_ms_per_sample; a build without step mode
# (no `sample:` block in its config) shows "-" and its error in
# OUT/oxefs-*.log.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-/tmp/lrvenv/bin/python}
DATA=${DATA:-/tmp/oxefs-lerobot-steps}
OUT=${OUT:-/tmp/lerobot-steps-out}
RUNS=${RUNS:-3}
WORKERS=${WORKERS:-4}
WARMUP=${WARMUP:-$WORKERS}
BATCHES=${BATCHES:-$((4 * WORKERS))}
SYNTH=${SYNTH:-"--datasets 2 --episodes 10 --steps 100"}
OXEFS_BENCH=${OXEFS_BENCH:-"--workers $WORKERS --warmup 5 --batches 20"}
mkdir -p "$OUT"
go build -o "$OUT/oxefs" .
X="$OUT/oxefs"
[ -f "$DATA/mix.yaml" ] || nice "$X" synth --format lerobot $SYNTH "$DATA"
DATA=$(cd "$DATA" && pwd)
for s in b c; do sed "s#@SYNTH@#$DATA#" "scripts/peer/lerobot_steps_$s.yaml" > "$OUT/spec_$s.yaml"; done

lerobot() { # name, spec, extra flags...
  local name=$1 spec=$2; shift 2
  nice "$PY" scripts/peer/lerobot_steps.py "$OUT/spec_$spec.yaml" --workers "$WORKERS" --warmup "$WARMUP" \
    --batches "$BATCHES" --runs "$RUNS" "$@" > "$OUT/$name.json" 2> "$OUT/$name.log" ||
    { tail -5 "$OUT/$name.log" >&2; echo "$name failed: $OUT/$name.log" >&2; exit 1; }
  echo "$name done" >&2
}
oxefs() { # spec
  local r ok=1
  for r in $(seq 1 "$RUNS"); do
    if ! nice "$X" bench --config "$OUT/spec_$1.yaml" --cache-dir "$OUT/cache" $OXEFS_BENCH \
      --out "$OUT/oxefs-$1-$r" --json > "$OUT/oxefs-$1-$r.json" 2> "$OUT/oxefs-$1-$r.log"; then
      rm -f "$OUT/oxefs-$1-$r.json"; ok=0; break
    fi
  done
  [ "$ok" = 1 ] && echo "oxefs $1 done" >&2 || echo "oxefs $1: bench failed, see $OUT/oxefs-$1-$r.log" >&2
}
lerobot lerobot-b b
lerobot lerobot-b-spec-cameras b --only-spec-cameras
lerobot lerobot-c c
oxefs b
oxefs c

python3 - "$OUT" "$RUNS" <<'PY'
import json, os, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
med = statistics.median
rows = [("(b) 1 camera @t + action 50", "LeRobot", "lerobot-b"),
        ("(b) 1 camera @t + action 50", "LeRobot, spec cameras", "lerobot-b-spec-cameras"),
        ("(b) 1 camera @t + action 50", "oxefs", "oxefs-b"),
        ("(c) 2 cameras, state [-1,0] + action 50", "LeRobot", "lerobot-c"),
        ("(c) 2 cameras, state [-1,0] + action 50", "oxefs", "oxefs-c")]
info = None
print(f"{'spec':42} {'loader':22} {'samples/s':>10} {'CPU ms/sample':>14}  runs (samples/s)")
for spec, loader, name in rows:
    if name.startswith("lerobot"):
        r = json.load(open(f"{out}/{name}.json"))
        info = info or r
        sps = [x["samples_per_s"] for x in r["runs"]]
        cpu = [x["cpu_s_per_sample"] * 1e3 for x in r["runs"]]
    else:
        files = [f"{out}/{name}-{i}.json" for i in range(1, runs + 1)]
        if not all(os.path.exists(f) for f in files):
            print(f"{spec:42} {loader:22} {'-':>10} {'-':>14}  (see {out}/{name}-*.log)")
            continue
        rs = [json.load(open(f)) for f in files]
        sps = [x["samples_per_s"] for x in rs]
        cpu = [x["pipeline_cpu_ms_per_sample"] for x in rs]
    print(f"{spec:42} {loader:22} {med(sps):10.1f} {med(cpu):14.1f}  {', '.join(f'{x:.1f}' for x in sps)}")
print(f"lerobot {info['lerobot']}, torch {info['torch']}, video backend {info['video_backend']}, "
      f"resize {info['resize']}, {info['workers']} workers, batch {info['batch_size']}, "
      f"{info['warmup']} warmup + {info['batches']} timed batches per run")
PY
