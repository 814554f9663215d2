#!/usr/bin/env bash
# LeRobot figures for docs/performance.md, in-process on `oxefs synth` data: the
# pipeline over a LeRobot-shaped synth mix (AV1 video) against a bare
# decode loop over the same samples' video frames (`bench --bare-decode`:
# the same frames and decoder, no scheduler, resize or metadata), and
# against the same mix stored as RLDS JPEG (`oxefs synth` with the same
# flags renders the same scenes). Each repetition runs the three cases in
# turn, so a slow spell of a shared machine hits all of them; the summary
# gives medians and the median of the per-repetition ratios.
#   ./scripts/lerobot.sh        # LR=/tmp/oxefs-lerobot RL=/tmp/oxefs-lerobot-rlds OUT=lerobot-out REPS=5
# Writing the two synth mixes (29 datasets × 6 episodes × 40 steps) takes
# about 4 minutes on 2 cores, the runs about 6.
set -euo pipefail
cd "$(dirname "$0")/.."
LR=${LR:-/tmp/oxefs-lerobot}
RL=${RL:-/tmp/oxefs-lerobot-rlds}
OUT=${OUT:-lerobot-out}
REPS=${REPS:-5}
SYNTH=${SYNTH:-"--datasets 29 --episodes 4 --steps 40"}
BENCH=${BENCH:-"--warmup 5 --batches 20"}
mkdir -p "$OUT/runs"
go build -o "$OUT/oxefs" .
X="$OUT/oxefs"
[ -f "$LR/mix.yaml" ] || "$X" synth --format lerobot $SYNTH "$LR"
[ -f "$RL/mix.yaml" ] || "$X" synth $SYNTH "$RL"

run() { # name, config, extra flags...
  local name=$1 mix=$2; shift 2
  "$X" bench --config "$mix" --cache-dir "$OUT/cache" $BENCH "$@" --out "$OUT/runs/$name" --json > "$OUT/runs/$name.json" 2>"$OUT/runs/$name.log"
}
for r in $(seq 1 "$REPS"); do
  run "pipeline-$r" "$LR/mix.yaml"
  run "bare-$r" "$LR/mix.yaml" --bare-decode
  run "rlds-$r" "$RL/mix.yaml"
  echo "repetition $r done" >&2
done
python3 - "$OUT" "$REPS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def sps(name):
    return json.load(open(f"{out}/runs/{name}.json"))["samples_per_s"]
p = [sps(f"pipeline-{r}") for r in range(1, reps + 1)]
b = [sps(f"bare-{r}") for r in range(1, reps + 1)]
j = [sps(f"rlds-{r}") for r in range(1, reps + 1)]
med = statistics.median
print(f"LeRobot AV1 mix, pipeline     {med(p):8.1f} samples/s  (runs: {', '.join(f'{x:.1f}' for x in p)})")
print(f"bare decode loop, same frames {med(b):8.1f} samples/s  (runs: {', '.join(f'{x:.1f}' for x in b)})")
print(f"same mix as RLDS JPEG         {med(j):8.1f} samples/s  (runs: {', '.join(f'{x:.1f}' for x in j)})")
print(f"pipeline / bare decode        {med([x / y for x, y in zip(p, b)]):.2f}")
print(f"LeRobot / RLDS JPEG           {med([x / y for x, y in zip(p, j)]):.2f}")
PY
