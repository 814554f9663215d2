"""Tests of the oxefs Python package against a real `oxefs mount`.

They need the oxefs binary (OXEFS_BIN, or oxefs on PATH) and /dev/fuse;
without either they are skipped, with the reason. scripts/test.sh builds
the binary and runs them.
"""

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import oxefs


def _binary():
    try:
        return oxefs.find_binary()
    except oxefs.OxefsError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def demo():
    """The built-in demo mix, mounted once for the module."""
    _binary()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: no FUSE mount possible here")
    with oxefs.mount() as mnt:
        yield mnt


def _torch():
    return pytest.importorskip("torch", reason="MISSING python torch: torch is not installed (./scripts/testdeps.sh installs python3-torch)")


def test_batches_as_arrays(demo):
    info = oxefs.read_info(demo)
    ds = oxefs.Batches(demo)
    assert len(ds) == info["num_batches"] > 0
    b = ds[0]
    shape = tuple(info["frames"]["shape"])
    assert b["frames"].dtype == np.uint8 and b["frames"].shape == shape
    batch_size = shape[0]
    assert b["action"].dtype == np.float32 and b["action"].shape == (batch_size, info["action_dim"])
    assert b["initial_state"].shape == (batch_size, info["state_dim"])
    assert b["frame_indices"].dtype == np.int64 and b["frame_indices"].shape == (batch_size, shape[1])
    assert len(b["dataset_name"]) == len(b["language"]) == batch_size
    # Masks: each sample's real dims are its dataset's, and padding is 0.
    assert b["action_mask"].dtype == np.bool_
    for j, name in enumerate(b["dataset_name"]):
        dims = info["datasets"][name]
        assert b["action_mask"][j].sum() == dims["action_dim"]
        assert b["state_mask"][j].sum() == dims["state_dim"]
        assert (b["action"][j][~b["action_mask"][j]] == 0).all()
    # Mapped frames are the same bytes.
    mapped = oxefs.Batches(demo, mmap=True)[0]["frames"]
    assert isinstance(mapped, np.memmap) and (np.asarray(mapped) == b["frames"]).all()
    # Past the listing (one epoch) come the next epochs, up to max_batch.
    assert ds.max_batch == info["train"]["max_batch"] > len(ds)
    assert ds[len(ds)]["frames"].shape == shape
    with pytest.raises(IndexError, match="serves batches 0.."):
        ds[ds.max_batch + 1]


def test_mount_acts_as_its_path(demo):
    """A Mount is its path wherever a path is written: an f-string, str(),
    os.fspath, pathlib, os.path.join, print."""
    first = "batches/000000.npy"
    assert os.path.isfile(f"{demo}/{first}")
    assert str(demo) == os.fspath(demo) == demo.path
    assert pathlib.Path(demo) / first == pathlib.Path(demo.path, first)
    assert os.path.join(demo, first) == demo.path + "/" + first
    assert "%s" % demo == format(demo) == demo.path
    assert demo.path in repr(demo) and str(demo.pid) in repr(demo)


def test_mount_path_forms_without_a_daemon(tmp_path):
    """The same, checked where no mount is possible: a Mount over a
    directory that holds an info.json."""
    (tmp_path / "info.json").write_text("{}")
    with open(tmp_path / "daemon.log", "w+") as log:
        m = oxefs.Mount(str(tmp_path), None, log, pid=4242)
        assert f"{m}/info.json" == str(tmp_path / "info.json")
        assert str(m) == os.fspath(m) == str(tmp_path)
        assert pathlib.Path(m) == tmp_path
        assert repr(m) == f"Mount({str(tmp_path)!r}, pid=4242)"


def test_validation_view(demo):
    info = oxefs.read_info(demo)
    val = oxefs.Batches(demo, val=True)
    assert len(val) == info["val"]["num_batches"]
    assert val[0]["frames"].shape == tuple(info["frames"]["shape"])


