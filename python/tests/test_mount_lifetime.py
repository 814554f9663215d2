"""How long a daemon started by oxefs.mount() lives, and what it leaves.

A trainer killed with SIGKILL or SIGTERM leaves no daemon, mount or
temporary file behind; under torchrun the local ranks of a node share one
daemon, which ends with the last of them. Against a real mount and a real
torchrun, like test_oxefs.py (skipped without the binary, /dev/fuse or
torch).
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import oxefs
from mounting import PYTHON, REPO, need_mount



def _alive(pid):
    """Whether pid runs (a zombie nobody reaped does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


def _left_behind(pid, paths, within=5.0):
    """What is still there `within` seconds from now, checking as it goes:
    the daemon, a mount, a path."""
    deadline = time.monotonic() + within
    while True:
        left = [f"daemon {pid}"] if _alive(pid) else []
        left += [f"mount {p}" for p in paths if _mounted(p)]
        left += [p for p in paths if os.path.lexists(p)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _cleanup(pid, paths):
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    for p in paths:
        subprocess.run(["umount", "-l", p], stderr=subprocess.DEVNULL)


def _tiny_mix(tmp_path, extra):
    src = os.path.join(REPO, "testdata", "datasets", "tiny_bridge", "1.0.0")
    cfg = tmp_path / "mix.yaml"
    cfg.write_text(extra + f"datasets:\n  - source: {src}\n    image_key: steps/observation/image\n    val_split: val\n"
                   "    action_keys: [steps/action/world_vector, steps/action/rotation_delta]\n    state_key: steps/observation/state\n")
    return cfg


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_trainer_leaves_nothing(sig):
    """A script inside `with oxefs.mount()` killed (the OOM killer, a
    preemption): within 5 s no daemon, no mount, and neither the
    temporary mountpoint nor the log nor their directory."""
    need_mount()
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {PYTHON!r})
        import oxefs
        with oxefs.mount() as m:
            print(m.pid, m.path, m.log_path, flush=True)
            time.sleep(600)
    """)
    trainer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid, path, log_path = trainer.stdout.readline().split()
        pid = int(pid)
    finally:
        trainer.send_signal(sig)
        trainer.wait()
    paths = [path, log_path, os.path.dirname(path)]
    assert all(os.path.exists(p) for p in paths[1:]), "the daemon's files were not where the test looked"
    left = _left_behind(pid, paths)
    _cleanup(pid, [path])
    assert not left, f"5 s after {sig.name} of the trainer: {left}"


def test_own_mountpoint_is_kept():
    """With a mountpoint of the caller's, the daemon removes its log and
    directory but not that mountpoint, killed or not."""
    need_mount()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        mnt = os.path.join(tmp, "mnt")
        os.mkdir(mnt)
        with oxefs.mount(mountpoint=mnt) as m:
            pid, log_path = m.pid, m.log_path
            # The daemon logs "mounted" just after it starts serving, which
            # is when mount() returns: wait for the line, within a bound.
            deadline = time.monotonic() + 30
            while "mounted" not in m.log() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "mounted" in m.log(), m.log()
        left = _left_behind(pid, [log_path, os.path.dirname(log_path)])
        _cleanup(pid, [mnt])
        assert not left, left
        assert os.path.isdir(mnt) and not _mounted(mnt)


_RANK_SCRIPT = """
import os, sys, time
sys.path.insert(0, {python!r})
import torch.distributed as dist, oxefs


def _argv(pid):
    try:
        with open(f"/proc/{{pid}}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split(chr(0))
    except OSError:
        return []


dist.init_process_group("gloo")
with oxefs.mount({config!r}, args=["--cache-dir", {cache!r}], timeout=240) as m:
    ds = oxefs.Batches(m)
    b = ds[0]
    dist.barrier()  # every local rank is inside its block: now count
    print("RANK", dist.get_rank(), m.pid, m.path, ds.path, m.shared, ",".join(map(str, m.info["ranks"])), b["frames"].shape[0], flush=True)
    if dist.get_rank() == 0:  # `oxefs mount` processes of this config (pgrep -f)
        daemons = [p for p in os.listdir("/proc") if p.isdigit() and _argv(p)[1:2] == ["mount"] and {config!r} in _argv(p)]
        print("DAEMONS", len(daemons), flush=True)
    dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.parametrize("nproc", [2, 8])
def test_torchrun_one_daemon_per_node(tmp_path, nproc):
    """oxefs.mount(config) in each of N torchrun ranks starts one daemon
    for the node (--ranks 0-(N-1)), each rank reading its own rank/R; after
    the last rank exits, within 5 s, no daemon, mount or directory is
    left."""
    need_mount()
    pytest.importorskip("torch", reason="MISSING python torch: torch is not installed (./scripts/testdeps.sh installs python3-torch)")
    cfg = _tiny_mix(tmp_path, "batch_size: 2\nimage_size: [32, 32]\nnum_batches: 32\n")
    script = tmp_path / "rank.py"
    script.write_text(_RANK_SCRIPT.format(python=PYTHON, config=str(cfg), cache=str(tmp_path / "cache")))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run(
        # --redirects 1 --tee 1: the default, 0, fails in Debian's torch
        # 1.13 on Python 3.11 (its Std.from_str("0") gives None).
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc),
         "--redirects", "1", "--tee", "1", str(script)],
        capture_output=True, text=True, env=env, timeout=500,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line[line.index("RANK "):].split(maxsplit=7) for line in r.stdout.splitlines() if "RANK " in line]
    assert sorted(int(row[1]) for row in rows) == list(range(nproc)), r.stdout
    pids = {int(row[2]) for row in rows}
    paths = {row[3] for row in rows}
    assert len(pids) == 1 and len(paths) == 1, f"{len(pids)} daemons for {nproc} local ranks:\n{r.stdout}"
    assert "DAEMONS 1\n" in r.stdout, r.stdout
    (pid,), (path,) = pids, paths
    for row in rows:
        assert row[4] == os.path.join(path, "rank", row[1]), row
        assert row[5] == "True" and row[6] == ",".join(map(str, range(nproc))), row
    left = _left_behind(pid, [path, os.path.dirname(path)])
    _cleanup(pid, [path])
    assert not left, f"5 s after the last rank: {left}"


