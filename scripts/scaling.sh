#!/usr/bin/env bash
# Core-scaling measurement for oxefs: samples/s at --workers W, in-process
# (`oxefs bench --config MIX`) and through a mount (`oxefs mount` +
# `oxefs bench MNT`), on the 29-dataset synth mix and on synth_fractal alone
# (mix-single.yaml), both written by `oxefs synth` here.
#
# Env:
#   OUT       where logs/results go (default ./scaling-out)
#   DATA      synth dir (default /tmp/oxefs-synth; reused if mix.yaml exists)
#   SYNTH     extra synth flags (default none: the default synth set)
#   WORKERS   worker counts (default "1 2 4 8 16")
#   MIXES     which mixes (default "mix mix-single")
#   MODES     "inproc mount" (default both)
#   REPS      repetitions, rep-major order (default 3)
#   READERS   bench readers (default 8), WARMUP (default 5)
#   BPW       measured batches per worker (default 20), BMIN (default 80):
#             --batches = max(BMIN, BPW*W), so each run lasts about as long
#   DEADLINE  seconds since script start after which no new run starts (default 540)
#   RUNMAX    timeout per bench (default 90)
#   EXTRA     1: after the reps, a few extra runs (readers 4 at max workers)
set -uo pipefail
T0=$(date +%s)
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/scaling-out}
DATA=${DATA:-/tmp/oxefs-synth}
SYNTH=${SYNTH:-}
WORKERS=${WORKERS:-"1 2 4 8 16"}
MIXES=${MIXES:-"mix mix-single"}
MODES=${MODES:-"inproc mount"}
REPS=${REPS:-3}
READERS=${READERS:-8}
WARMUP=${WARMUP:-5}
BPW=${BPW:-20}
BMIN=${BMIN:-80}
DEADLINE=${DEADLINE:-540}
RUNMAX=${RUNMAX:-90}
EXTRA=${EXTRA:-1}
REPSTART=${REPSTART:-1}
L=${LOGDIR:-/tmp/scal-logs}
rm -rf "$L"; mkdir -p "$OUT" "$L"
LOG=$OUT/scaling.log
RES=$OUT/results.tsv
exec > >(tee -a "$LOG") 2>&1
el() { echo $(( $(date +%s) - T0 )); }
say() { echo "[$(el)s] $*"; }

# The binary: $OXEFS, else oxefs.gz or oxefs beside this script (how it
# travels to a machine of its own, with libturbojpeg in lib/ beside it),
# else the repository's ./oxefs (go build -o oxefs .).
X=/tmp/oxefs-bin
if [ -n "${OXEFS:-}" ]; then cp "$OXEFS" $X
elif [ -f "$HERE/oxefs.gz" ]; then gzip -dc "$HERE/oxefs.gz" > $X
elif [ -f "$HERE/oxefs" ]; then cp "$HERE/oxefs" $X
else cp "$HERE/../oxefs" $X; fi
chmod +x $X
export LD_LIBRARY_PATH="$HERE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TCK=$(getconf CLK_TCK)

say "== machine"
{
  echo "nproc: $(nproc)"; uname -a; ldd --version 2>&1 | head -1
  lscpu 2>/dev/null | head -20
  grep -E 'MemTotal|MemAvailable' /proc/meminfo
  cat /sys/fs/cgroup/cpu.max 2>/dev/null | sed 's/^/cgroup cpu.max: /'
  cat /sys/fs/cgroup/memory.max 2>/dev/null | sed 's/^/cgroup memory.max: /'
  ls -l /dev/fuse 2>&1; command -v fusermount fusermount3 2>&1 || echo "no fusermount"
  grep fuse /proc/filesystems || echo "fuse not in /proc/filesystems"
  df -h /tmp | tail -1
  $X version
} 2>&1 | tee "$OUT/machine.txt"
ldd $X 2>&1 | sed 's/^/ldd: /'

HAVE_FUSE=1
if [ ! -c /dev/fuse ]; then HAVE_FUSE=0; say "no /dev/fuse: in-process only"; fi

say "== synth into $DATA"
if [ -f "$DATA/mix.yaml" ] && [ -f "$DATA/mix-single.yaml" ]; then
  say "reusing existing $DATA"
