"""Which nodes a map covers: ``"all"``, a list of nodes, or ``("sample", k, seed)``."""

from __future__ import annotations

import numbers

import numpy as np

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.graphs.graph import Graph


def select_nodes(selection, graph: Graph | None, n: int, role: str) -> np.ndarray:
    """Row indices (int64) of the selected nodes.

    ``"all"``: every row in order; a list (or one node): its nodes, named by the graph's
    labels (``graph`` given) or by rows of W (``graph`` None), duplicates dropped (first
    occurrence kept); ``("sample", k, seed)``: k distinct rows drawn uniformly by
    ``numpy.random.default_rng(seed).choice(n, k, replace=False)``, sorted.  Unknown nodes
    raise ``GraphError`` naming ``role``; a sample larger than the graph, or an empty
    selection, ``ParameterError``.
    """
    if isinstance(selection, str):
        if selection != "all":
            raise ParameterError(f"{role} must be 'all', a list of nodes or ('sample', k, "
                                 f"seed), got {selection!r}")
        return np.arange(n, dtype=np.int64)
    if isinstance(selection, tuple) and selection and isinstance(selection[0], str):
        return _sample(selection, n, role)
    if graph is None:
        return validation.node_set(selection, n, role)
    labels = [selection] if np.ndim(selection) == 0 else list(selection)
    if not labels:
        raise ParameterError(f"{role} must name at least one node")
    rows = [graph.index_of(v, role[:-1] if role.endswith("s") else role) for v in labels]
    return np.fromiter(dict.fromkeys(rows), dtype=np.int64)


def _sample(selection: tuple, n: int, role: str) -> np.ndarray:
    if len(selection) != 3 or selection[0] != "sample":
        raise ParameterError(f"a sample of {role} is ('sample', k, seed) with an integer "
                             f"seed, e.g. ('sample', 50, 0); got {selection!r}")
    _, k, seed = selection
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ParameterError(f"sample size of {role} must be an integer >= 1, got {k!r}")
    if k > n:
        raise ParameterError(f"sample of {k} {role} is larger than the graph ({n} nodes)")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParameterError(f"sample seed of {role} must be an integer, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    return np.sort(rng.choice(n, int(k), replace=False)).astype(np.int64)
