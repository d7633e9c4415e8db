"""Checks of the scalar and index arguments shared by the public functions."""

from __future__ import annotations

import math
import numbers
from numbers import Real

import numpy as np

from sparsedp.errors import GraphError, NodeIndexError, ParameterError


def rounds(T) -> int:
    """``T`` as an int >= 1, else ParameterError."""
    if isinstance(T, bool) or not isinstance(T, numbers.Integral):
        raise ParameterError(f"T (number of rounds) must be an integer >= 1, got {T!r}")
    if T < 1:
        raise ParameterError(f"T (number of rounds) must be >= 1, got {T}")
    return int(T)


def node_index(node, n: int, role: str) -> int:
    """A node index in ``0..n-1``, a row of the matrix W of the functions that take only W
    (``role`` names the argument in the error).  Functions that take a graph name nodes by
    their labels instead (:meth:`sparsedp.graphs.Graph.index_of`).  An index outside
    ``0..n-1`` is a :class:`~sparsedp.errors.NodeIndexError` (also an ``IndexError``)."""
    if isinstance(node, bool) or not isinstance(node, numbers.Integral):
        raise GraphError(f"{role} must be an integer node index (a row of W), got {node!r}")
    if not 0 <= node < n:
        raise NodeIndexError(f"unknown node id {node} for {role}: W has the rows 0..{n - 1}")
    return int(node)


def node_set(nodes, n: int, role: str) -> np.ndarray:
    """Distinct node indices (first occurrence order kept); a single int is a set of one."""
    if isinstance(nodes, numbers.Integral):
        nodes = [nodes]
    indices = [node_index(v, n, role) for v in np.asarray(nodes, dtype=object).ravel()]
    if not indices:
        raise ParameterError(f"{role} must name at least one node")
    return np.fromiter(dict.fromkeys(indices), dtype=np.int64)  # first occurrences, in order


def real(name: str, value: object) -> float:
    """``value`` as a float; booleans and non-numbers are refused."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterError(f"{name} must be a real number, got {value!r}")
    return float(value)


def nonnegative(name: str, value: object) -> float:
    """A finite real >= 0."""
    x = real(name, value)
    if not (math.isfinite(x) and x >= 0.0):
        raise ParameterError(f"{name} must be >= 0 and finite, got {x!r}")
    return x


def sigma(value: object) -> float:
    """The noise standard deviation: finite and > 0."""
    x = real("sigma", value)
    if not (math.isfinite(x) and x > 0.0):
        raise ParameterError(f"sigma must be > 0 and finite, got {x!r}")
    return x


def probability_delta(value: object) -> float:
    """The delta of (epsilon, delta)-DP: in the open interval (0, 1)."""
    x = real("delta", value)
    if not 0.0 < x < 1.0:
        raise ParameterError(f"delta must lie in (0, 1), got {x!r}")
    return x


def not_among(node, group, role: str, group_role: str, label=None) -> None:
    """The one rule for a node among its own observers, in every family (docs/views.md): a
    target (source, victim) that is one of its observers (attackers, receivers) holds its own
    data, so no privacy guarantee towards itself exists and the accounting's theorems do not
    apply: ParameterError.  ``group``: a node or a collection of nodes (``None``: nothing to
    check); ``label``: how to name ``node`` in the message (default ``node`` itself)."""
    if group is None:
        return
    single = np.ndim(group) == 0
    members = [group] if single else np.asarray(group, dtype=object).ravel().tolist()
    if node in members:
        shown = node if label is None else label
        shown = shown.item() if isinstance(shown, np.generic) else shown
        where = f"is the {group_role}" if single else f"is among the {group_role}"
        raise ParameterError(f"the {role} {shown!r} {where}: a node holds its own data, so no "
                             "privacy guarantee towards itself exists")
