"""The package as a user installs it: a wheel that carries the oxefs daemon
(scripts/wheel.sh), `pip install ./python` with Go and without it.

Each installs into a fresh virtual environment (--system-site-packages,
for numpy and pip) and runs Python there from outside the checkout, with no
OXEFS_BIN and no oxefs on PATH, so only the installed package is seen.
Every build must leave the checkout as it was (no build/, no egg-info).
They need pip, setuptools and wheel (offline: no build isolation).
"""

import os
import platform
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(REPO, "python")


def _need_build_tools():
    r = subprocess.run([sys.executable, "-c", "import setuptools, wheel, pip"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("MISSING python pip, setuptools, wheel: not installed: " + (r.stderr.strip().splitlines() or [""])[-1])


def _leftovers():
    """Every path under python/ but bytecode caches: a build that writes
    build/, *.egg-info or a binary beside the sources changes it."""
    found = set()
    for root, dirs, files in os.walk(PYDIR):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
        found.update(os.path.relpath(os.path.join(root, n), PYDIR) for n in dirs + files)
    return found


def _clean_env(path=None):
    """The environment without OXEFS_BIN, PYTHONPATH or an oxefs on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("OXEFS_BIN", "OXEFS_WHEEL_BIN", "PYTHONPATH")}
    if path is None:
        path = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                               if d and not os.access(os.path.join(d, "oxefs"), os.X_OK))
    env["PATH"] = path
    return env


def _venv(tmp_path):
    """A fresh venv's python, seeing the system's numpy and pip but no oxefs."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    r = subprocess.run([python, "-c", "import numpy, pip"], capture_output=True, text=True, cwd=tmp_path)
    if r.returncode != 0:
        pytest.skip(f"a venv of {sys.executable} sees no numpy or pip: {r.stderr.strip()}")
    return python, str(venv)


def _in_venv(python, tmp_path, code, **env):
    """Run code with the venv's python, outside the checkout, in a clean environment."""
    return subprocess.run([python, "-c", code], cwd=tmp_path, env=dict(_clean_env(), **env),
                          capture_output=True, text=True, timeout=300)


def test_wheel_carries_daemon(tmp_path):
    """scripts/wheel.sh builds a platform wheel with the daemon inside;
    installed where oxefs is on neither PATH nor OXEFS_BIN, oxefs.mount()
    runs the packaged daemon and serves a batch of the demo mix."""
    _need_build_tools()
    before = _leftovers()
    env = _clean_env(os.environ.get("PATH", ""))
    env["PYTHON"] = sys.executable
    if os.environ.get("OXEFS_BIN"):
        env["OXEFS_WHEEL_BIN"] = os.environ["OXEFS_BIN"]  # the binary these tests run: no second go build
    elif shutil.which("go") is None:
        pytest.skip("neither OXEFS_BIN nor go: no oxefs binary to package")
    r = subprocess.run([os.path.join(REPO, "scripts", "wheel.sh"), str(tmp_path / "dist")],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for n in (1, 2, 3):
        assert f"wheel.sh: [{n}/3] " in r.stderr, r.stderr
    whl = r.stdout.strip().splitlines()[-1]
    assert os.path.dirname(whl) == str(tmp_path / "dist")
    arch = platform.machine()
    assert re.fullmatch(rf"oxefs-0\.1\.0-py3-none-(manylinux_\d+_\d+|linux)_{arch}\.whl", os.path.basename(whl)), whl
    with zipfile.ZipFile(whl) as z:
        info = z.getinfo("oxefs/_bin/oxefs")
        assert (info.external_attr >> 16) & 0o111, "the packaged binary is not executable"
        assert "Root-Is-Purelib: false" in z.read("oxefs-0.1.0.dist-info/WHEEL").decode()
    assert _leftovers() == before, "building the wheel left files in the checkout"

    python, venv = _venv(tmp_path)
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", whl],
                   check=True, env=_clean_env(), cwd=tmp_path)
    r = _in_venv(python, tmp_path, "import oxefs; print(oxefs.find_binary())")
    assert r.returncode == 0, r.stderr
    exe = r.stdout.strip()
    assert exe.startswith(venv + os.sep) and exe.endswith(os.path.join("oxefs", "_bin", "oxefs")), exe
    # The packaged binary comes before an oxefs on PATH ...
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    os.symlink(shutil.which("false") or "/bin/false", decoy / "oxefs")
    r = _in_venv(python, tmp_path, "import oxefs; print(oxefs.find_binary())",
                 PATH=str(decoy) + os.pathsep + _clean_env()["PATH"])
    assert r.returncode == 0 and r.stdout.strip() == exe, r.stdout + r.stderr
    # ... and OXEFS_BIN still overrides it.
    r = _in_venv(python, tmp_path, "import oxefs; print(oxefs.find_binary())", OXEFS_BIN=str(tmp_path / "missing"))
    assert r.returncode != 0 and "not an executable" in r.stderr, r.stderr

    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: the installed wheel cannot mount here")
    r = _in_venv(python, tmp_path, """
import oxefs
with oxefs.mount() as mnt:
    b = oxefs.Batches(mnt)[0]
    print(mnt.process.args[0])
    print(b["frames"].shape, b["frames"].dtype, b["dataset_name"][0])
""")
    assert r.returncode == 0, r.stdout + r.stderr
    ran, batch = r.stdout.strip().splitlines()
    assert ran == exe
    assert batch.startswith("(16, 2, 64, 64, 3) uint8 "), batch


FAKE_GO = r"""#!/bin/sh
# A stand-in for go: records its arguments, prints what go build -v prints,
# waits (30 s at most) until wheel.sh has said it is still building, then
# writes an "oxefs" that answers `version`.
echo "$@" > "$FAKE_GO_ARGS"
echo "github.com/oxefs/oxefs" >&2
i=0
until grep -q "still building" "$WHEEL_STDERR"; do
  i=$((i + 1)); [ "$i" -le 300 ] || { echo "fake go: no heartbeat from wheel.sh" >&2; exit 3; }
  sleep 0.1
done
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then printf '#!/bin/sh\necho oxefs 0.1.0\n' > "$2"; chmod +x "$2"; fi
  shift
done
"""


def test_wheel_sh_says_what_it_does(tmp_path):
    """scripts/wheel.sh says each step as it starts, shows go build's
    progress (-v: each package as it compiles) and, while the build is
    silent, a line every OXEFS_WHEEL_HEARTBEAT seconds. A stand-in go on
    PATH waits for that line, so the test does not hang on a real build."""
    _need_build_tools()
    fake = tmp_path / "fakego"
    fake.mkdir()
    (fake / "go").write_text(FAKE_GO)
    (fake / "go").chmod(0o755)
    env = _clean_env(str(fake) + os.pathsep + os.environ.get("PATH", ""))
    errpath, argspath = tmp_path / "stderr", tmp_path / "go-args"
    env.update(PYTHON=sys.executable, OXEFS_WHEEL_HEARTBEAT="1", WHEEL_STDERR=str(errpath), FAKE_GO_ARGS=str(argspath))
    with open(errpath, "w") as err:
        r = subprocess.run([os.path.join(REPO, "scripts", "wheel.sh"), str(tmp_path / "dist")],
                           env=env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=300)
    stderr = errpath.read_text()
    assert r.returncode == 0, stderr
    lines = stderr.splitlines()
    steps = [line for line in lines if re.match(r"wheel\.sh: \[\d/3\] ", line)]
    assert [s[:len("wheel.sh: [1/3]")] for s in steps] == ["wheel.sh: [1/3]", "wheel.sh: [2/3]", "wheel.sh: [3/3]"], stderr
    assert "go build" in steps[0] and "minutes" in steps[0], steps[0]
    assert "github.com/oxefs/oxefs" in lines, "go build's own progress is not shown:\n" + stderr
    assert any("still building" in line for line in lines), stderr
    args = argspath.read_text().split()
    assert args[0] == "build" and "-v" in args, args
    assert r.stdout.strip().endswith(".whl"), r.stdout


def test_pip_install_builds_daemon_with_go(tmp_path):
    """`pip install ./python` where Go is present runs go build and installs
    the daemon inside the package, at the package's version."""
    _need_build_tools()
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH")
    before = _leftovers()
    python, venv = _venv(tmp_path)
    env = _clean_env(os.environ.get("PATH", ""))
    r = subprocess.run([python, "-m", "pip", "install", "-v", "--no-index", "--no-deps", "--no-build-isolation", PYDIR],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "oxefs setup: go build" in r.stdout + r.stderr
    assert _leftovers() == before, "pip install ./python left files in the checkout"
    r = _in_venv(python, tmp_path, "import oxefs, subprocess; print(subprocess.check_output([oxefs.find_binary(), 'version'], text=True))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "oxefs 0.1.0"


def test_pip_install_without_go_is_pure(tmp_path):
    """Without Go, `pip install ./python` installs the pure-Python package and
    says why; oxefs.mount() then asks for OXEFS_BIN or PATH, naming both."""
    _need_build_tools()
    before = _leftovers()
    python, venv = _venv(tmp_path)
    empty = tmp_path / "bin"
    empty.mkdir()
    r = subprocess.run([python, "-m", "pip", "wheel", "-v", "--no-index", "--no-deps", "--no-build-isolation",
                        "-w", str(tmp_path / "dist"), PYDIR],
                       env=_clean_env(str(empty)), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "without the oxefs daemon (go is not on PATH)" in r.stdout + r.stderr
    assert os.listdir(tmp_path / "dist") == ["oxefs-0.1.0-py3-none-any.whl"]
    whl = str(tmp_path / "dist" / "oxefs-0.1.0-py3-none-any.whl")
    with zipfile.ZipFile(whl) as z:
        assert not [n for n in z.namelist() if n.startswith("oxefs/_bin/")]
    assert _leftovers() == before, "pip wheel ./python left files in the checkout"
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", whl],
                   check=True, env=_clean_env(), cwd=tmp_path)
    r = _in_venv(python, tmp_path, "import oxefs; oxefs.find_binary()")
    assert r.returncode != 0
    assert "none inside this oxefs package" in r.stderr and "OXEFS_BIN" in r.stderr and "PATH" in r.stderr, r.stderr
