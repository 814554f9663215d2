#!/usr/bin/env bash
# What the test suite needs beyond Go, found by what it does (a C compiler
# that builds, a library the dynamic loader finds, a python3 that imports
# the modules), not by package name, so a machine that has them some other
# way passes too. ./scripts/test.sh runs this first.
#
#   ./scripts/testdeps.sh            install what is missing (Debian/Ubuntu:
#                                    apt-get and pip, as root or with sudo
#                                    without a password), or stop at once
#                                    with the one command that installs it
#   ./scripts/testdeps.sh --check    say what is missing; exit 1 if anything is
#
# OXEFS_TEST_INSTALL=no: install nothing and go on; the tests that need
# what is missing skip, and the summary counts them apart.
set -euo pipefail

mode=install
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
if [ "${OXEFS_TEST_INSTALL:-}" = no ]; then mode=report; fi

# The python3 the tests will use: the first candidate, in the order
# internal/pythontest tries them, that imports every module; else Debian's,
# where apt installs them; else the first that imports numpy.
python_modules="numpy torch torchvision pytest setuptools wheel huggingface_hub"
find_python() {
  local cand all=${python_modules// /, }
  for cand in ${OXEFS_PYTHON:-} python3 /usr/bin/python3 /usr/local/bin/python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import $all" 2>/dev/null; then
      command -v "$cand"; return
    fi
  done
  if [ -x /usr/bin/python3 ] && command -v apt-get >/dev/null 2>&1; then echo /usr/bin/python3; return; fi
  for cand in ${OXEFS_PYTHON:-} python3 /usr/bin/python3 /usr/local/bin/python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy' 2>/dev/null; then
      command -v "$cand"; return
    fi
  done
  command -v python3 || true
}

missing=()  # what is missing, in words
debs=()     # the Debian packages that provide it
pips=()     # the PyPI packages that provide it

cc_ok() {
  command -v gcc >/dev/null 2>&1 || return 1
  local out; out=$(mktemp)
  printf '#include <stdio.h>\nint main(void) { return 0; }\n' | gcc -x c -o "$out" - 2>/dev/null
  local rc=$?; rm -f "$out"; return $rc
}
lib_ok() { # soname prefix, e.g. libturbojpeg.so.0
  { /sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null; } | grep -qE "^[[:space:]]+${1//./\\.}"
}

if ! cc_ok; then missing+=("a C compiler with libc headers (cgo, the race detector)"); debs+=(gcc libc6-dev); fi
if ! command -v fusermount3 >/dev/null 2>&1; then missing+=("fusermount3 (FUSE mounts)"); debs+=(fuse3); fi
if ! lib_ok libturbojpeg.so.0; then missing+=("libturbojpeg.so.0 (libjpeg-turbo: TensorFlow-exact JPEG decoding)"); debs+=(libturbojpeg0); fi
if ! command -v chromium >/dev/null 2>&1; then missing+=("chromium (the web page's browser tests, headless)"); debs+=(chromium); fi
if ! lib_ok libavcodec.so.; then
  missing+=("libavcodec (LeRobot video)")
  debs+=(libavcodec)  # resolved to the release's name below
fi

py=$(find_python)
if [ -z "$py" ]; then
  missing+=("python3"); debs+=(python3)
  absent="$python_modules pip"
else
  absent=""
  for m in $python_modules; do
    "$py" -c "import $m" 2>/dev/null || absent="$absent $m"
  done
  "$py" -m pip --version >/dev/null 2>&1 || absent="$absent pip"
fi
for m in $absent; do
  case $m in
    huggingface_hub) pips+=(huggingface_hub) ;;
    *) debs+=("python3-$m") ;;
  esac
done
if [ -n "$absent" ]; then missing+=("python modules:$absent (for ${py:-python3})"); fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "test prerequisites: all present (python: $py)"
  exit 0
fi

echo "test prerequisites missing:"
printf '  - %s\n' "${missing[@]}"

# Which way to install: root, sudo without a password, or none.
sudo=""
can_install=yes
if ! command -v apt-get >/dev/null 2>&1; then
  can_install=no
elif [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo"; else can_install=no; fi
fi

# libavcodec's package is named for its soname: libavcodec59 on Debian 12,
# libavcodec60/61 later. apt-cache show succeeds for a name another package
# merely refers to, so ask for an installable version instead.
resolve_avcodec() {
  local name
  for name in libavcodec61 libavcodec60 libavcodec59; do
    if [ -n "$(apt-cache madison "$name" 2>/dev/null)" ]; then echo "$name"; return; fi
  done
  # No package lists yet (before apt-get update): the release's own name.
  case "$(. /etc/os-release 2>/dev/null; echo "${ID:-}${VERSION_ID:-}")" in
    debian13) echo libavcodec61 ;;
    ubuntu24.04) echo libavcodec60 ;;
    ubuntu22.04) echo libavcodec58 ;;
    *) echo libavcodec59 ;;
  esac
}

install_cmd() { # the one command, for a person to run
  local d=() p
  for p in "${debs[@]}"; do [ "$p" = libavcodec ] && p=$(resolve_avcodec); d+=("$p"); done
  local s="sudo "
  [ "$(id -u)" = 0 ] && s=""
  local cmd=""
  if [ ${#debs[@]} -gt 0 ]; then
    cmd="${s}apt-get update && ${s}apt-get install -y --no-install-recommends ${d[*]}"
  fi
  if [ ${#pips[@]} -gt 0 ]; then
    [ -n "$cmd" ] && cmd="$cmd && "
    cmd="$cmd${s}${py:-/usr/bin/python3} -m pip install --break-system-packages ${pips[*]}"
  fi
  echo "$cmd"
}

case $mode in
  check)
    echo "install them with: $(install_cmd)"
    exit 1 ;;
  report)
    echo "OXEFS_TEST_INSTALL=no: installing nothing; the tests that need these skip, counted apart in the summary"
    exit 0 ;;
esac

if [ $can_install = no ]; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "cannot install them here (not root, and sudo asks for a password). Install them with:"
  else
    echo "no apt-get here: install the equivalents of these Debian packages yourself:"
  fi
  echo "  $(install_cmd)"
  echo "or run the suite without them (their tests skip, listed): OXEFS_TEST_INSTALL=no ./scripts/test.sh"
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if [ ${#debs[@]} -gt 0 ]; then
  $sudo apt-get update -qq
  for i in "${!debs[@]}"; do
    [ "${debs[$i]}" = libavcodec ] && debs[$i]=$(resolve_avcodec)
  done
  echo "installing with apt-get: ${debs[*]}"
  $sudo apt-get install -y -qq --no-install-recommends "${debs[@]}" >/dev/null
  py=$(find_python)
fi
if [ ${#pips[@]} -gt 0 ]; then
  echo "installing with pip for $py: ${pips[*]}"
  # Debian's pip refuses to install beside apt's packages without the flag;
  # an older pip does not know the flag and needs none.
  $sudo "$py" -m pip install -q --break-system-packages "${pips[@]}" 2>/dev/null ||
    $sudo "$py" -m pip install -q "${pips[@]}"
fi
# Check again: an install that did not provide what was missing is an error
# here, not 40 skipped tests later.
OXEFS_TEST_INSTALL= exec "$0" --check