def test_stats(demo):
    oxefs.Batches(demo)[1]
    stats = oxefs.read_stats(demo)
    assert stats["train"]["requests"] >= 1


def test_loader_reads_ahead_in_order(demo):
    ds = oxefs.Batches(demo)
    got = list(oxefs.Loader(demo, start=3, stop=7, readahead=2))
    assert len(got) == 4
    for i, b in zip(range(3, 7), got):
        want = ds[i]
        assert (np.asarray(b["frames"]) == want["frames"]).all()
        assert b["episode_id"] == want["episode_id"]


def test_loader_reports_errors(demo):
    n = len(oxefs.Batches(demo))
    # The view serves later epochs by name, so reading past its listing
    # works; a negative start is refused, naming it.
    with pytest.raises(ValueError, match="start -1"):
        oxefs.Loader(demo, start=-1, stop=1)
    assert len(list(oxefs.Loader(demo, start=n, stop=n + 1))) == 1


def test_loader_torch_without_copies(demo):
    torch = _torch()
    ds = oxefs.Batches(demo)
    b = next(iter(oxefs.Loader(demo, torch=True, stop=1)))
    assert isinstance(b["frames"], torch.Tensor) and b["frames"].dtype == torch.uint8
    assert torch.equal(b["frames"], torch.from_numpy(ds[0]["frames"]))
    assert b["action_mask"].dtype == torch.bool
    # Frames are mapped, not read: as numpy they are the memmap itself,
    # and torch.from_numpy shares its memory.
    m = next(iter(oxefs.Loader(demo, stop=1)))["frames"]
    assert isinstance(m, np.memmap)


def test_pinned_read_is_the_file(demo):
    """The pinned path reads the file straight into a tensor: the same
    bytes, shape and dtype as np.load (in ordinary memory here, since
    pinning needs an accelerator; the read is the same)."""
    torch = _torch()
    from oxefs._batches import _read_pinned

    ds = oxefs.Batches(demo)
    for i in range(2):
        name = os.path.join(ds.dir, f"{i:06d}.npy")
        t = _read_pinned(name, pin=torch.cuda.is_available())
        want = np.load(name)
        assert tuple(t.shape) == want.shape and t.dtype == torch.uint8
        assert np.array_equal(t.numpy(), want)
        if torch.cuda.is_available():
            assert t.is_pinned()


def test_loader_pin_memory_without_cuda(demo):
    """pin_memory=True on a machine without CUDA warns once and reads the
    same batches unpinned, instead of failing in torch's dispatcher."""
    torch = _torch()
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: batches are pinned")
    with pytest.warns(RuntimeWarning, match="no CUDA device"):
        loader = oxefs.Loader(demo, stop=2, pin_memory=True)
    got = [b["frames"].numpy().copy() for b in loader]
    assert len(got) == 2
    for i, frames in enumerate(got):
        assert np.array_equal(frames, oxefs.Batches(demo)[i]["frames"])


def test_dataloader_with_workers(demo):
    torch = _torch()
    from torch.utils.data import DataLoader

    ds = oxefs.Batches(demo, torch=True)
    seen = 0
    for batch in DataLoader(ds, batch_size=None, num_workers=2):
        assert isinstance(batch["frames"], torch.Tensor)
        assert batch["action"].shape[0] == batch["frames"].shape[0]
        seen += 1
        if seen == 6:
            break
    assert seen == 6


def _need_fuse():
    _binary()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: no FUSE mount possible here")


def test_mount_block_exits_at_once_with_a_mapped_batch():
    """A with block whose loop variable still maps a batch ends in about a
    second, not after the daemon's --grace (30 s by default)."""
    _need_fuse()
    with oxefs.mount() as mnt:
        batch = next(iter(oxefs.Loader(mnt)))
        assert isinstance(batch["frames"], np.memmap)
        start = time.monotonic()
    took = time.monotonic() - start
    del batch
    assert took < 10, f"the block took {took:.1f} s to end"
    assert not os.path.ismount(mnt.path)


