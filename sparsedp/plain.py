"""Plain data for JSON: every result that leaves the package as ``to_dict()`` or ``--json``.

Strict JSON has no infinity and no NaN (``json.dumps`` would write ``Infinity`` and ``NaN``,
which ``jq``, JavaScript and strict parsers reject).  The one encoding used everywhere: a
non-finite number becomes the string ``"infinity"``, ``"-infinity"`` or ``"nan"``
(``float(s)`` reads it back).  An infinite sensitivity or epsilon means "no privacy";
``"nan"`` means undefined.  numpy scalars and arrays become Python numbers and lists, tuples
become lists.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["plain"]


def plain(value: Any) -> Any:
    """``value`` as strict-JSON-ready plain data (module docstring)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("infinity" if value > 0 else "-infinity")
    return value
