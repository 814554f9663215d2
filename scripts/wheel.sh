#!/usr/bin/env bash
# Build the oxefs Python wheel with the oxefs daemon inside it, for this
# platform: `pip install oxefs-*.whl` then `oxefs.mount()` works on a machine
# without Go (it needs glibc, and libturbojpeg0 / libavcodec for JPEG and
# video as the binary always does: they are loaded at run time).
#   ./scripts/wheel.sh [OUTDIR]          (default dist/; prints the wheel's path)
# OXEFS_WHEEL_BIN=/path/to/oxefs packages that binary instead of building one
# (go build -trimpath with cgo on: seconds with Go's build cache warm, minutes
# cold, when every module is downloaded and compiled). Needs python3 with pip,
# setuptools and wheel; works offline (no build isolation). Writes nothing into
# the checkout but OUTDIR. It says each step on stderr as it starts, shows go
# build's progress (-v: each package as it compiles) and, while the build is
# under way, a line every OXEFS_WHEEL_HEARTBEAT seconds (30).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
py=${PYTHON:-python3}
for cand in "$py" /usr/bin/python3; do
  if "$cand" -c 'import setuptools, wheel, pip' 2>/dev/null; then py=$cand; break; fi
done
"$py" -c 'import setuptools, wheel, pip' || {
  echo "wheel.sh: $py lacks pip, setuptools or wheel (apt-get install python3-pip python3-setuptools python3-wheel)" >&2; exit 1; }

tmp="$(mktemp -d)"
heartbeat=""
trap '[ -z "$heartbeat" ] || kill "$heartbeat" 2>/dev/null; rm -rf "$tmp"' EXIT
step() { echo "wheel.sh: [$1/3] $2" >&2; }

if [ -z "${OXEFS_WHEEL_BIN:-}" ]; then
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/python/pyproject.toml")
  step 1 "go build (cgo on) oxefs $version: seconds with Go's build cache warm; the first build downloads and compiles every module, minutes on 2 cores (each package is named as it compiles)"
  every=${OXEFS_WHEEL_HEARTBEAT:-30}
  # sleep holds no pipe of the caller's, so that killing the loop lets a
  # caller that reads stdout and stderr to the end finish at once.
  (began=$SECONDS; while sleep "$every" </dev/null >/dev/null 2>&1; do
     echo "wheel.sh: go build still building ($((SECONDS - began)) s)" >&2; done) >/dev/null &
  heartbeat=$!
  (cd "$repo" && CGO_ENABLED=1 go build -v -trimpath -ldflags "-s -w -X main.version=$version" -o "$tmp/oxefs" .)
  kill "$heartbeat" 2>/dev/null || true
  heartbeat=""
  export OXEFS_WHEEL_BIN="$tmp/oxefs"
elif [ "$OXEFS_WHEEL_BIN" = none ]; then
  echo "wheel.sh: OXEFS_WHEEL_BIN=none: this script builds the wheel that carries the daemon" >&2; exit 2
else
  step 1 "packaging $OXEFS_WHEEL_BIN (OXEFS_WHEEL_BIN), no go build"
fi

step 2 "pip wheel: the package with the daemon inside (seconds)"
"$py" -m pip wheel --no-deps --no-build-isolation --no-index -q -w "$tmp/dist" "$repo/python" >&2
step 3 "checking the wheel carries oxefs/_bin/oxefs"
whl=$(ls "$tmp"/dist/oxefs-*.whl)
case "$whl" in
  *-py3-none-any.whl) echo "wheel.sh: $whl carries no binary" >&2; exit 1 ;;
esac
"$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).getinfo("oxefs/_bin/oxefs")' "$whl" 2>/dev/null ||
  { echo "wheel.sh: no oxefs/_bin/oxefs in $whl" >&2; exit 1; }
mv "$whl" "$out/"
echo "$out/$(basename "$whl")"
