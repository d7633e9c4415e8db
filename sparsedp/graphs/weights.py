"""Gossip matrices W of a graph: the weight schemes.

A gossip round maps the vector of node values ``x`` to ``W x``: node ``i`` keeps ``W_ii x_i`` and
receives ``W_ij x_j`` from each neighbour ``j``.  All builders are vectorised (no Python loop over
edges) and return ``scipy.sparse.csr_matrix`` (float64, sorted indices, explicit diagonal entries
only where nonzero).  Their properties are checked by :mod:`sparsedp.linalg.stochastic`.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from sparsedp.errors import GraphError, ParameterError
from sparsedp.graphs.graph import (
    Graph,
    as_graph,
    largest_component_of,
    read_weighted_edges,
    require_connected,
)
from sparsedp.linalg.matrix_facts import array_view
from sparsedp.linalg.stochastic import lock_gossip_matrix

__all__ = ["SCHEMES", "gossip_matrix"]

SCHEMES = ("metropolis", "max-degree", "row-normalised", "row-normalised-self-loops")


WEIGHTED_SCHEMES = ("row-normalised",)
WEIGHT_GRID = 2.0**-52  # Metropolis off-diagonal weights are multiples of this ...
GRID_MIN_WEIGHT = 2.0**-26  # ... when none is below this (each then within 2^-26 relative)


def gossip_matrix(graph: Any, scheme: str = "metropolis", laziness: float = 0.0,
                  weight: str | None = None, *,
                  largest_component: bool = False) -> sp.csr_matrix | sp.csr_array:
    """Gossip matrix of a connected graph (anything :func:`sparsedp.graphs.as_graph` accepts).

    With ``d_i`` the degree of node ``i`` and ``j ~ i`` its neighbours:

    * ``"metropolis"``: ``W_ij = 1 / (1 + max(d_i, d_j))`` for ``j ~ i``,
      ``W_ii = 1 - sum_{j~i} W_ij`` (>= ``1 / (1 + d_i)``).  Symmetric, doubly stochastic,
      and exactly so as stored: the off-diagonal weights are rounded down to multiples of
      :data:`WEIGHT_GRID` (``2^-52``, at most that far from the float64 value), so that every
      sum of them and ``1 - sum`` are exact in float64 and each stored row sums to exactly 1
      (no allowance for row sums off by rounding:
      :attr:`sparsedp.linalg.matrix_facts.MatrixFacts.row_sum_deviation` is 0).  When a
      weight (laziness included) would be below :data:`GRID_MIN_WEIGHT` (``2^-26``: degrees
      above ``6.7 x 10^7`` or laziness within that of 1), where the grid would move it by more
      than ``2^-26`` of itself or delete it, the float64 weights are kept and the rows carry
      their rounding (a small drift allowance).
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

    ``weight``: as in networkx, the name of a networkx edge attribute holding edge weights
    ``w_ij > 0`` (an edge without it weighs 1), or for an edge-list file the name of its
    weight column (a name of its header line, ``source target weight``; without a header
    ``"weight"`` is the third column, as networkx's ``read_weighted_edgelist`` calls it;
    :func:`sparsedp.graphs.graph.read_weighted_edges`), or ``None`` (default: the pattern
    only; a ``UserWarning`` says so when the graph's edges carry a ``"weight"`` attribute or
    the file a third column).  Weights
    are used by the schemes that define weighted rows, :data:`WEIGHTED_SCHEMES`:
    ``"row-normalised"`` gives ``W_ij = w_ij / s_i`` with ``s_i = sum_k w_ik`` (a self-loop
    ``{i, i}`` of weight ``w_ii`` gives ``W_ii = w_ii / s_i``).  Metropolis and max-degree
    weights are functions of the degrees only, so ``weight`` with them is a
    ``ParameterError``; so is a missing, non-positive or non-finite weight (the edge is named;
    in a file a ``GraphError`` naming the line), a directed networkx graph, or a graph that
    is neither a networkx graph nor an edge-list file (a matrix has no attributes: build W
    from your weights directly).

    Row and column ``i`` belong to the node at position ``i`` of the graph:
    ``as_graph(graph).id_of(i)``, i.e. ``list(G)[i]`` for a networkx graph (``i`` itself when
    the nodes are ``0..n-1`` in order).  The functions that take W name nodes by these rows;
    ``as_graph(graph).index_of(label)`` converts a label.  With ``largest_component=True``
    the rows are those of ``as_graph(graph, largest_component=True)``: its ``id_of`` /
    ``index_of`` name the kept nodes.

    A scipy sparse *array* in (``csr_array``, ``coo_array``, ...) gives a ``csr_array`` out;
    anything else a ``csr_matrix``.

    Parameters
    ----------
    graph : networkx.Graph, Graph, scipy.sparse matrix, numpy.ndarray, str or os.PathLike
        A connected graph with at least two nodes (anything :func:`sparsedp.as_graph`
        accepts).
    scheme : {"metropolis", "max-degree", "row-normalised", "row-normalised-self-loops"}
        The weight scheme (default ``"metropolis"``).
    laziness : float, default 0.0
        ``a`` in [0, 1): the result is ``a I + (1 - a) W``.
    weight : str, optional
        Name of a networkx edge attribute, or of an edge-list file's column, with positive
        edge weights (only with ``"row-normalised"``); ``None`` uses the pattern only.
    largest_component : bool, default False
        Build W on the largest connected component only, with a ``UserWarning`` saying how
        many nodes were dropped (:func:`sparsedp.as_graph`).

    Returns
    -------
    scipy.sparse.csr_matrix or scipy.sparse.csr_array
        The ``n x n`` gossip matrix W (a ``csr_array`` for a sparse-array input), rows in
        the graph's node order, locked
        (:func:`sparsedp.lock_gossip_matrix`: read-only, checked once; ``W.copy()`` gives a
        writeable one).

    Raises
    ------
    GraphError
        For a disconnected graph (with the component count and the ``largest_component``
        option) or a single node.
    ParameterError
        For an unknown scheme, a laziness outside [0, 1) or unusable weights.

    Warns
    -----
    UserWarning
        When the edges carry a ``"weight"`` attribute that ``weight=None`` leaves unused, or
        ``largest_component`` drops nodes.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.path_graph(3), scheme="metropolis")
    >>> W.toarray().round(4)
    array([[0.6667, 0.3333, 0.    ],
           [0.3333, 0.3333, 0.3333],
           [0.    , 0.3333, 0.6667]])
    >>> sparsedp.gossip_matrix(nx.path_graph(3), laziness=0.5).diagonal().round(4)
    array([0.8333, 0.6667, 0.8333])

    Edge weights with the random walk, ``W_ij = w_ij / s_i``:

    >>> G = nx.Graph()
    >>> G.add_edge(0, 1, weight=3.0)
    >>> G.add_edge(1, 2, weight=1.0)
    >>> sparsedp.gossip_matrix(G, scheme="row-normalised", weight="weight").toarray()
    array([[0.  , 1.  , 0.  ],
           [0.75, 0.  , 0.25],
           [0.  , 1.  , 0.  ]])
    >>> try:
    ...     sparsedp.gossip_matrix(nx.Graph([(0, 1), (2, 3)]))
    ... except sparsedp.GraphError as err:
    ...     print(err)  # doctest: +NORMALIZE_WHITESPACE
    graph is disconnected: 2 connected components (the largest has 2 of 4 nodes); keep only
    the largest with largest_component=True (sparsedp.as_graph, gossip_matrix) or
    --largest-component on the command line
    """
    if scheme not in SCHEMES:
        raise ParameterError(f"unknown gossip scheme {scheme!r}; valid schemes: "
                             + ", ".join(SCHEMES))
    if not 0.0 <= laziness < 1.0:
        raise ParameterError(f"laziness must be in [0, 1), got {laziness!r}")
    if weight is not None and scheme not in WEIGHTED_SCHEMES:
        raise ParameterError(f"scheme {scheme!r} does not use edge weights (its rows are a "
                             "function of the degrees); weighted schemes: "
                             + ", ".join(WEIGHTED_SCHEMES))
    if weight is None:
        _warn_if_weighted(graph)
        g = as_graph(graph, largest_component=largest_component)
    else:
        g, weighted = _weighted_adjacency(graph, weight, largest_component)
    if g.n < 2:
        raise GraphError("graph has a single node; gossip needs at least 2 nodes")
    require_connected(g)
    W = (_row_normalised(weighted, laziness) if weight is not None
         else _degree_weights(g, scheme, laziness))
    W = lock_gossip_matrix(W, copy=False)  # checked once, read-only: queries reuse the checks
    return array_view(W) if isinstance(graph, sp.sparray) else W


def _degree_weights(g, scheme: str, laziness: float) -> sp.csr_matrix:
    """The schemes whose weights are functions of the degrees (all but weighted rows)."""
    A = g.adjacency
    d = g.degrees.astype(np.float64)
    rows = np.repeat(np.arange(g.n), np.diff(A.indptr))
    cols = A.indices
    if scheme == "metropolis":
        off = 1.0 / (1.0 + np.maximum(d[rows], d[cols]))
        if (1.0 - laziness) * off.min(initial=1.0) >= GRID_MIN_WEIGHT:
            # on the grid: sums of multiples of 2^-52 below 1 are exact, so the diagonal
            # 1 - sum is exact and every stored row sums to 1 (symmetric: the same rounded
            # value on both sides of an edge)
            off = np.floor((1.0 - laziness) * off / WEIGHT_GRID) * WEIGHT_GRID
            diag = 1.0 - np.bincount(rows, weights=off, minlength=g.n)
            W = sp.csr_matrix((off, cols.copy(), A.indptr.copy()), shape=A.shape)
            return _with_diagonal(W, diag)
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
    return _with_diagonal(W, diag)


def _with_diagonal(W: sp.csr_matrix, diag: np.ndarray) -> sp.csr_matrix:
    """``W + diag(diag)`` in CSR, sorted, without explicit zeros (W has no diagonal)."""
    W = (W + sp.diags(diag, format="csr")).tocsr()
    W.eliminate_zeros()
    W.sort_indices()
    return W


def _warn_if_weighted(graph: Any) -> None:
    """The note of ``weight=None`` on a networkx graph whose edges carry ``"weight"``."""
    if isinstance(graph, nx.Graph):
        weighted = sum(1 for *_, w in graph.edges(data="weight") if w is not None)
        if weighted:
            warnings.warn(f"{weighted} edges carry a 'weight' attribute, not used: W is built "
                          "from the pattern (weight=None); pass weight='weight' with scheme "
                          "'row-normalised' to use them", UserWarning, stacklevel=3)


def _weighted_adjacency(graph: Any, weight: str,
                        largest_component: bool) -> tuple[Graph, sp.csr_matrix]:
    """The graph and its weighted adjacency ``A_w`` (rows in the graph's order): the
    ``weight`` attributes of an undirected networkx graph (each finite and > 0; an edge
    without one weighs 1), or the ``weight`` column of an edge-list file."""
    if isinstance(graph, (str, os.PathLike)) or hasattr(graph, "read"):
        return read_weighted_edges(graph, weight, largest_component=largest_component)
    if not isinstance(graph, nx.Graph):
        raise ParameterError(f"weight={weight!r} reads a networkx edge attribute or an "
                             f"edge-list column, but the graph is a {type(graph).__name__}: "
                             "build W from the weights directly")
    if graph.is_directed():
        raise ParameterError(f"weight={weight!r} needs an undirected graph; got a directed one")
    for u, v, w in graph.edges(data=weight, default=1.0):
        if not (isinstance(w, (int, float, np.integer, np.floating)) and np.isfinite(w)
                and w > 0):
            raise ParameterError(f"edge ({u!r}, {v!r}) has {weight}={w!r}; weights must be "
                                 "finite and > 0")
    weighted = sp.csr_matrix(nx.to_scipy_sparse_array(graph, nodelist=list(graph),
                                                      weight=weight, format="csr"),
                             dtype=np.float64)
    g, keep = largest_component_of(as_graph(graph)) if largest_component else (
        as_graph(graph), None)
    return g, weighted if keep is None else weighted[keep][:, keep].tocsr()


def _row_normalised(weighted: sp.csr_matrix, laziness: float) -> sp.csr_matrix:
    """``W = (1 - a) S^{-1} A_w + a I`` with ``S = diag(A_w 1)``."""
    strength = np.asarray(weighted.sum(axis=1)).ravel()
    W = sp.diags((1.0 - laziness) / strength, format="csr") @ weighted
    if laziness:
        W = (W + laziness * sp.identity(W.shape[0], format="csr")).tocsr()
    W.eliminate_zeros()
    W.sort_indices()
    return W
