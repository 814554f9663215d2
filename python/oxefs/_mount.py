"""Start and stop an `oxefs mount` daemon from Python."""

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time

from ._batches import read_info
from ._binary import packaged_binary
from ._dist import rank_world


class OxefsError(RuntimeError):
    """The daemon failed to start or stopped on its own."""


class Mount:
    """A running mount: its path, info.json and the daemon process."""

    def __init__(self, path, process, log_path):
        self.path = path
        self.process = process
        self.log_path = log_path
        self.info = read_info(path)

    def __fspath__(self):
        return self.path

    def log(self):
        """What the daemon has written to stderr so far."""
        with open(self.log_path, errors="replace") as f:
            return f.read()


def find_binary(binary=None):
    """The oxefs binary: binary, else $OXEFS_BIN, else the one this package
    carries (a wheel built with Go), else oxefs on PATH."""
    for candidate in (binary, os.environ.get("OXEFS_BIN")):
        if candidate:
            if not os.access(candidate, os.X_OK):
                raise OxefsError(f"oxefs binary {candidate!r} is not an executable file")
            return candidate
    found = packaged_binary() or shutil.which("oxefs")
    if found is None:
        raise OxefsError("no oxefs binary: none inside this oxefs package (a checkout, or installed where Go "
                         "was missing), none on PATH, no OXEFS_BIN; install a wheel built by scripts/wheel.sh, "
                         "put oxefs on PATH, set OXEFS_BIN, or pass binary=")
    return found


def _mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


@contextlib.contextmanager
def mount(config=None, mountpoint=None, *, rank=None, world=None, ranks=None, args=(), binary=None, timeout=120):
    """Run `oxefs mount` for the duration of a with block.

    config: a mix config file (None: the built-in demo mix). mountpoint: a
    directory (None: a new temporary one, removed afterwards). rank, world:
    the data-parallel rank and world size (None: from torch.distributed
    when it is initialised, else the RANK and WORLD_SIZE environment
    variables, else a single rank). ranks: serve several ranks of world
    from this one daemon, each under rank/R/ (a string such as "0-7", or a
    list of ints); rank is then ignored. args: more command-line flags, e.g.
    ["--mem", "8GiB"]. The daemon is stopped (SIGTERM) and the directory
    unmounted when the block ends, also on an error, within about a second
    even while a batch is still mapped (copy what must outlive the block);
    it also stops when this process dies. A daemon that stops
    before info.json appears, or within timeout seconds, raises OxefsError
    with its log.
    """
    exe = find_binary(binary)
    auto_rank, auto_world = rank_world()
    rank = auto_rank if rank is None else rank
    world = auto_world if world is None else world
    own_dir = mountpoint is None
    path = tempfile.mkdtemp(prefix="oxefs-mnt-") if own_dir else os.path.abspath(mountpoint)
    cmd = [exe, "mount", path]
    if config is not None:
        cmd += ["--config", os.fspath(config)]
    if ranks is not None:
        if not isinstance(ranks, str):
            ranks = [int(r) for r in ranks]
            if world == 1 and ranks:
                world = max(ranks) + 1  # not set, not distributed: just these
            ranks = ",".join(map(str, ranks))
        cmd += ["--ranks", ranks, "--world", str(world)]
    elif world > 1:
        cmd += ["--rank", str(rank), "--world", str(world)]
    # The daemon follows this process: killed (SIGKILL, the OOM killer, a
    # preemption), it leaves no daemon behind holding its memory.
    cmd += ["--exit-with-parent", *args]
    log = tempfile.NamedTemporaryFile(prefix="oxefs-mount-", suffix=".log", delete=False)
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    log.close()
    try:
        deadline = time.monotonic() + timeout
        info = os.path.join(path, "info.json")
        while not os.path.exists(info):
            if process.poll() is not None:
                raise OxefsError(f"{' '.join(cmd)} exited with {process.returncode}:\n{_tail(log.name)}")
            if time.monotonic() > deadline:
                raise OxefsError(f"{' '.join(cmd)}: no info.json after {timeout} s:\n{_tail(log.name)}")
            time.sleep(0.05)
        yield Mount(path, process, log.name)
    finally:
        _stop(process, path)
        if own_dir:
            with contextlib.suppress(OSError):
                os.rmdir(path)
        with contextlib.suppress(OSError):
            os.unlink(log.name)


def _tail(name, lines=20):
    with open(name, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def _stop(process, path):
    if process.poll() is None:
        # The first signal detaches the mount and lets files still open or
        # mapped be read for --grace; the block is over, so after a second
        # the second signal ends that wait (a batch the caller still holds
        # mapped is not read through the daemon any more: copy what outlives
        # the block).
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    if _mounted(path):
        # A daemon killed hard leaves the mountpoint behind.
        for cmd in (["fusermount3", "-u", "-z", path], ["umount", "-l", path]):
            with contextlib.suppress(OSError):
                if subprocess.run(cmd, stderr=subprocess.DEVNULL).returncode == 0:
                    break
