"""What the mount tests share: where the repository is, and the skip for a
machine that cannot mount."""

import os

import pytest

import oxefs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = os.path.join(REPO, "python")


def need_mount():
    """The oxefs binary; the test is skipped, saying why, where there is
    none or /dev/fuse is absent."""
    try:
        exe = oxefs.find_binary()
    except oxefs.OxefsError as e:
        pytest.skip(str(e))
    if not os.path.exists("/dev/fuse"):
        pytest.skip("MISSING /dev/fuse: no FUSE mount possible here")
    return exe