else
  rm -rf "$DATA"
  s0=$(date +%s.%N)
  $X synth "$DATA" $SYNTH 2> "$L/synth.log" | tee "$OUT/synth.txt"
  say "synth took $(echo "$(date +%s.%N) - $s0" | bc 2>/dev/null || echo '?') s"
fi
du -sh "$DATA" | tee -a "$OUT/synth.txt"
for m in $MIXES; do echo "--- $m.yaml"; cat "$DATA/$m.yaml" | head -30; done > "$L/mixes.txt"

CACHE=/tmp/oxefs-scal-cache
mkdir -p "$CACHE"
MNT=/tmp/oxefs-scal-mnt

# Untimed priming run per mix: builds the episode-length indexes in the cache
# dir and warms the page cache, so the first measured run is not penalised.
for m in $MIXES; do
  say "prime $m"
  timeout 120 $X bench --config "$DATA/$m.yaml" --cache-dir "$CACHE" --workers "$(nproc)" \
    --readers 4 --warmup 0 --batches 8 --out "$L/bo-prime" --json > "$L/prime-$m.json" 2> "$L/prime-$m.log" \
    || say "prime $m failed rc=$?"
done

printf "rep\tmix\tmode\tworkers\treaders\tbatches\tsamples_per_s\tsteady_samples_per_s\tfirst_batch_s\tp50_s\tp90_s\tpeak_rss_mib\twall_s\tdaemon_cpu_s\treader_cpu_s\tbuilt_samples\tread_samples\tcpu_ms_per_read_sample\tcpu_ms_per_built_sample\n" > "$RES.tmp"
[ -f "$RES" ] || mv "$RES.tmp" "$RES"
rm -f "$RES.tmp"

jget() { # file, python expression on s
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null || echo NA
}

procticks() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

cleanup_mount() {
  local pid=${1:-}
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    ( sleep 15; kill -0 "$pid" 2>/dev/null && { echo "daemon $pid did not exit on TERM in 15 s: KILL"; kill -KILL "$pid"; } ) &
    local watch=$!
    wait "$pid" 2>/dev/null
    kill "$watch" 2>/dev/null; wait "$watch" 2>/dev/null
  fi
  if grep -q " $MNT " /proc/mounts; then
    umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null || fusermount -uz "$MNT" 2>/dev/null
  fi
}
trap 'cleanup_mount "${DPID:-}"' EXIT