def test_daemon_exits_with_a_killed_trainer(tmp_path):
    """A trainer killed with SIGKILL (the OOM killer, a preemption) leaves
    no daemon and no mount behind: the daemon follows its parent."""
    _need_fuse()
    script = (
        "import os, sys, time\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.dirname(oxefs.__file__))!r})\n"
        "import oxefs\n"
        "with oxefs.mount() as m:\n"
        "    print(m.process.pid, m.path, flush=True)\n"
        "    time.sleep(600)\n"
    )
    trainer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid, path = trainer.stdout.readline().split()
        pid = int(pid)
    finally:
        trainer.kill()
        trainer.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        subprocess.run(["umount", "-l", path], stderr=subprocess.DEVNULL)
        pytest.fail(f"daemon {pid} still running 20 s after its trainer was killed")
    assert not os.path.ismount(path), f"{path} is still mounted"
    with contextlib.suppress(OSError):
        os.rmdir(path)


def test_mount_names_a_bad_config(tmp_path):
    _binary()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: no FUSE mount possible here")
    missing = tmp_path / "nope.yaml"
    with pytest.raises(oxefs.OxefsError) as e:
        with oxefs.mount(missing, timeout=30):
            pass
    assert str(missing) in str(e.value)


FAILS_AT_ONCE = """#!/bin/sh
# An oxefs that fails at once, as on a bad config, and removes its
# --remove-on-exit directory (the log inside it) as it exits.
echo "fake oxefs: the config is broken" >&2
while [ $# -gt 0 ]; do
  if [ "$1" = --remove-on-exit ]; then rm -rf "$2"; fi
  shift
done
exit 1
"""


def test_mount_reports_a_daemon_gone_at_once(tmp_path, monkeypatch):
    """A daemon that fails and removes its directory (the log in it) before
    mount() looks at the log is an OxefsError with what it logged, not a
    FileNotFoundError for the log. Popen is made to return only once the
    daemon has exited, the slowest mount() can be; no FUSE needed."""
    fake = tmp_path / "oxefs"
    fake.write_text(FAILS_AT_ONCE)
    fake.chmod(0o755)
    real = subprocess.Popen

    def popen_then_wait(*args, **kwargs):
        p = real(*args, **kwargs)
        p.wait()
        return p

    monkeypatch.setattr(oxefs._mount.subprocess, "Popen", popen_then_wait)
    with pytest.raises(oxefs.OxefsError, match="exited with 1") as e:
        with oxefs.mount(binary=str(fake), timeout=30):
            pass
    assert "the config is broken" in str(e.value)


def test_mount_cleans_up_on_error(tmp_path):
    _binary()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: no FUSE mount possible here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with pytest.raises(KeyError):
        with oxefs.mount(mountpoint=mnt) as m:
            process = m.process
            assert os.path.exists(mnt / "info.json")
            raise KeyError("the trainer failed")
    assert process.poll() is not None, "the daemon still runs"
    with open("/proc/self/mounts") as f:
        assert not any(line.split()[1] == str(mnt) for line in f), "still mounted"


def test_rank_world_from_environment(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    assert oxefs.rank_world() == (1, 3)
    monkeypatch.setenv("RANK", "3")
    with pytest.raises(ValueError, match="RANK=3 WORLD_SIZE=3"):
        oxefs.rank_world()
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert oxefs.rank_world() == (0, 1)


def test_ranks_list_equal_lengths(monkeypatch):
    _binary()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: no FUSE mount possible here")
    lengths = []
    for rank in range(3):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "3")
        with oxefs.mount() as m:
            assert (m.info["rank"], m.info["world"]) == (rank, 3)
            lengths.append(len(oxefs.Batches(m)))
    assert len(set(lengths)) == 1, f"ranks list {lengths} batches"


def test_binary_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("OXEFS_BIN", str(tmp_path / "missing"))
    with pytest.raises(oxefs.OxefsError, match="not an executable"):
        oxefs.find_binary()


