"""Build the oxefs package with the oxefs daemon inside it, where one can be had.

The metadata is in pyproject.toml; this file only adds the daemon. A wheel
that carries it holds the binary as oxefs/_bin/oxefs and is tagged for this
platform (py3-none-manylinux_2_X_<arch> when the binary needs nothing but
glibc, else py3-none-linux_<arch>), so that `pip install oxefs-*.whl` then
`oxefs.mount()` works on a machine without Go. The binary comes from:

- OXEFS_WHEEL_BIN=/path/to/oxefs: that binary (scripts/wheel.sh builds one
  and passes it here); it must run here (`oxefs version` is checked).
- else, with `go` on PATH and this directory inside an oxefs checkout:
  `go build` with cgo on (libturbojpeg and libavcodec are loaded at run
  time with dlopen, so the binary links nothing but libc).
- else, or with OXEFS_WHEEL_BIN=none: no binary, a pure-Python package that
  runs the oxefs from OXEFS_BIN or PATH. The build says why.

Build outputs (build/, oxefs.egg-info) go to a temporary directory, removed
when the build ends: nothing is written beside the sources.
"""

import atexit
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 has its own; before that it is the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
BINARY = os.path.join("oxefs", "_bin", "oxefs")  # inside the package, as _binary.py expects

# Libraries a manylinux wheel may link against without carrying them (PEP 600:
# those every glibc system has). The binary links only libc.
MANYLINUX_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1"}


def _say(msg):
    print(f"oxefs setup: {msg}", file=sys.stderr)


def _is_checkout(path):
    try:
        with open(os.path.join(path, "go.mod")) as f:
            return f.readline().strip() == "module github.com/oxefs/oxefs"
    except OSError:
        return False


def _binary_source():
    """Where the daemon comes from: ("file", path), ("go", checkout) or (None, why)."""
    given = os.environ.get("OXEFS_WHEEL_BIN", "")
    if given == "none":
        return None, "OXEFS_WHEEL_BIN=none"
    if given:
        return "file", given
    if not _is_checkout(CHECKOUT):
        return None, f"{CHECKOUT} is not an oxefs checkout (no go.mod of github.com/oxefs/oxefs), so there is nothing to build"
    if shutil.which("go") is None:
        return None, "go is not on PATH"
    return "go", CHECKOUT


class BuildPyWithDaemon(build_py):
    """build_py, then the oxefs binary into the built package."""

    def run(self):
        super().run()
        kind, where = _binary_source()
        self.distribution.oxefs_binary = None
        if getattr(self, "editable_mode", False):  # pip install -e: the sources are the package
            kind, where = None, "an editable install runs the sources, which hold no binary"
        if kind is None:
            _say(f"building a pure-Python package without the oxefs daemon ({where}); "
                 "oxefs.mount() will run the oxefs from OXEFS_BIN or PATH. "
                 "For the daemon inside: install Go and cgo's gcc, or set OXEFS_WHEEL_BIN to a built oxefs")
            return
        out = os.path.join(self.build_lib, BINARY)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        version = self.distribution.get_version()
        if kind == "file":
            if not (os.path.isfile(where) and os.access(where, os.X_OK)):
                raise SystemExit(f"OXEFS_WHEEL_BIN={where!r} is not an executable file "
                                 "(a built oxefs, or none for a package without it)")
            shutil.copy2(where, out)
        else:
            _say(f"go build (cgo on) in {where}")
            cmd = ["go", "build", "-ldflags", f"-s -w -X main.version={version}", "-o", out, "."]
            r = subprocess.run(cmd, cwd=where, env=dict(os.environ, CGO_ENABLED="1"),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} in {where} failed (cgo needs gcc):\n{r.stdout}\n"
                                 "Set OXEFS_WHEEL_BIN=none for a package without the daemon.")
        r = subprocess.run([out, "version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or not r.stdout.startswith("oxefs "):
            raise SystemExit(f"{where}: `oxefs version` gave {r.returncode} and {r.stdout!r}: "
                             "not an oxefs binary that runs on this machine")
        _say(f"packaged {r.stdout.strip()} from {where}")
        self.distribution.oxefs_binary = out


def _glibc_tag(binary, arch):
    """manylinux_2_X_<arch> when the binary needs only glibc, else None."""
    try:
        dyn = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
        ver = subprocess.run(["readelf", "-V", "--wide", binary], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None  # no binutils: the plain linux tag
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn))
    if not needed <= MANYLINUX_LIBS:
        return None
    glibc = [tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_(\d+\.\d+)", ver)]
    major, minor = max(glibc, default=(2, 17))
    return f"manylinux_{major}_{minor}_{arch}"


class DaemonDistribution(Distribution):
    """A distribution that is platform-specific once it carries the binary:
    installed as platlib, like a package with extension modules."""

    oxefs_binary = None  # set by BuildPyWithDaemon

    def has_ext_modules(self):
        return self.oxefs_binary is not None


class PlatformWheel(bdist_wheel):
    """A py3-none-<platform> wheel when it carries the binary, else py3-none-any."""

    def run(self):
        self.run_command("build")  # decides whether there is a binary; run once
        self.root_is_pure = not self.distribution.has_ext_modules()
        super().run()

    def get_tag(self):
        binary = self.distribution.oxefs_binary
        if binary is None:
            return "py3", "none", "any"
        plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")  # linux_x86_64
        if plat.startswith("linux_"):
            plat = _glibc_tag(binary, plat[len("linux_"):]) or plat
        return "py3", "none", plat


_tmp = tempfile.mkdtemp(prefix="oxefs-pybuild-")
atexit.register(shutil.rmtree, _tmp, ignore_errors=True)

setup(
    distclass=DaemonDistribution,
    cmdclass={"build_py": BuildPyWithDaemon, "bdist_wheel": PlatformWheel},
    options={"build": {"build_base": os.path.join(_tmp, "build")}, "egg_info": {"egg_base": _tmp}},
)
