"""The oxefs daemon that an installed wheel carries (see python/setup.py)."""

import os

_PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "oxefs")


def packaged_binary():
    """The oxefs binary inside this package, or None where it carries none
    (a checkout, or a package installed without Go)."""
    return _PACKAGED if os.access(_PACKAGED, os.X_OK) else None
