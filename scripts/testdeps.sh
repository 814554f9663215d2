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
#   ./scripts/testdeps.sh --jax-python
#                                    print the jax venv's python (below) and
#                                    exit 0 where it runs jax; else exit 1
#
# OXEFS_TEST_INSTALL=no: install nothing and go on; the tests that need
# what is missing skip, and the summary counts them apart.
#
# jax (the JAX recipe's test, python/tests/test_jax.py) goes into a venv of
# its own outside the repository, made by the user who runs this (no root
# needed) and reused while it works: $OXEFS_JAX_VENV, by default
# ${XDG_CACHE_HOME:-$HOME/.cache}/oxefs/jax-venv. scripts/test.sh hands its
# python to the tests as OXEFS_JAX_PYTHON.
set -euo pipefail

jax_venv=${OXEFS_JAX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/oxefs/jax-venv}
# jax on the CPU, pinned, without its declared scipy dependency (35 MB that
# neither `import jax` nor the recipe uses): about 106 MB of wheels, 480 MB
# installed. jax 0.10 needs Python >= 3.11 (Debian 12's is 3.11).
jax_pins="jax==0.10.2 jaxlib==0.10.2 ml_dtypes==0.6.0 numpy==2.4.6 opt_einsum==3.4.0"
jax_ok() {
  [ -x "$jax_venv/bin/python" ] &&
    JAX_PLATFORMS=cpu "$jax_venv/bin/python" -c 'import jax, jax.numpy as jnp; assert int(jax.jit(lambda x: x + 1)(jnp.int32(1))) == 2' >/dev/null 2>&1
}

mode=install
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --jax-python)
    if jax_ok; then echo "$jax_venv/bin/python"; exit 0; fi
    exit 1 ;;
  *) echo "usage: $0 [--check | --jax-python]" >&2; exit 2 ;;
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

need_jax=no
if ! jax_ok; then
  need_jax=yes
  missing+=("jax on the CPU, in a venv at $jax_venv (the JAX recipe's test)")
  # Debian's python3 makes a venv with pip only with python3-venv.
  if [ -n "$py" ] && ! "$py" -c 'import ensurepip' 2>/dev/null; then debs+=(python3-venv); fi
fi

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

jax_cmd() { # how the jax venv is made, as the user who runs the tests
  echo "${py:-/usr/bin/python3} -m venv $jax_venv && $jax_venv/bin/python -m pip install --no-deps $jax_pins"
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
  if [ $need_jax = yes ]; then
    [ -n "$cmd" ] && cmd="$cmd && "
    cmd="$cmd$(jax_cmd)"
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

# The jax venv needs no root: only apt-get and the system pip do.
if [ $can_install = no ] && [ ${#debs[@]} -eq 0 ] && [ ${#pips[@]} -eq 0 ]; then can_install=yes; fi
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
if [ $need_jax = yes ]; then
  echo "making a venv with jax on the CPU at $jax_venv: $jax_pins (about 106 MB to download)"
  # A venv left half made by a failed or interrupted install does not
  # import jax, so the next run makes it again from nothing.
  if [ -e "$jax_venv" ] && [ ! -e "$jax_venv/pyvenv.cfg" ]; then
    echo "$jax_venv exists and is not a venv: set OXEFS_JAX_VENV to a path of its own" >&2
    exit 1
  fi
  rm -rf "$jax_venv"
  mkdir -p "$(dirname "$jax_venv")"
  if ! { "$py" -m venv "$jax_venv" && "$jax_venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps $jax_pins; }; then
    rm -rf "$jax_venv"
    echo "could not make the jax venv (no network to PyPI?). Make it with:"
    echo "  $(jax_cmd)"
    echo "or run the suite without it (the JAX recipe's test skips, named): OXEFS_TEST_INSTALL=no ./scripts/test.sh"
    exit 1
  fi
fi
# Check again: an install that did not provide what was missing is an error
# here, not 40 skipped tests later.
OXEFS_TEST_INSTALL= exec "$0" --check