def _two_local_ranks(tmp_path):
    """Two processes that torchrun's environment calls the local ranks 0
    and 1 of a node, each inside `with oxefs.mount(config)`; each prints
    the daemon's pid, the mountpoint and whether it started the daemon,
    then waits for a line on stdin, reads its last batch and prints the
    count and the batch size."""
    cfg = _tiny_mix(tmp_path, "batch_size: 2\nimage_size: [32, 32]\nnum_batches: 8\n")
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {PYTHON!r})
        import oxefs
        with oxefs.mount({str(cfg)!r}, args=["--cache-dir", {str(tmp_path / "cache")!r}]) as m:
            print(m.pid, m.path, m.process is not None, flush=True)
            sys.stdin.readline()  # until the test says
            n = len(oxefs.Batches(m))
            print(n, oxefs.Batches(m)[n - 1]["frames"].shape[0], flush=True)
    """)
    procs = []
    for local in (0, 1):
        env = dict(os.environ, RANK=str(local), LOCAL_RANK=str(local), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
                   TORCHELASTIC_RUN_ID=f"test-{os.getpid()}-{tmp_path.name}")
        procs.append(subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, env=env))
    return procs


def test_shared_daemon_outlives_the_rank_that_started_it(tmp_path):
    """Two local ranks in two processes: the one that started the daemon
    leaves first, the other still reads through it; the daemon ends with
    the last one."""
    need_mount()
    procs = _two_local_ranks(tmp_path)
    try:
        first = procs[0].stdout.readline().split()
        second = procs[1].stdout.readline().split()
        assert first[:2] == second[:2], f"two daemons: {first} {second}"
        assert {first[2], second[2]} == {"True", "False"}, "exactly one rank starts the daemon"
        pid, path = int(first[0]), first[1]
        starter, other = (procs[0], procs[1]) if first[2] == "True" else (procs[1], procs[0])
        starter.communicate("\n", timeout=60)
        assert starter.returncode == 0
        time.sleep(1)  # a daemon that followed its starter would be shutting down by now
        assert _alive(pid), "the daemon ended with the rank that started it"
        out, _ = other.communicate("\n", timeout=60)
        assert other.returncode == 0 and out.split()[1] == "2", out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    left = _left_behind(pid, [path, os.path.dirname(path)])
    _cleanup(pid, [path])
    assert not left, f"5 s after the last rank: {left}"


def test_killed_local_ranks_leave_nothing(tmp_path):
    """Every local rank of a shared daemon killed with SIGKILL (torchrun
    tearing a failed job down, the OOM killer): within 5 s no daemon,
    mount or node directory is left."""
    need_mount()
    procs = _two_local_ranks(tmp_path)
    try:
        first = procs[0].stdout.readline().split()
        second = procs[1].stdout.readline().split()
        assert first[:2] == second[:2], f"two daemons: {first} {second}"
    finally:
        for p in procs:
            p.kill()
            p.wait()
    pid, path = int(first[0]), first[1]
    left = _left_behind(pid, [path, os.path.dirname(path)])
    _cleanup(pid, [path])
    assert not left, f"5 s after SIGKILL of both ranks: {left}"


def test_per_node_outside_torchrun(monkeypatch):
    for var in ("LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert oxefs.node_ranks() is None
    with pytest.raises(oxefs.OxefsError, match="LOCAL_WORLD_SIZE"):
        with oxefs.mount(per_node=True, binary=sys.executable):
            pass
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert oxefs.node_ranks() == ([4, 5, 6, 7], 8)
    monkeypatch.setenv("LOCAL_RANK", "6")
    with pytest.raises(ValueError, match="LOCAL_RANK=6 LOCAL_WORLD_SIZE=4"):
        oxefs.node_ranks()


def _readme_recipe():
    """The first sh block of the README's "Multi-GPU training" (a section
    at any heading level), as argv."""
    import re
    import shlex

    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    m = re.search(r"\n(#+) Multi-GPU training\n", text)
    section = text[m.start():]
    end = re.search(r"\n#{1,%d} " % len(m.group(1)), section[1:])
    section = section[:end.start() + 1] if end else section
    block = section[section.index("```sh\n") + len("```sh\n"):]
    return shlex.split(block[:block.index("```")].replace("\\\n", " "))


def test_readme_torchrun_recipe(tmp_path):
    """The README's torchrun command, as written (with 2 ranks instead of
    8, the test's mix.yaml and the package on PYTHONPATH), from the
    repository's root: both ranks train the same number of steps through
    one daemon that the ranks started, gone 5 s after them."""
    need_mount()
    pytest.importorskip("torch", reason="MISSING python torch: torch is not installed (./scripts/testdeps.sh installs python3-torch)")
    argv = _readme_recipe()
    assert argv[:3] == ["python3", "-m", "torch.distributed.run"], argv
    assert argv[argv.index("--nproc_per_node") + 1] == "8" and "mix.yaml" in argv, argv
    argv[0] = sys.executable
    argv[argv.index("--nproc_per_node") + 1] = "2"
    cfg = _tiny_mix(tmp_path, "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 7\n")
    argv[argv.index("mix.yaml")] = str(cfg)
    env = dict(os.environ, PYTHONPATH=PYTHON, OMP_NUM_THREADS="1", XDG_CACHE_HOME=str(tmp_path / "cache"))
    r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = sorted(line[line.index("rank "):] for line in r.stdout.splitlines() if " of 2: " in line)
    # 7 batches over 2 ranks: 4 steps each.
    assert [line.split(":")[0] for line in lines] == ["rank 0 of 2", "rank 1 of 2"], r.stdout
    assert all(" 4 steps" in line for line in lines), r.stdout
    pids = {line.rsplit("daemon ", 1)[1] for line in lines}
    assert len(pids) == 1 and pids != {"started outside"}, r.stdout
    pid = int(pids.pop())
    left = _left_behind(pid, [])
    _cleanup(pid, [])
    assert not left, f"5 s after the last rank: {left}"
