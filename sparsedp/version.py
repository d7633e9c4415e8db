"""The package's version, written once: ``version`` in pyproject.toml.

An installed package (``pip install``, editable or not) reads it from its distribution's
metadata (:func:`importlib.metadata.version`); a source tree that is not installed (its
directory on ``sys.path``) reads it from the pyproject.toml beside the package (the
``[project]`` table named ``sparsedp``); anything else reports ``"0+unknown"``.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

__all__ = ["UNKNOWN", "package_version"]

UNKNOWN = "0+unknown"
_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
_PROJECT = re.compile(r"^\[project\]\n(?P<table>[^\[]*)", re.MULTILINE)  # up to the next table
_FIELD = r'^{}\s*=\s*"([^"]+)"'  # a string field of that table


def package_version(pyproject: Path = _PYPROJECT) -> str:
    """The version of the installed ``sparsedp`` distribution, else of the source tree's
    ``pyproject`` (its ``[project]`` table), else :data:`UNKNOWN`.

    Parameters
    ----------
    pyproject : pathlib.Path
        The source tree's pyproject.toml (default: the one beside the package).

    Returns
    -------
    str

    Examples
    --------
    >>> import sparsedp
    >>> from sparsedp.version import package_version
    >>> package_version() == sparsedp.__version__
    True
    """
    try:
        return metadata.version("sparsedp")
    except metadata.PackageNotFoundError:
        pass
    try:
        project = _PROJECT.search(pyproject.read_text(encoding="utf-8"))
    except OSError:
        return UNKNOWN
    table = project["table"] if project else ""
    name = re.search(_FIELD.format("name"), table, re.MULTILINE)
    version = re.search(_FIELD.format("version"), table, re.MULTILINE)
    if name is None or name.group(1) != "sparsedp" or version is None:
        return UNKNOWN
    return version.group(1)
