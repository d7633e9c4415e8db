"""Short ``repr`` of a result object, whatever its size.

A result holds arrays, sign vectors of length T, per-pair tables and long notes; the default
dataclass ``repr`` prints them all (7,860 characters for a sensitivity result at T = 2000).
:func:`short_repr` shows every field by a summary of bounded length: numbers and short values
in full, a long sequence or array by its length (or shape) and type, a dict by its number of
entries, a long string cut, a nested object by its type.  The full data stays in the
attributes and in ``to_dict()``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = ["short_repr"]

MAX_ITEMS = 4  # a sequence or array with more items is shown by its length
MAX_TEXT = 32  # characters of a string shown before it is cut


def short_repr(result: Any) -> str:
    """``ClassName(field=summary, ...)`` over the dataclass fields of ``result`` (another
    object: its public instance attributes, e.g. an accountant's; module docstring): a few
    hundred characters at most, whatever the size of the data.

    Parameters
    ----------
    result : dataclass instance or object
        A result object (or an accountant); assign ``__repr__ = short_repr`` in its class body.

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> from dataclasses import dataclass
    >>> from sparsedp.reprs import short_repr
    >>> @dataclass
    ... class Result:
    ...     upper: float
    ...     signs: tuple
    ...     nats: np.ndarray
    ...     __repr__ = short_repr
    >>> Result(0.5, (1, -1) * 1000, np.zeros((3, 4)))
    Result(upper=0.5, signs=<tuple of 2000>, nats=<float64 array 3x4>)
    """
    names = ([f.name for f in dataclasses.fields(result) if f.repr]
             if dataclasses.is_dataclass(result)
             else [name for name in vars(result) if not name.startswith("_")])
    parts = [f"{name}={_summary(getattr(result, name))}" for name in names]
    return f"{type(result).__name__}({', '.join(parts)})"


def _summary(value: Any) -> str:
    """A bounded-length text for one field's value."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, complex)):
        text = repr(value)
        return text if len(text) <= MAX_TEXT else f"<{type(value).__name__}>"
    if isinstance(value, str):
        return repr(value) if len(value) <= MAX_TEXT else repr(value[:MAX_TEXT - 3] + "...")
    if isinstance(value, np.ndarray):
        if value.ndim == 1 and value.size <= MAX_ITEMS and value.dtype.kind in "biuf":
            return _sequence(value.tolist(), "[", "]")
        size = "x".join(str(s) for s in value.shape) if value.ndim != 1 else str(value.size)
        return f"<{value.dtype} array {size}>"
    if isinstance(value, (tuple, list)):
        brackets = ("(", ")") if isinstance(value, tuple) else ("[", "]")
        if len(value) <= MAX_ITEMS and all(
                v is None or isinstance(v, (bool, int, float, np.generic)) for v in value):
            return _sequence(value, *brackets)
        return f"<{type(value).__name__} of {len(value)}>"
    if isinstance(value, dict):
        return f"<dict of {len(value)}>"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f"<{type(value).__name__} {'x'.join(str(s) for s in shape)}>"
    return f"<{type(value).__name__}>"


def _sequence(values, opening: str, closing: str) -> str:
    items = [_summary(v) for v in values]
    if opening == "(" and len(items) == 1:
        return f"({items[0]},)"
    return f"{opening}{', '.join(items)}{closing}"