def test_package_installs(tmp_path):
    """The package builds as a wheel (pip, no network: setuptools from the system)."""
    pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if pip.returncode != 0:
        pytest.skip("MISSING python pip: pip is not installed (./scripts/testdeps.sh installs python3-pip)")
    # Built from a copy: a build writes build/ and *.egg-info beside the sources.
    src = tmp_path / "src"
    shutil.copytree(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), src,
                    ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    out = tmp_path / "dist"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(src)],
        capture_output=True, text=True,
    )
    if r.returncode != 0 and "No module named" in (r.stdout + r.stderr):
        pytest.skip("MISSING python setuptools, wheel: not installed: " + (r.stderr.strip().splitlines() or [""])[-1])
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(name.startswith("oxefs-0.1.0") and name.endswith(".whl") for name in os.listdir(out))


_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tiny_mix(tmp_path, extra=""):
    """A mix of the repository's tiny_bridge fixture, with extra top-level lines."""
    src = os.path.join(_REPO, "testdata", "datasets", "tiny_bridge", "1.0.0")
    cfg = tmp_path / "mix.yaml"
    cfg.write_text(extra + f"datasets:\n  - source: {src}\n    image_key: steps/observation/image\n    val_split: val\n"
                   "    action_keys: [steps/action/world_vector, steps/action/rotation_delta]\n    state_key: steps/observation/state\n")
    return cfg


def test_one_daemon_serves_every_rank(tmp_path, monkeypatch):
    _binary()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: no FUSE mount possible here")
    cfg = _tiny_mix(tmp_path, "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 5\n")
    with oxefs.mount(cfg, ranks=[0, 1], args=["--cache-dir", str(tmp_path / "cache")]) as m:
        assert (m.info["ranks"], m.info["world"]) == ([0, 1], 2)
        got = {}
        for rank in (0, 1):
            monkeypatch.setenv("RANK", str(rank))
            monkeypatch.setenv("WORLD_SIZE", "2")
            ds = oxefs.Batches(m)
            assert ds.path == os.path.join(m.path, "rank", str(rank))
            got[rank] = [ds[i]["episode_id"] for i in range(len(ds))]
        # 5 batches over 2 ranks: both list 3 (rank 1's last is the next
        # epoch's first), and no batch is served twice.
        assert len(got[0]) == len(got[1]) == 3
        assert got[0] != got[1]
        monkeypatch.setenv("RANK", "0")
        monkeypatch.setenv("WORLD_SIZE", "4")
        with pytest.raises(ValueError, match="world of 2 ranks"):
            oxefs.Batches(m)
        assert oxefs.Batches(m, rank=1).path.endswith(os.path.join("rank", "1"))


def test_torchrun_two_ranks_one_daemon(tmp_path):
    """examples/torchrun_train.py under torchrun on 2 CPU ranks (gloo) over one daemon: equal steps."""
    _binary()
    _torch()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: no FUSE mount possible here")
    cfg = _tiny_mix(tmp_path, "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 7\n")
    with oxefs.mount(cfg, ranks="0-1", world=2, args=["--cache-dir", str(tmp_path / "cache")]) as m:
        env = dict(os.environ, PYTHONPATH=os.path.join(_REPO, "python"), OMP_NUM_THREADS="1")
        r = subprocess.run(
            # --redirects 1 --tee 1: the default, 0, fails in Debian's torch
            # 1.13 on Python 3.11 (its Std.from_str("0") gives None).
            [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
             "--redirects", "1", "--tee", "1", os.path.join(_REPO, "examples", "torchrun_train.py"), m.path],
            capture_output=True, text=True, env=env, timeout=300,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        lines = sorted(line[line.index("rank "):] for line in r.stdout.splitlines() if " of 2: " in line)
        # 7 batches over 2 ranks: 4 steps each.
        assert [line.split(":")[0] for line in lines] == ["rank 0 of 2", "rank 1 of 2"], r.stdout
        assert all(" 4 steps" in line for line in lines), r.stdout
