#!/usr/bin/env bash
# The README's "Two commands" tried as a new contributor meets them: in a
# fresh Debian 12 root (debootstrap) with only Go (and the CA certificates
# its module downloads need) and /dev/fuse added, run, copied literally,
#
#   go run . mount /tmp/oxe     (the demo mix must be served)
#   ./scripts/test.sh           (must install what it needs and pass with no
#                                skip for something missing)
#
# then, with --hide-libs, the suite once more with libturbojpeg and
# libavcodec hidden (a /dev/null bound over each): it must pass, with the
# tests that need them skipped and named.
#
# usage: sudo ./scripts/fresh-debian.sh [--hide-libs] [ROOT]
#   ROOT (default /var/tmp/oxefs-fresh) is a fresh copy, each time, of
#   Debian's base in ROOT.base, made with debootstrap the first time (delete
#   ROOT.base for a new one). The checkout's HEAD is copied in
#   with git archive. Needs root, debootstrap (apt-get install debootstrap),
#   and network to Debian's mirror and the Go module proxy. Takes 30-60
#   minutes on 2 cores; the log of each step is under ROOT/trial/.
set -euo pipefail
hide=no
if [ "${1:-}" = --hide-libs ]; then hide=yes; shift; fi
root=${1:-/var/tmp/oxefs-fresh}
repo=$(cd "$(dirname "$0")/.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ "$(id -u)" != 0 ]; then echo "run as root (debootstrap, chroot, mounts)" >&2; exit 1; fi
command -v debootstrap >/dev/null || { echo "needs debootstrap: apt-get install debootstrap" >&2; exit 1; }

# Debian's base is made once, in ROOT.base, and each trial starts from a
# copy of it: nothing a former trial installed is there.
if [ ! -x "$root.base/usr/bin/apt-get" ]; then
  echo "== debootstrap bookworm into $root.base"
  rm -rf "$root.base"
  debootstrap --include=ca-certificates bookworm "$root.base" "$mirror" > "$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log"; exit 1; }
fi
echo "== a fresh copy of Debian's base in $root"
rm -rf "$root"
cp -a "$root.base" "$root"

echo "== Go $(go env GOVERSION) into $root/usr/local/go"
rm -rf "$root/usr/local/go"
cp -a "$(go env GOROOT)" "$root/usr/local/go"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The machine's name resolves, as Debian's installer makes it (debootstrap
# does not): torchrun's gloo rendezvous looks it up.
printf '127.0.1.1\t%s\n' "$(hostname)" >> "$root/etc/hosts"
# This network's CAs: where TLS goes through an intercepting proxy, its CA
# is in this machine's bundle and any machine here needs it, fresh or not.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  cp /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/ca-certificates/host-network.crt"
  chroot "$root" update-ca-certificates > /dev/null
fi
[ -e "$root/dev/fuse" ] || mknod -m 666 "$root/dev/fuse" c 10 229

echo "== the checkout's HEAD ($(git -C "$repo" rev-parse --short HEAD)) into $root/root/oxefs"
rm -rf "$root/root/oxefs"
mkdir -p "$root/root/oxefs" "$root/trial"
git -C "$repo" archive HEAD | tar -x -C "$root/root/oxefs"

# The trial, run inside: a login shell's PATH plus Go, as its install
# instructions say. Every mount (proc, a tmpfs /dev/shm for the DataLoader
# workers, the FUSE mounts of the tests) lives in a private namespace that
# ends with the script.
cat > "$root/trial/run.sh" <<'EOF'
set -uo pipefail
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
unset GOFLAGS GOPATH GOCACHE GOMODCACHE OXEFS_PYTHON OXEFS_DECODER OXEFS_TEST_INSTALL
mount -t proc proc /proc
mount -t sysfs sys /sys
mkdir -p /dev/shm /dev/pts && mount -t tmpfs shm /dev/shm && mount -t devpts devpts /dev/pts
cd /root/oxefs
echo "python3: $(command -v python3 || echo none); gcc: $(command -v gcc || echo none)"

if [ "$1" = full ]; then
  echo "== go run . mount /tmp/oxe"
  start=$(date +%s)
  go run . mount /tmp/oxe > /trial/mount.log 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    [ -e /tmp/oxe/batches/000000.npy ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 1
  done
  if [ -e /tmp/oxe/batches/000000.npy ]; then
    size=$(stat -c %s /tmp/oxe/batches/000000.npy)
    head -c 10 /tmp/oxe/batches/000000.npy | od -c | head -1
    echo "demo mix served after $(( $(date +%s) - start )) s: batches/000000.npy, $size bytes; $(ls /tmp/oxe/batches | wc -l) files listed"
    cat /tmp/oxe/batches/000001.npy > /dev/null && echo "batch 1 read"
  else
    echo "FAIL: the demo mix was not served"; cat /trial/mount.log; exit 1
  fi
  # go run's child is the daemon: signal it (go run forwards SIGINT, not
  # SIGTERM) and wait for the unmount.
  pkill -INT -f '/exe/oxefs mount' || true
  wait $pid || true
  for _ in $(seq 30); do mountpoint -q /tmp/oxe || break; sleep 1; done
  mountpoint -q /tmp/oxe && { echo "FAIL: /tmp/oxe still mounted"; exit 1; }
  echo "unmounted"

  echo "== ./scripts/test.sh"
  ./scripts/test.sh
else
  echo "== libturbojpeg and libavcodec hidden; OXEFS_TEST_INSTALL=no ./scripts/test.sh"
  for lib in /usr/lib/*/libturbojpeg.so.0* /usr/lib/*/libavcodec.so.*; do
    [ -f "$lib" ] && mount --bind /dev/null "$lib" && echo "hidden: $lib"
  done
  OXEFS_TEST_INSTALL=no ./scripts/test.sh
fi
EOF

run() { # phase log
  echo "== in the chroot: $1 (log: $root/trial/$2)"
  local rc=0
  unshare --mount --propagation private chroot "$root" /bin/bash /trial/run.sh "$1" 2>&1 | tee "$root/trial/$2" || rc=$?
  return $rc
}

rc=0
run full full.log || rc=$?
echo "== full trial: exit $rc; $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$root/trial/full.log" | tail -2 | tr '\n' ' ')"
[ $rc = 0 ] || exit $rc
if [ $hide = yes ]; then
  run hidden hidden.log || rc=$?
  echo "== hidden-libs trial: exit $rc; $(grep -E '^skipped: ' "$root/trial/hidden.log" | tr '\n' ' ')"
fi
exit $rc