# one run: rep mix mode workers readers
onerun() {
  local rep=$1 m=$2 mode=$3 w=$4 r=$5
  local b=$(( BPW * w )); [ $b -lt $BMIN ] && b=$BMIN
  local tag="$m-$mode-w$w-r$r-$rep"
  local js="$L/$tag.json" lg="$L/$tag.log"
  local t0 t1 ut st dcpu=NA rcpu builds=NA
  local TIMEFORMAT='%U %S'
  if [ "${mode#inproc}" != "$mode" ]; then
    local pre=""
    [ "$mode" = inproc-ts ] && pre="taskset -c 0-$((w-1))"
    t0=$(date +%s.%N)
    { time $pre timeout $RUNMAX $X bench --config "$DATA/$m.yaml" --cache-dir "$CACHE" --workers "$w" \
        --readers "$r" --warmup "$WARMUP" --batches "$b" --out "$L/bo-$tag" --json > "$js" 2> "$lg" ; } 2> /tmp/timeout.txt
    local rc=$?
    t1=$(date +%s.%N)
    d0=0; d1=0
  else
    [ $HAVE_FUSE = 1 ] || return 0
    mkdir -p "$MNT"
    cleanup_mount ""
    $X mount "$MNT" --config "$DATA/$m.yaml" --cache-dir "$CACHE" --workers "$w" --grace 1s 2> "$L/$tag.mount.log" &
    DPID=$!
    local ok=0
    for _ in $(seq 600); do [ -f "$MNT/info.json" ] && { ok=1; break; }; kill -0 $DPID 2>/dev/null || break; sleep 0.05; done
    if [ $ok = 0 ]; then say "mount failed for $tag"; tail -5 "$L/$tag.mount.log"; cleanup_mount $DPID; DPID=; return 0; fi
    local d0; d0=$(procticks $DPID)
    t0=$(date +%s.%N)
    { time timeout $RUNMAX $X bench "$MNT" --readers "$r" --warmup "$WARMUP" --batches "$b" --out "$L/bo-$tag" --json > "$js" 2> "$lg" ; } 2> /tmp/timeout.txt
    local rc=$?
    t1=$(date +%s.%N)
    local d1; d1=$(procticks $DPID)
    cp "$MNT/stats.json" "$L/$tag.stats.json" 2>/dev/null
    cleanup_mount $DPID; DPID=
  fi
  [ "${rc:-0}" = 0 ] || say "bench $tag rc=$rc"
  read ut st < <(tail -1 /tmp/timeout.txt)
  echo -n "[$(el)s] "
  python3 - "$rep" "$m" "$mode" "$w" "$r" "$b" "$js" "$L/bo-$tag/batch_times.jsonl" "$L/$tag.stats.json" \
      "$t0" "$t1" "$ut" "$st" "$d0" "$d1" "$TCK" "$WARMUP" "$RES" <<'PY'
import json, sys
rep, m, mode, w, r, b, js, bt, stj, t0, t1, ut, st, d0, d1, tck, warm, res = sys.argv[1:]
def load(p):
    try: return json.load(open(p))
    except Exception: return None
s = load(js) or {}
def g(f):
    try: return f()
    except Exception: return "NA"
sps = g(lambda: round(s["samples_per_s"], 1))
fb = g(lambda: round(s["time_to_first_batch_s"], 3))
p50 = g(lambda: round(s["latency"]["p50_s"], 4))
p90 = g(lambda: round(s["latency"]["p90_s"], 4))
rss = g(lambda: round(s["daemon_peak_rss_bytes"] / 2**20))
def steady():
    rs = [json.loads(l) for l in open(bt)]
    e = sorted(x["end_s"] for x in rs if not x["is_warmup"])
    j = max(20, len(e) // 4)  # skip what readahead built before the measured phase
    return "NA" if len(e) - j < 10 else round((len(e) - 1 - j) * 64 / (e[-1] - e[j]), 1)
sd = g(steady)
wall = round(float(t1) - float(t0), 2)
rcpu = round(float(ut) + float(st), 2)
nread = (int(warm) + int(b)) * 64
if mode.startswith("inproc"):
    dcpu, built, cpuread, cpubuilt = rcpu, "NA", round(1000 * rcpu / nread, 3), "NA"
else:
    dcpu = round((float(d1) - float(d0)) / float(tck), 2)
    built = g(lambda: sum(load(stj)["samples_per_dataset"].values()))
    cpuread = round(1000 * (rcpu + dcpu) / nread, 3)
    cpubuilt = g(lambda: round(1000 * dcpu / built, 3))
row = [rep, m, mode, w, r, b, sps, sd, fb, p50, p90, rss, wall, dcpu, rcpu, built, nread, cpuread, cpubuilt]
open(res, "a").write("\t".join(map(str, row)) + "\n")
print(f"{m}-{mode}-w{w}-r{r}-{rep}: {sps} samples/s, steady {sd} (batches {b}, wall {wall}s, daemon cpu {dcpu}s, "
      f"reader cpu {rcpu}s, built samples {built}, cpu ms/sample read {cpuread}, daemon cpu ms/built sample {cpubuilt})")
PY
}

left() { [ $(el) -lt $DEADLINE ]; }

say "== runs: reps $REPSTART..$REPS, workers [$WORKERS], mixes [$MIXES], modes [$MODES], readers $READERS, warmup $WARMUP, batches max($BMIN, $BPW*W)"
for rep in $(seq $REPSTART $REPS); do
  for m in $MIXES; do
    for w in $WORKERS; do
      for mode in $MODES; do
        left || { say "deadline: stopping before rep $rep $m w$w $mode"; break 4; }
        onerun $rep $m $mode $w $READERS
      done
    done
  done
done

if [ "$EXTRA" = 1 ]; then
  wmax=$(echo $WORKERS | awk '{print $NF}')
  for m in $MIXES; do for mode in $MODES; do
    left || break 2
    onerun x $m $mode $wmax 4
  done; done
fi
# Optional: in-process with the process confined to W cores (taskset), so
# GC, FUSE-less readers and everything else get W cores too, not just decode.
if [ -n "${TSWORKERS:-}" ]; then
  for rep in $(seq ${TSREPS:-1}); do for m in $MIXES; do for w in $TSWORKERS; do
    left || break 3
    onerun ts$rep $m inproc-ts $w $READERS
  done; done; done
fi

say "== summary"
python3 - "$RES" <<'PY' | tee "$OUT/summary.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def f(x):
    try: return float(x)
    except: return None
def med(rs, k):
    v = [f(r[k]) for r in rs if f(r[k]) is not None]
    return statistics.median(v) if v else None
def fmt(x, p=0): return "—" if x is None else f"{x:.{p}f}"
def div(a, b): return a / b if a and b else None
main = [r for r in rows if r["rep"] != "x" and r["mode"] in ("inproc", "mount")]
mixes = sorted({r["mix"] for r in main}); ws = sorted({int(r["workers"]) for r in main})
for m in mixes:
    print(f"\n### {m} (medians; n = runs)\n")
    print("| workers | in-proc samples/s | steady | speedup (bench, steady) | mount samples/s | steady | speedup (bench, steady) | mount/in-proc (bench, steady) | in-proc CPU ms/sample | mount CPU ms/sample daemon+reader | mount daemon CPU ms/built sample |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    base = {}
    for w in ws:
        v = {}
        for mode in ("inproc", "mount"):
            rs = [r for r in main if r["mix"] == m and r["mode"] == mode and int(r["workers"]) == w]
            v[mode] = dict(n=len(rs), b=med(rs, "samples_per_s"), s=med(rs, "steady_samples_per_s"),
                           c=med(rs, "cpu_ms_per_read_sample"), cb=med(rs, "cpu_ms_per_built_sample"),
                           bl=[r["samples_per_s"] for r in rs])
            if w == ws[0]: base[mode] = v[mode]
        i, o = v["inproc"], v["mount"]
        print(f"| {w} | {fmt(i['b'])} (n={i['n']}) | {fmt(i['s'])} | {fmt(div(i['b'], base['inproc']['b']),2)}, {fmt(div(i['s'], base['inproc']['s']),2)} "
              f"| {fmt(o['b'])} (n={o['n']}) | {fmt(o['s'])} | {fmt(div(o['b'], base['mount']['b']),2)}, {fmt(div(o['s'], base['mount']['s']),2)} "
              f"| {fmt(div(o['b'], i['b']),2)}, {fmt(div(o['s'], i['s']),2)} | {fmt(i['c'],2)} | {fmt(o['c'],2)} | {fmt(o['cb'],2)} |")
    print()
    for w in ws:
        for mode in ("inproc", "mount"):
            rs = [r for r in main if r["mix"] == m and r["mode"] == mode and int(r["workers"]) == w]
            print(f"- raw {m} {mode} w{w}: bench " + ", ".join(r["samples_per_s"] for r in rs) + "; steady " + ", ".join(r["steady_samples_per_s"] for r in rs))
ts = [r for r in rows if r["mode"] == "inproc-ts"]
if ts:
    print("\n### in-process, confined with taskset to W cores (medians)\n")
    print("| mix | workers=cores | samples/s (n) | steady | speedup (steady) vs 1 | CPU ms/sample |")
    print("|---|---|---|---|---|---|")
    for m in sorted({r["mix"] for r in ts}):
        b1 = None
        for w in sorted({int(r["workers"]) for r in ts if r["mix"] == m}):
            rs = [r for r in ts if r["mix"] == m and int(r["workers"]) == w]
            sd = med(rs, "steady_samples_per_s")
            if b1 is None: b1 = sd
            print(f"| {m} | {w} | {fmt(med(rs, 'samples_per_s'))} (n={len(rs)}) | {fmt(sd)} | {fmt(div(sd, b1), 2)} | {fmt(med(rs, 'cpu_ms_per_read_sample'), 2)} |")
x = [r for r in rows if r["rep"] == "x"]
if x:
    print("\n### extra runs (readers 4)\n")
    for r in x:
        print(f"- {r['mix']} {r['mode']} workers {r['workers']} readers {r['readers']}: {r['samples_per_s']} samples/s, steady {r['steady_samples_per_s']}")
PY
tar -C "$(dirname "$L")" -czf "$OUT/logs.tgz" "$(basename "$L")" && say "logs in logs.tgz ($(du -h "$OUT/logs.tgz" | cut -f1))"
say "done"
