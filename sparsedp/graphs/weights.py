"""Gossip matrices W of a graph: the weight schemes.

A gossip round maps the vector of node values ``x`` to ``W x``: node ``i`` keeps ``W_ii x_i`` and
receives ``W_ij x_j`` from each neighbour ``j``.  All builders are vectorised (no Python loop over
edges) and return ``scipy.sparse.csr_matrix`` (float64, sorted indices, explicit diagonal entries
only where nonzero).  Their properties are checked by :mod:`sparsedp.linalg.stochastic`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import GraphError, ParameterError
from sparsedp.graphs.graph import as_graph, require_connected

__all__ = ["SCHEMES", "gossip_matrix"]

SCHEMES = ("metropolis", "max-degree", "row-normalised", "row-normalised-self-loops")


def gossip_matrix(graph: Any, scheme: str = "metropolis", laziness: float = 0.0) -> sp.csr_matrix:
    """Gossip matrix of a connected graph (anything :func:`sparsedp.graphs.as_graph` accepts).

    With ``d_i`` the degree of node ``i`` and ``j ~ i`` its neighbours:

    * ``"metropolis"``: ``W_ij = 1 / (1 + max(d_i, d_j))`` for ``j ~ i``,
      ``W_ii = 1 - sum_{j~i} W_ij`` (>= ``1 / (1 + d_i)``).  Symmetric, doubly stochastic.
    * ``"max-degree"``: ``W_ij = 1 / max(d_i, d_j)``, ``W_ii = 1 - sum_{j~i} W_ij``, which is
      exactly 0 when no neighbour has a larger degree than ``i``; then W can be periodic (even
      cycles, hypercubes and other bipartite regular graphs: period 2).  Symmetric, doubly
      stochastic.  The variant used by the older paper and its published code.
    * ``"row-normalised"``: ``W = D^{-1} A``, i.e. ``W_ij = 1 / d_i`` (the random walk).
    * ``"row-normalised-self-loops"``: ``W = (D + I)^{-1} (A + I)``, i.e.
      ``W_ij = W_ii = 1 / (d_i + 1)``.

    The row-normalised schemes are row-stochastic only, and symmetric only on regular graphs;
    their stationary distribution is proportional to ``d_i`` (resp. ``d_i + 1``).

    ``laziness = a`` in [0, 1) returns ``a I + (1 - a) W``.

    Row and column ``i`` belong to the node at position ``i`` of the graph:
    ``as_graph(graph).id_of(i)``, i.e. ``list(G)[i]`` for a networkx graph (``i`` itself when
    the nodes are ``0..n-1`` in order).  The functions that take W name nodes by these rows;
    ``as_graph(graph).index_of(label)`` converts a label.

    Raises ``GraphError`` for a disconnected graph (with the component count) or a single node,
    ``ParameterError`` for an unknown scheme or a laziness outside [0, 1).
    """
    if scheme not in SCHEMES:
        raise ParameterError(f"unknown gossip scheme {scheme!r}; valid schemes: "
                             + ", ".join(SCHEMES))
    if not 0.0 <= laziness < 1.0:
        raise ParameterError(f"laziness must be in [0, 1), got {laziness!r}")
    g = as_graph(graph)
    if g.n < 2:
        raise GraphError("graph has a single node; gossip needs at least 2 nodes")
    require_connected(g)
    A = g.adjacency
    d = g.degrees.astype(np.float64)
    rows = np.repeat(np.arange(g.n), np.diff(A.indptr))
    cols = A.indices
    if scheme == "metropolis":
        off = 1.0 / (1.0 + np.maximum(d[rows], d[cols]))
        diag = 1.0 - np.bincount(rows, weights=off, minlength=g.n)
    elif scheme == "max-degree":
        off = 1.0 / np.maximum(d[rows], d[cols])
        has_larger_neighbour = np.bincount(rows[d[cols] > d[rows]], minlength=g.n) > 0
        diag = np.where(has_larger_neighbour,
                        1.0 - np.bincount(rows, weights=off, minlength=g.n), 0.0)
    elif scheme == "row-normalised":
        off = 1.0 / d[rows]
        diag = np.zeros(g.n)
    else:  # row-normalised-self-loops
        off = 1.0 / (d[rows] + 1.0)
        diag = 1.0 / (d + 1.0)
    off = (1.0 - laziness) * off
    diag = laziness + (1.0 - laziness) * diag
    W = sp.csr_matrix((off, cols.copy(), A.indptr.copy()), shape=A.shape)
    W = (W + sp.diags(diag, format="csr")).tocsr()
    W.eliminate_zeros()
    W.sort_indices()
    return W
