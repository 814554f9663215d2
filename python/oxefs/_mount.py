"""Start and stop an `oxefs mount` daemon from Python.

Two ways, chosen by mount() itself:

- A daemon of this process's own (a script, a notebook, a rank started
  some other way): the daemon is a child of this process, stopped when
  the with block ends and, through --exit-with-parent, when this process
  dies.
- One daemon per node shared by a torchrun job's local ranks: the first
  rank to arrive starts it with --ranks over the node's global ranks, the
  others find it; each rank holds a shared flock on the daemon's lock file
  while its with block runs, and the daemon (--exit-when-unlocked) shuts
  down once none does: when the last local rank leaves its block or dies.

Either way everything the daemon needs on disk (mountpoint, log, lock
files) is in one directory that the daemon removes as it exits
(--remove-on-exit), so that a trainer killed with SIGKILL leaves no
daemon, mount or file behind.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import shutil
import subprocess
import tempfile
import threading
import time

from ._batches import read_info
from ._binary import packaged_binary
from ._dist import rank_world


class OxefsError(RuntimeError):
    """The daemon failed to start or stopped on its own."""


class Mount:
    """A running mount: its path, info.json and the daemon.

    A Mount stands for its path wherever a path is written:
    f"{mnt}/batches/000000.npy", str(mnt), os.fspath(mnt), Path(mnt) and
    open(os.path.join(mnt, ...)) all give the mountpoint.

    process is the daemon's subprocess.Popen in the process that started
    it, None in the local ranks that share another rank's daemon; pid is
    the daemon's process id in both. shared: True for a daemon shared by
    a node's local ranks.
    """

    def __init__(self, path, process, log, *, pid=None, shared=False):
        self.path = path
        self.process = process
        self.pid = process.pid if process is not None else pid
        self.shared = shared
        self.log_path = log.name
        self._log = log  # open: the daemon removes the file as it exits
        self.info = read_info(path)

    def __fspath__(self):
        return self.path

    def __str__(self):
        return self.path

    def __format__(self, spec):
        return format(self.path, spec)

    def __repr__(self):
        return f"Mount({self.path!r}, pid={self.pid})"

    def log(self):
        """What the daemon has written to stderr so far."""
        self._log.seek(0)
        return self._log.read()


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


def node_ranks():
    """(ranks, world) of this node's local ranks under torchrun, from
    RANK, LOCAL_RANK, LOCAL_WORLD_SIZE and WORLD_SIZE (torchrun numbers a
    node's ranks consecutively), or None outside torchrun or with a single
    local rank."""
    if "LOCAL_RANK" not in os.environ or "LOCAL_WORLD_SIZE" not in os.environ:
        return None
    rank, world = rank_world()
    try:
        local, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    except ValueError as e:
        raise ValueError(f"LOCAL_RANK={os.environ['LOCAL_RANK']!r} LOCAL_WORLD_SIZE={os.environ['LOCAL_WORLD_SIZE']!r}: {e}") from None
    if local_world <= 1:
        return None
    first = rank - local
    if not 0 <= local < local_world or first < 0 or first + local_world > world:
        raise ValueError(f"RANK={rank} LOCAL_RANK={local} LOCAL_WORLD_SIZE={local_world} WORLD_SIZE={world}: "
                         "need 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE and the node's ranks RANK-LOCAL_RANK.. within WORLD_SIZE")
    return list(range(first, first + local_world)), world


@contextlib.contextmanager
def mount(config=None, mountpoint=None, *, rank=None, world=None, ranks=None, args=(), binary=None, timeout=120,
          per_node=None):
    """Run `oxefs mount` for the duration of a with block.

    config: a mix config file (None: the built-in demo mix). mountpoint: a
    directory (None: a new temporary one, removed afterwards). rank, world:
    the data-parallel rank and world size (None: from torch.distributed
    when it is initialised, else the RANK and WORLD_SIZE environment
    variables, else a single rank). ranks: serve several ranks of world
    from this one daemon, each under rank/R/ (a string such as "0-7", or a
    list of ints); rank is then ignored. args: more command-line flags, e.g.
    ["--mem", "8GiB"].

    per_node: share one daemon among the local ranks of a torchrun job
    (None: when torchrun's LOCAL_WORLD_SIZE is above 1 and neither rank
    nor ranks is given). The first local rank to arrive starts it with
    --ranks over the node's ranks, the others use it, each reading its
    own rank/R/; it stops once every local rank has left its block (or
    died). Every rank must pass the same config, mountpoint and args.

    A daemon of this process's own is stopped (SIGTERM) and the directory
    unmounted when the block ends, also on an error, within about a second
    even while a batch is still mapped (copy what must outlive the block).
    Either daemon also stops when its users die (SIGKILL included), and
    then removes its temporary directory, log and lock files. A daemon
    that stops before info.json appears, or within timeout seconds,
    raises OxefsError with its log.
    """
    exe = find_binary(binary)
    if per_node is None:
        per_node = rank is None and ranks is None and node_ranks() is not None
    if per_node:
        node = node_ranks()
        if node is None:
            raise OxefsError("mount(per_node=True) outside torchrun: no LOCAL_RANK and LOCAL_WORLD_SIZE (above 1) "
                             "in the environment")
        with _node_mount(exe, config, mountpoint, *node, args, timeout) as m:
            yield m
        return
    auto_rank, auto_world = rank_world()
    rank = auto_rank if rank is None else rank
    world = auto_world if world is None else world
    own = tempfile.mkdtemp(prefix="oxefs-")  # log, and the mountpoint unless given
    path = os.path.join(own, "mnt") if mountpoint is None else os.path.abspath(mountpoint)
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
    # preemption), it leaves no daemon behind holding its memory, and
    # removes its directory (mountpoint, log) as it goes.
    cmd += ["--exit-with-parent", "--remove-on-exit", own, *args]
    log_path = os.path.join(own, "daemon.log")
    with open(log_path, "wb") as stderr:
        # The reader is opened before the daemon starts: one that fails at
        # once removes the file (--remove-on-exit), and its log is still
        # read through this (an open of its own, with its own offset).
        log = open(log_path, errors="replace")
        try:
            process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr)
        except BaseException:
            log.close()
            raise
    try:
        _wait_info(cmd, process, path, log, timeout)
        yield Mount(path, process, log)
    finally:
        _stop(process, path)
        log.close()
        # The daemon removed them as it exited; not if it never ran.
        for leftover in (log_path, path if mountpoint is None else None, own):
            if leftover:
                with contextlib.suppress(OSError):
                    (os.rmdir if os.path.isdir(leftover) else os.unlink)(leftover)


def _wait_info(cmd, process, path, log, timeout):
    deadline = time.monotonic() + timeout
    info = os.path.join(path, "info.json")
    while not os.path.exists(info):
        if process.poll() is not None:
            raise OxefsError(f"{' '.join(cmd)} exited with {process.returncode}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise OxefsError(f"{' '.join(cmd)}: no info.json after {timeout:.0f} s:\n{_tail(log)}")
        time.sleep(0.05)


def _tail(log, lines=20):
    log.seek(0)
    return "".join(log.readlines()[-lines:])


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
    _unmount_stale(path)


def _unmount_stale(path):
    if _mounted(path):
        # A daemon killed hard leaves the mountpoint behind.
        for cmd in (["fusermount3", "-u", "-z", path], ["umount", "-l", path]):
            with contextlib.suppress(OSError):
                if subprocess.run(cmd, stderr=subprocess.DEVNULL).returncode == 0:
                    break


def node_dir(exe, config, mountpoint, ranks, world, args):
    """The directory of the daemon that this node's local ranks share: in
    the temporary directory, named by a digest of everything that makes
    the daemon (binary, config path and bytes, mountpoint, ranks, world,
    flags), the torchrun run id and the user, so that two jobs or two
    configs never share one."""
    content = None
    if config is not None:
        with contextlib.suppress(OSError), open(config, "rb") as f:
            content = hashlib.sha256(f.read()).hexdigest()
    key = json.dumps([os.path.realpath(exe), config and os.path.abspath(config), content,
                      mountpoint and os.path.abspath(mountpoint), ranks, world, [str(a) for a in args],
                      os.environ.get("TORCHELASTIC_RUN_ID", ""), os.getuid()])
    return os.path.join(tempfile.gettempdir(), "oxefs-node-" + hashlib.sha256(key.encode()).hexdigest()[:16])


@contextlib.contextmanager
def _node_mount(exe, config, mountpoint, ranks, world, args, timeout):
    config = config if config is None else os.fspath(config)
    mountpoint = mountpoint if mountpoint is None else os.fspath(mountpoint)
    own = node_dir(exe, config, mountpoint, ranks, world, args)
    deadline = time.monotonic() + timeout
    while True:
        users = _join(own, deadline)  # a shared lock: this rank uses the daemon
        try:
            m = _find_or_start(exe, config, mountpoint, ranks, world, args, own, users, deadline)
        except BaseException:
            os.close(users)
            raise
        if m is not None:
            break
        os.close(users)  # the daemon went (a failed start): again
    try:
        try:
            yield m
        finally:
            m._log.close()
    finally:
        # The daemon sees the last shared lock go and stops by itself.
        os.close(users)


def _join(own, deadline):
    """A shared flock on own/users.lock, the file the daemon watches.
    While a daemon shuts down it holds the file exclusively, and removes
    own before it exits: then wait, and lock the next one's."""
    users_path = os.path.join(own, "users.lock")
    while True:
        os.makedirs(own, mode=0o700, exist_ok=True)
        try:
            fd = os.open(users_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            continue  # removed between the two calls
        if _lock(fd, fcntl.LOCK_SH, deadline, f"{users_path} is held by a daemon shutting down") and _same(fd, users_path):
            return fd
        os.close(fd)


def _find_or_start(exe, config, mountpoint, ranks, world, args, own, users, deadline):
    """The node's daemon: found, or started by this rank, under
    own/start.lock so that one rank starts it; None when own was removed
    meanwhile (a daemon that failed to start removes it as it exits)."""
    path = os.path.join(own, "mnt") if mountpoint is None else os.path.abspath(mountpoint)
    log_path = os.path.join(own, "daemon.log")
    start = os.open(os.path.join(own, "start.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        _lock(start, fcntl.LOCK_EX, deadline, f"another local rank is starting the daemon in {own}")
        if not _same(users, os.path.join(own, "users.lock")):
            return None
        if os.path.exists(os.path.join(path, "info.json")):
            with open(os.path.join(own, "daemon.pid")) as f:
                pid = int(f.read())
            return Mount(path, None, open(log_path, errors="replace"), pid=pid, shared=True)
        _unmount_stale(path)  # a daemon killed hard
        cmd = [exe, "mount", path, "--ranks", ",".join(map(str, ranks)), "--world", str(world)]
        if config is not None:
            cmd += ["--config", config]
        cmd += ["--exit-when-unlocked", os.path.join(own, "users.lock"), "--remove-on-exit", own, *args]
        with open(log_path, "wb") as stderr:
            # The reader first, as in mount(): a daemon that fails at once
            # removes the file.
            log = open(log_path, errors="replace")
            try:
                # Its own session: no rank's end, signal or terminal stops
                # it; the lock does, once every local rank is gone.
                process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
            except BaseException:
                log.close()
                raise
        threading.Thread(target=process.wait, daemon=True).start()  # no zombie once it ends
        try:
            with open(os.path.join(own, "daemon.pid"), "w") as f:
                f.write(str(process.pid))
            _wait_info(cmd, process, path, log, max(0.0, deadline - time.monotonic()))
        except BaseException:
            log.close()
            _stop(process, path)  # not left running half started: the next rank starts its own
            raise
        return Mount(path, process, log, shared=True)
    finally:
        os.close(start)


def _lock(fd, how, deadline, waiting):
    """flock(fd, how), waiting until deadline, then OxefsError(waiting)."""
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise OxefsError(f"{waiting}; gave up after the timeout") from None
            time.sleep(0.05)


def _same(fd, path):
    """Whether path is still the file open as fd (not removed or replaced)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    fst = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (fst.st_dev, fst.st_ino)
