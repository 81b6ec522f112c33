"""Poplar's ``versionString()`` and ``packageHash()``: what the simulator is, honestly.

Poplar reports the SDK's version and the hash of the build it comes from. There is no SDK here:
both describe poplar-py itself, its release and the code of its installed package.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__version__ = "0.1.0"

_PACKAGE = Path(__file__).parent


def versionString() -> str:
    """The version of the framework running the program: poplar-py's release, as
    ``"poplar-py 0.1.0 (simulated IPU)"`` (there is no Poplar SDK behind it)."""
    return f"poplar-py {__version__} (simulated IPU)"


@functools.cache
def packageHash() -> str:
    """A hash identifying the build: the first 10 hex digits of the SHA-256 of poplar-py's
    Python sources (their paths and contents), as Poplar gives a short hash of its build. Two
    installs of the same code give the same hash; any change to the code gives another."""
    h = hashlib.sha256(__version__.encode())
    for path in sorted(_PACKAGE.rglob("*.py")):
        h.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:10]
