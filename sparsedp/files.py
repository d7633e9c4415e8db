"""Output files written whole or not at all, with the permissions a plain ``open()`` gives.

Every file the package writes (maps and sweep chunks in Parquet, sweep manifests, plots,
CSV exports) goes through :func:`write_atomically`: the content is written to a temporary
file in the target's directory, then renamed onto the target (``os.replace``, atomic on
POSIX and Windows), so a reader or a killed run never leaves half a file.  The temporary
file is created with mode ``0o666`` filtered by the process's umask, as ``open(path, "w")``
would create the target (``tempfile.mkstemp`` would make it ``0o600``, readable by its owner
alone, and the rename would keep that).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

from sparsedp.errors import ParameterError

__all__ = ["remove_stale_temporaries", "write_atomically"]

CREATE_MODE = 0o666  # what open() asks for; the kernel applies the umask
_TEMPORARY = re.compile(r"\..*-[0-9a-f]{12}(\.[^.]*)?")  # _create_temporary's names


def write_atomically(target, write: Callable[[str], object]) -> Path:
    """Call ``write(temporary)`` to fill a new file next to ``target``, then rename it onto
    ``target``.

    Parameters
    ----------
    target : str or path-like
        The file to create or replace.
    write : callable
        Writes the content to the path (a ``str``) it is given; the file exists, empty.

    Returns
    -------
    pathlib.Path
        ``target``.

    Raises
    ------
    ParameterError
        ``target``'s directory does not exist (named with the user's path).

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> folder = tempfile.mkdtemp()
    >>> path = write_atomically(os.path.join(folder, "out.txt"),
    ...                         lambda temporary: Path(temporary).write_text("done"))
    >>> path.read_text(), os.listdir(folder)
    ('done', ['out.txt'])
    """
    target = Path(target)
    directory = target.parent
    if not directory.is_dir():
        raise ParameterError(f"cannot write {target}: no directory {directory}")
    temporary = _create_temporary(directory, target)
    try:
        write(temporary)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


def temporaries(directory, target: str | None = None) -> list[Path]:
    """The temporary files :func:`write_atomically` creates in ``directory`` (hidden, named
    ``.STEM-RANDOM.SUFFIX``; of the file named ``target`` only, when given): left behind only
    by a run killed while writing.  A reader that lists a folder (``*.parquet`` also matches
    hidden names in :mod:`pathlib`) skips them."""
    pattern = _TEMPORARY if target is None else re.compile(
        rf"\.{re.escape(Path(target).stem)}-[0-9a-f]{{12}}{re.escape(Path(target).suffix)}")
    return sorted(p for p in Path(directory).glob(".*") if pattern.fullmatch(p.name))


def remove_stale_temporaries(directory, target: str | None = None) -> int:
    """Delete the temporaries a killed run left in ``directory`` (of ``target`` only, when
    given); how many there were.  Call it only while no writer of the same folder runs (a
    resumed run, before it starts)."""
    stale = temporaries(directory, target) if Path(directory).is_dir() else []
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)


def _create_temporary(directory: Path, target: Path) -> str:
    """A new empty hidden file ``.STEM-RANDOM.SUFFIX`` in ``directory`` (the target's suffix
    kept: writers that pick a format from it, as matplotlib's, see the target's), created with
    :data:`CREATE_MODE` (the umask applies, as for ``open()``); its path."""
    while True:
        path = directory / f".{target.stem}-{secrets.token_hex(6)}{target.suffix}"
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, CREATE_MODE)
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
        os.close(handle)
        return str(path)
