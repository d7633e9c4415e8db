"""Where numba keeps the compiled kernels, and a cache that heals.

numba writes its on-disk cache next to the source by default: inside ``site-packages``,
which fails on read-only installs, is shared between users, and is where a corrupt cache
(a run killed while writing) made every later run fail with ``UnpicklingError`` until the
user deleted it by hand.  Here the cache lives in ``NUMBA_CACHE_DIR`` when the user sets it,
otherwise in a per-user cache directory (``platformdirs.user_cache_dir("sparsedp")/numba``).
Before the kernels are loaded, every cache file of this package is read back as numba would
(index: a version pickle then a pickled ``(stamp, overloads)``; data: one pickle); if any is
unreadable, this package's cache files are deleted, with one warning, and recompiled.
"""

from __future__ import annotations

import os
import pickle
import warnings
from pathlib import Path

import platformdirs

KERNEL_MODULE = "_numba_kernels"  # numba names the cache files <module>.<function>-<line>...


def cache_dir() -> Path:
    """``NUMBA_CACHE_DIR`` if set, else the per-user cache directory of sparsedp."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    return Path(chosen) if chosen else Path(platformdirs.user_cache_dir("sparsedp")) / "numba"


def configure() -> Path:
    """Point numba's cache at :func:`cache_dir` (before the kernels are compiled) and heal it;
    returns the directory."""
    import numba

    directory = cache_dir()
    numba.config.CACHE_DIR = str(directory)
    heal(directory)
    return directory


def _readable(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            if path.suffix == ".nbi":
                pickle.load(handle)  # the version stamp
            pickle.loads(handle.read())
    except Exception:  # truncated, garbage, or written by an incompatible build
        return False
    return True


def heal(directory: Path) -> bool:
    """Delete this package's cache files under ``directory`` when any is unreadable; return
    whether it did (one ``UserWarning`` then)."""
    files = [p for p in directory.rglob(f"{KERNEL_MODULE}.*") if p.suffix in (".nbi", ".nbc")]
    if all(_readable(p) for p in files):
        return False
    for path in files:
        path.unlink(missing_ok=True)
    warnings.warn(f"discarded a corrupt numba cache in {directory}; recompiling the kernels",
                  UserWarning, stacklevel=2)
    return True
